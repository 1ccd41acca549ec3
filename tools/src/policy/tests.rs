//! Tests of the command policy: splitting, matching, loading rules files, read-only commands.

use std::path::Path;

use super::*;

const RULES: &str = r#"
[[rule]]
pattern = ["git", ["push", "fetch"]]
decision = "prompt"
justification = "talks to the remote"
match = ["git push origin main", "git fetch"]
not_match = ["git status"]

[[rule]]
pattern = ["git"]
decision = "allow"

[[rule]]
pattern = ["rm", "-rf"]
decision = "forbidden"
justification = "too broad"
"#;

fn policy() -> Policy {
    let mut policy = Policy::empty();
    policy
        .add_file(Path::new("/h/rules/base.toml"), RULES)
        .expect("rules load");
    policy
}

/// The decision, whether it parsed, and the commands, as one line.
fn check(cmd: &str, expected: &str) {
    let eval = policy().evaluate(cmd);
    let decision = eval.decision.map_or("none", Decision::as_str);
    let commands: Vec<String> = eval.commands.iter().map(|c| c.join(" ")).collect();
    let actual = format!(
        "{decision} parsed={} [{}]",
        eval.parsed,
        commands.join(" | ")
    );
    assert_eq!(actual, expected, "for {cmd:?}");
}

#[test]
fn strictest_match_wins() {
    check("git status", "allow parsed=true [git status]");
    check(
        "git push origin main",
        "prompt parsed=true [git push origin main]",
    );
    check("git fetch", "prompt parsed=true [git fetch]");
    check(
        "git status && rm -rf target",
        "forbidden parsed=true [git status | rm -rf target]",
    );
    check("ls -la", "none parsed=true [ls -la]");
    check(
        "/usr/bin/git push",
        "prompt parsed=true [/usr/bin/git push]",
    );
    check("rm -r -f x", "none parsed=true [rm -r -f x]");
}

#[test]
fn operators_and_quotes_split_into_plain_commands() {
    check(
        "git status; git log | head -n 3 || echo 'a b' && echo \"c \\\"d\\\"\"",
        "allow parsed=true [git status | git log | head -n 3 | echo a b | echo c \"d\"]",
    );
    check(
        "git status\ngit push # comment",
        "prompt parsed=true [git status | git push]",
    );
    check("git status;", "allow parsed=true [git status]");
    check("echo a\\ b", "none parsed=true [echo a b]");
}

#[test]
fn nested_shell_scripts_are_split() {
    check(
        "bash -lc \"git status && git push\"",
        "prompt parsed=true [git status | git push]",
    );
    check(
        "sh -c 'ls | bash -c \"rm -rf /\"'",
        "forbidden parsed=true [ls | rm -rf /]",
    );
    check(
        "/bin/bash -l -c 'git fetch'",
        "prompt parsed=true [git fetch]",
    );
    check("bash script.sh", "none parsed=true [bash script.sh]");
    // Options with an argument, and the script's own arguments, are followed too.
    check(
        "bash -o pipefail -c 'git push'",
        "prompt parsed=true [git push]",
    );
    check(
        "bash -e -c 'git push' name arg",
        "prompt parsed=true [git push]",
    );
    // A shell with -c in a form not followed is judged whole.
    check(
        "bash --weird -c 'git push'",
        "prompt parsed=false [bash --weird -c git push]",
    );
}

#[test]
fn strings_that_are_not_plain_are_judged_whole() {
    check("echo $(rm -rf x)", "forbidden parsed=false [echo rm -rf x]");
    check("cat a > b", "none parsed=false [cat a b]");
    check("echo `git push`", "prompt parsed=false [echo git push]");
    check("FOO=1 git push", "prompt parsed=false [FOO=1 git push]");
    check("echo \"$HOME\"", "none parsed=false [echo HOME]");
    check("ls *.rs", "none parsed=false [ls *.rs]");
    check("(git push)", "prompt parsed=false [git push]");
    check("sleep 1 &", "none parsed=false [sleep 1]");
    check(
        "while true; do git push; done",
        "prompt parsed=false [while true do git push done]",
    );
    check("git status &&", "allow parsed=false [git status]");
    check("cat <<EOF\nx\nEOF", "none parsed=false [cat EOF x EOF]");
    check(
        "echo 'unterminated",
        "none parsed=false [echo unterminated]",
    );
}

#[test]
fn wrappers_are_matched_at_every_position() {
    check("env git push", "prompt parsed=true [env git push]");
    check(
        "timeout 5 rm -rf x",
        "forbidden parsed=true [timeout 5 rm -rf x]",
    );
    check("echo git push", "none parsed=true [echo git push]");
}

#[test]
fn evaluation_carries_the_matched_rules() {
    let eval = policy().evaluate("git status && git push");
    let matched: Vec<(usize, usize)> = eval
        .matches
        .iter()
        .map(|m| (m.command, m.rule.index))
        .collect();
    assert_eq!(matched, vec![(0, 2), (1, 1), (1, 2)]);
    assert_eq!(eval.justification(), Some("talks to the remote"));
    assert_eq!(eval.matches[0].rule.source, Path::new("/h/rules/base.toml"));
}

