//! Tests of `apply_patch`: one `check` helper over a before tree, a patch and an after tree.

use std::fs;
use std::path::Path;

use super::*;

/// Every file under `root` as (relative path, contents), sorted.
fn tree(root: &Path) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                let text = fs::read_to_string(&path).expect("read file");
                out.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn owned(files: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<_> = files
        .iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .collect();
    out.sort();
    out
}

fn setup(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let full = dir.path().join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(full, text).expect("write");
    }
    dir
}

/// Applies `patch` to `before`; the files must become `after` and the output `summary`.
fn check(before: &[(&str, &str)], patch: &str, after: &[(&str, &str)], summary: &str) {
    let dir = setup(before);
    let result = apply_patch(dir.path(), patch).expect("patch applies");
    assert_eq!(result.to_model_output(), summary);
    assert_eq!(tree(dir.path()), owned(after));
}

/// Applying `patch` to `before` must fail with `message` and leave every file as it was.
fn check_err(before: &[(&str, &str)], patch: &str, message: &str) {
    let dir = setup(before);
    let err = apply_patch(dir.path(), patch).expect_err("patch fails");
    assert_eq!(err.to_string(), message);
    assert_eq!(tree(dir.path()), owned(before));
}

fn parse_err(patch: &str) -> String {
    let text = parse_patch(patch).expect_err("malformed").to_string();
    let reason = text.strip_prefix("apply_patch: invalid patch: ");
    reason.expect("a parse error names the tool").to_string()
}

#[test]
fn adds_a_file_creating_its_directories() {
    check(
        &[],
        "*** Begin Patch\n*** Add File: a/b/new.txt\n+one\n+\n+two\n*** End Patch\n",
        &[("a/b/new.txt", "one\n\ntwo\n")],
        "Success. Updated the following files:\nA a/b/new.txt",
    );
}

#[test]
fn deletes_a_file() {
    check(
        &[("old.txt", "x\n"), ("keep.txt", "k\n")],
        "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
        &[("keep.txt", "k\n")],
        "Success. Updated the following files:\nD old.txt",
    );
    check_err(
        &[],
        "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
        "apply_patch: cannot delete gone.txt: no such file",
    );
}

#[test]
fn updates_with_several_hunks() {
    check(
        &[(
            "src/a.rs",
            "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n\nfn c() {\n    3\n}\n",
        )],
        "*** Begin Patch
*** Update File: src/a.rs
@@
 fn a() {
-    1
+    10
 }
@@
 fn c() {
-    3
+    30
+    31
 }
*** End Patch",
        &[(
            "src/a.rs",
            "fn a() {\n    10\n}\n\nfn b() {\n    2\n}\n\nfn c() {\n    30\n    31\n}\n",
        )],
        "Success. Updated the following files:\nM src/a.rs",
    );
}

#[test]
fn moves_a_file_while_updating_it() {
    check(
        &[("old/name.txt", "a\nb\n")],
        "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n a\n-b\n+c\n*** End Patch",
        &[("new/name.txt", "a\nc\n")],
        "Success. Updated the following files:\nM new/name.txt",
    );
    check(
        &[("x.txt", "same\n")],
        "*** Begin Patch\n*** Update File: x.txt\n*** Move to: y.txt\n*** End Patch",
        &[("y.txt", "same\n")],
        "Success. Updated the following files:\nM y.txt",
    );
}

#[test]
fn the_summary_lists_added_then_modified_then_deleted() {
    check(
        &[("old.txt", "o\n"), ("src/a.rs", "x\n")],
        "*** Begin Patch
*** Delete File: old.txt
*** Update File: src/a.rs
-x
+y
*** Add File: new.txt
+n
*** End Patch",
        &[("new.txt", "n\n"), ("src/a.rs", "y\n")],
        "Success. Updated the following files:\nA new.txt\nM src/a.rs\nD old.txt",
    );
}

#[test]
fn an_at_at_line_seeks_to_its_context_first() {
    let before = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
    check(
        &[("f.rs", before)],
        "*** Begin Patch\n*** Update File: f.rs\n@@ fn b() {\n-    x();\n+    y();\n*** End Patch",
        &[("f.rs", "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n")],
        "Success. Updated the following files:\nM f.rs",
    );
    // With only an anchor and added lines, the lines go right after the anchor.
    check(
        &[("f.rs", before)],
        "*** Begin Patch\n*** Update File: f.rs\n@@ fn b() {\n+    first();\n*** End Patch",
        &[(
            "f.rs",
            "fn a() {\n    x();\n}\nfn b() {\n    first();\n    x();\n}\n",
        )],
        "Success. Updated the following files:\nM f.rs",
    );
    check_err(
        &[("f.rs", before)],
        "*** Begin Patch\n*** Update File: f.rs\n@@ fn z() {\n-    x();\n*** End Patch",
        "apply_patch: could not find the line named by @@ in f.rs:\nfn z() {",
    );
}