fn load_error(text: &str) -> String {
    let mut policy = Policy::empty();
    match policy.add_file(Path::new("/w/.arbor/rules/git.toml"), text) {
        Ok(()) => panic!("expected an error for {text}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn examples_are_checked_at_load() {
    let text = r#"
[[rule]]
pattern = ["rm"]
decision = "forbidden"

[[rule]]
pattern = ["git"]
decision = "prompt"
not_match = ["git status"]
"#;
    assert_eq!(
        load_error(text),
        r#"rules file /w/.arbor/rules/git.toml: rule 2: example "git status" should not match but does"#
    );
    let text =
        "[[rule]]\npattern = [\"git\", \"push\"]\ndecision = \"allow\"\nmatch = [\"git pull\"]\n";
    assert_eq!(
        load_error(text),
        r#"rules file /w/.arbor/rules/git.toml: rule 1: example "git pull" should match but does not"#
    );
    // An example is split like any command: a match in a nested script counts.
    let mut policy = Policy::empty();
    let text = "[[rule]]\npattern = [\"git\", \"push\"]\ndecision = \"prompt\"\nmatch = [\"bash -lc 'cd x && git push'\"]\n";
    policy
        .add_file(Path::new("/w/r.toml"), text)
        .expect("nested example matches");
}

#[test]
fn bad_files_name_file_rule_and_field() {
    let cases = [
        (
            "[[rule]]\npattern = [\"git\"]\ndecision = \"maybe\"\n",
            r#"rule 1: field `decision`: expected one of allow, prompt, forbidden, got "maybe""#,
        ),
        (
            "[[rule]]\npattern = []\ndecision = \"allow\"\n",
            "rule 1: field `pattern`: must not be empty",
        ),
        (
            "[[rule]]\npattern = [\"git\", []]\ndecision = \"allow\"\n",
            "rule 1: field `pattern`: a list of alternatives must not be empty",
        ),
        (
            "[[rule]]\npattern = [\"git\"]\ndecision = \"allow\"\ncolour = 1\n",
            "rule 1: unknown field `colour`, expected one of pattern, decision, justification, match, not_match",
        ),
        (
            "[[rule]]\ndecision = \"allow\"\n",
            "rule 1: missing field `pattern`",
        ),
        (
            "[[rules]]\npattern = [\"git\"]\n",
            "unknown field `rules`, expected `rule`",
        ),
        (
            "[[rule]]\npattern = [\"git\"]\ndecision = \"allow\"\nmatch = \"git\"\n",
            "rule 1: field `match`: expected a list of strings",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            load_error(text),
            format!("rules file /w/.arbor/rules/git.toml: {expected}")
        );
    }
    assert!(
        load_error("[[rule]\n").starts_with("rules file /w/.arbor/rules/git.toml: invalid toml: ")
    );
}

#[test]
fn home_and_workspace_rule_files_are_both_loaded_in_order() {
    let home = tempfile::tempdir().expect("tempdir");
    let workspace = tempfile::tempdir().expect("tempdir");
    let home_rules = home.path().join("rules");
    let ws_rules = workspace.path().join(".arbor").join("rules");
    std::fs::create_dir_all(&home_rules).expect("mkdir");
    std::fs::create_dir_all(&ws_rules).expect("mkdir");
    let rule = |word: &str, decision: &str| {
        format!("[[rule]]\npattern = [\"{word}\"]\ndecision = \"{decision}\"\n")
    };
    std::fs::write(home_rules.join("b.toml"), rule("b", "allow")).expect("write");
    std::fs::write(home_rules.join("a.toml"), rule("a", "prompt")).expect("write");
    std::fs::write(home_rules.join("notes.txt"), "not a rules file").expect("write");
    std::fs::write(ws_rules.join("c.toml"), rule("b", "forbidden")).expect("write");

    let policy = Policy::load(home.path(), workspace.path()).expect("load");
    let order: Vec<String> = policy
        .rules()
        .iter()
        .map(|r| {
            let file = r
                .source
                .file_name()
                .map(|f| f.to_string_lossy().into_owned());
            format!("{}:{}", file.unwrap_or_default(), r.decision.as_str())
        })
        .collect();
    assert_eq!(order, ["a.toml:prompt", "b.toml:allow", "c.toml:forbidden"]);
    assert_eq!(policy.evaluate("b x").decision, Some(Decision::Forbidden));

    // Missing directories are fine.
    let empty = tempfile::tempdir().expect("tempdir");
    let none = Policy::load(&empty.path().join("nope"), empty.path()).expect("load");
    assert!(none.rules().is_empty());

    // A bad workspace file fails the whole load and names the file.
    std::fs::write(
        ws_rules.join("d.toml"),
        "[[rule]]\npattern = 1\ndecision = \"allow\"\n",
    )
    .expect("write");
    let err = Policy::load(home.path(), workspace.path()).expect_err("bad file");
    assert_eq!(
        err.to_string(),
        format!(
            "rules file {}: rule 1: field `pattern`: expected a list of words",
            ws_rules.join("d.toml").display()
        )
    );
}

#[test]
fn an_untrusted_workspace_may_only_make_rules_stricter() {
    let home = tempfile::tempdir().expect("tempdir");
    let workspace = tempfile::tempdir().expect("tempdir");
    let ws_rules = workspace.path().join(".arbor").join("rules");
    std::fs::create_dir_all(&ws_rules).expect("mkdir");
    let file = ws_rules.join("mine.toml");
    std::fs::write(
        &file,
        "[[rule]]\npattern = [\"curl\"]\ndecision = \"allow\"\n\n\
         [[rule]]\npattern = [\"make\"]\ndecision = \"allow\"\n\n\
         [[rule]]\npattern = [\"git\", \"push\"]\ndecision = \"forbidden\"\n",
    )
    .expect("write");
    let untrusted = Policy::load(home.path(), workspace.path()).expect("load");
    assert_eq!(untrusted.evaluate("curl x").decision, None);
    assert_eq!(
        untrusted.evaluate("git push").decision,
        Some(Decision::Forbidden)
    );
    assert_eq!(
        untrusted.notices(),
        [format!(
            "notice: ignoring 2 allow rules in {}: the workspace is not trusted, so its rules \
             may only make the policy stricter (run `arbor trust {}` to trust it)",
            file.display(),
            workspace.path().display()
        )]
    );
    assert!(trust_workspace(home.path(), workspace.path()).expect("trust"));
    let trusted = Policy::load(home.path(), workspace.path()).expect("load");
    assert_eq!(trusted.evaluate("curl x").decision, Some(Decision::Allow));
    assert!(trusted.notices().is_empty());
}

fn read_only(cmd: &str) -> bool {
    is_known_read_only(&Policy::empty().evaluate(cmd))
}

#[test]
fn known_read_only_commands() {
    for cmd in [
        "ls -la",
        "cat a.txt | head -n 5 | wc -l",
        "grep -rn foo src && rg bar",
        "find . -name x.rs -type f",
        "pwd; echo hi; true",
        "git status",
        "git log --oneline -n 5",
        "git diff HEAD~1",
        "git -C sub show HEAD",
        "git branch",
        "git branch -a",
        "git branch --list 'feat*'",
        "sed -n 1,20p src/lib.rs",
        "sed -n '$p' a",
        "bash -lc 'cd src && ls'",
        "stat a; file b; tree",
        "tail -n 3 log.txt",
        "/usr/bin/git status",
        "/bin/ls -la",
        "sort --check a",
        "git log --exclude=refs/x --all",
    ] {
        assert!(read_only(cmd), "{cmd} should be read-only");
    }
    for cmd in [
        "rm x",
        "ls > out",
        "cat $(echo a)",
        "find . -delete",
        "find . -exec rm {} ;",
        "find . -fprint out",
        "sed -i s/a/b/ f",
        "sed -n 'w out' f",
        "sed s/a/b/ f",
        "git push",
        "git branch new-feature",
        "git branch -D main",
        "git diff --output=x",
        "git -c core.pager=evil log",
        "sort -o out in",
        "rg --pre ./evil x",
        "date -s 2020-01-01",
        "ls && touch x",
        "tree -o out",
        "",
        "ls *.rs",
        // GNU tools and git take any unambiguous prefix of a long option.
        "sort --compress-prog=sh a",
        "sort --compress-program sh a",
        "sort --out=F a",
        "sort --outp F a",
        "sort -uo F a",
        "git diff --out=x",
        "git log --ext-d",
        "git -C sub show --outp=x",
        "date --se 2020-01-01",
        "file --comp x",
        "rg --pr ./evil x",
        // A path outside the system's bin dirs may be anything.
        "./cat a",
        "/tmp/x/ls",
        "bin/git status",
        "/usr/bin/x/../../tmp/ls",
    ] {
        assert!(!read_only(cmd), "{cmd} should not be read-only");
    }
}

#[test]
fn canonical_forms() {
    assert_eq!(canonical("git   status"), "git status");
    assert_eq!(canonical("'git' \"status\""), "git status");
    assert_eq!(canonical("echo 'a b'  &&ls;pwd"), "echo 'a b' && ls; pwd");
    assert_eq!(canonical("echo \"it's\""), r"echo 'it'\''s'");
    assert_eq!(
        canonical("bash -lc \"git  status &&  git push\""),
        "bash -lc 'git status && git push'"
    );
    assert_eq!(canonical("  cat a > b  "), "cat a > b");
    assert_ne!(canonical("rm 'a b'"), canonical("rm a b"));
}