#[test]
fn context_matches_exactly_first() {
    // The exact copy wins over an earlier trailing-whitespace variant.
    check(
        &[("f.txt", "a  \nb\na\nb\n")],
        "*** Begin Patch\n*** Update File: f.txt\n a\n-b\n+B\n*** End Patch",
        &[("f.txt", "a  \nb\na\nB\n")],
        "Success. Updated the following files:\nM f.txt",
    );
}

#[test]
fn context_matches_ignoring_trailing_whitespace() {
    check(
        &[("f.txt", "let x = 1;   \nlet y = 2;\t\n")],
        "*** Begin Patch\n*** Update File: f.txt\n let x = 1;\n-let y = 2;\n+let y = 3;\n*** End Patch",
        &[("f.txt", "let x = 1;   \nlet y = 3;\n")],
        "Success. Updated the following files:\nM f.txt",
    );
}

#[test]
fn context_matches_ignoring_surrounding_whitespace() {
    check(
        &[("f.py", "def f():\n        return 1\n")],
        "*** Begin Patch\n*** Update File: f.py\n def f():\n-    return 1\n+    return 2\n*** End Patch",
        &[("f.py", "def f():\n    return 2\n")],
        "Success. Updated the following files:\nM f.py",
    );
}

#[test]
fn context_matches_with_unicode_punctuation_normalised() {
    check(
        &[("f.md", "He said “hello” — twice\u{00A0}today.\nend ‘q’\n")],
        "*** Begin Patch\n*** Update File: f.md\n-He said \"hello\" - twice today.\n+He said hi.\n end 'q'\n*** End Patch",
        // The context line keeps the file's own punctuation.
        &[("f.md", "He said hi.\nend ‘q’\n")],
        "Success. Updated the following files:\nM f.md",
    );
}

#[test]
fn end_of_file_marker_anchors_the_hunk_at_the_end() {
    check(
        &[("f.txt", "x\ny\nmiddle\nx\ny\n")],
        "*** Begin Patch\n*** Update File: f.txt\n x\n-y\n+z\n*** End of File\n*** End Patch",
        &[("f.txt", "x\ny\nmiddle\nx\nz\n")],
        "Success. Updated the following files:\nM f.txt",
    );
}

#[test]
fn a_failing_second_file_leaves_the_first_untouched() {
    check_err(
        &[("a.txt", "one\n"), ("b.txt", "two\n")],
        "*** Begin Patch
*** Add File: new.txt
+new
*** Update File: a.txt
-one
+ONE
*** Update File: b.txt
 missing
-two
+TWO
*** End Patch",
        "apply_patch: could not find the context in b.txt:\nmissing\ntwo",
    );
}

#[test]
fn a_failing_later_hunk_leaves_the_file_untouched() {
    check_err(
        &[("a.txt", "1\n2\n3\n")],
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+one\n@@\n-9\n+nine\n*** End Patch",
        "apply_patch: could not find the context in a.txt:\n9",
    );
}

#[test]
fn paths_must_stay_inside_the_cwd() {
    let add = |path: &str| format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch");
    check_err(
        &[],
        &add("../evil.txt"),
        "apply_patch: path escapes the working directory: ../evil.txt",
    );
    check_err(
        &[],
        &add("a/../../evil.txt"),
        "apply_patch: path escapes the working directory: a/../../evil.txt",
    );
    check_err(
        &[],
        &add("/tmp/evil.txt"),
        "apply_patch: absolute paths are not allowed: /tmp/evil.txt",
    );
    check_err(&[], &add("./."), "apply_patch: not a file path: './.'");
    check(
        &[],
        &add("a/../ok.txt"),
        &[("ok.txt", "x\n")],
        "Success. Updated the following files:\nA ok.txt",
    );
    check_err(
        &[("a.txt", "a\n")],
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../b.txt\n*** End Patch",
        "apply_patch: path escapes the working directory: ../b.txt",
    );
}

#[test]
fn malformed_patches_name_the_line_and_what_was_expected() {
    assert_eq!(
        parse_err("*** Add File: a\n+x\n*** End Patch"),
        "line 1: expected '*** Begin Patch'"
    );
    assert_eq!(parse_err(""), "line 1: expected '*** Begin Patch'");
    assert_eq!(
        parse_err("*** Begin Patch\n*** Add File: a\n+x\n"),
        "line 3: expected '*** End Patch' as the last line"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a.rs\n@@\n foo\nbar\n*** End Patch"),
        "line 5: a hunk line of a.rs must start with ' ', '-' or '+' (or be '@@' or \
         '*** End of File'), found 'bar'"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a.rs\n*** End Patch"),
        "line 2: update of a.rs has no hunks"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a.rs\n@@\n@@\n-x\n*** End Patch"),
        "line 3: empty hunk in a.rs"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Add File: a.txt\n+x\ny\n*** End Patch"),
        "line 4: every line of added file a.txt must start with '+', found 'y'"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Rename File: a\n*** End Patch"),
        "line 2: expected '*** Add File: <path>', '*** Update File: <path>' or \
         '*** Delete File: <path>', found '*** Rename File: a'"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Delete File:   \n*** End Patch"),
        "line 2: '*** Delete File:' needs a path"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n\n*** End Patch"),
        "line 3: the patch changes no files"
    );
    let dir = setup(&[]);
    let err = apply_patch(dir.path(), "nonsense").expect_err("malformed");
    assert_eq!(
        err.to_string(),
        "apply_patch: invalid patch: line 1: expected '*** Begin Patch'"
    );
}

#[test]
fn parses_into_operations_and_hunks() {
    let patch = parse_patch(
        "\n<<'EOF'\n*** Begin Patch
*** Update File: a.rs
-old
+new

 kept
@@ -10,3 +10,3 @@
 x
@@ fn f() {
+y
*** End of File

*** Delete File: b.rs
*** End Patch\nEOF\n",
    )
    .expect("parses");
    let context = |text: &str| HunkLine::Context(text.to_string());
    assert_eq!(
        patch.ops,
        vec![
            FileOp::Update {
                path: "a.rs".to_string(),
                move_to: None,
                hunks: vec![
                    Hunk {
                        context: None,
                        lines: vec![
                            HunkLine::Remove("old".to_string()),
                            HunkLine::Add("new".to_string()),
                            context(""),
                            context("kept"),
                        ],
                        end_of_file: false,
                    },
                    Hunk {
                        context: None,
                        lines: vec![context("x")],
                        end_of_file: false,
                    },
                    Hunk {
                        context: Some("fn f() {".to_string()),
                        lines: vec![HunkLine::Add("y".to_string())],
                        end_of_file: true,
                    },
                ],
            },
            FileOp::Delete {
                path: "b.rs".to_string()
            },
        ]
    );
}

#[test]
fn a_file_updated_twice_sees_its_first_update() {
    check(
        &[("a.txt", "1\n2\n")],
        "*** Begin Patch
*** Update File: a.txt
-1
+one
*** Update File: a.txt
 one
-2
+two
*** End Patch",
        &[("a.txt", "one\ntwo\n")],
        "Success. Updated the following files:\nM a.txt",
    );
}

#[test]
fn line_endings_and_final_newline() {
    check(
        &[("w.txt", "a\r\nb\r\n")],
        "*** Begin Patch\n*** Update File: w.txt\n a\n-b\n+c\n*** End Patch",
        &[("w.txt", "a\r\nc\r\n")],
        "Success. Updated the following files:\nM w.txt",
    );
    // A trailing blank context line the file lacks is dropped.
    check(
        &[("t.txt", "a\nb\n")],
        "*** Begin Patch\n*** Update File: t.txt\n a\n-b\n+c\n \n*** End Patch",
        &[("t.txt", "a\nc\n")],
        "Success. Updated the following files:\nM t.txt",
    );
    check(
        &[("n.txt", "a\nb")],
        "*** Begin Patch\n*** Update File: n.txt\n-b\n+c\n*** End Patch",
        &[("n.txt", "a\nc\n")],
        "Success. Updated the following files:\nM n.txt",
    );
}

#[test]
fn arguments_and_spec() {
    let args = ApplyPatchArgs::parse(r#"{"patch": "x"}"#).expect("args");
    assert_eq!(args.patch, "x");
    let err = ApplyPatchArgs::parse(r#"{"patch": "x", "path": "y"}"#).expect_err("unknown");
    assert!(
        err.to_string()
            .starts_with("apply_patch: invalid arguments: unknown field `path`"),
        "{err}"
    );
    let spec = apply_patch_tool_spec();
    assert_eq!(spec.name, "apply_patch");
    assert_eq!(spec.parameters["additionalProperties"], false);
    assert_eq!(spec.parameters["required"], serde_json::json!(["patch"]));
    assert!(spec.description.contains("*** Begin Patch"));
}
