//! Merges with the real git: clean, disjoint, overlapping, deleted, in the way, strategies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::testing::{git, repo_with, sh_git, write};
use crate::{Author, NewWorktree, commit_work, create, populate};

const FILE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";

/// A worktree of `top` for `name`, with its files.
fn worktree(dir: &Path, top: &Path, name: &str) -> (PathBuf, String) {
    let repo = Repo::discover(&git(), top).expect("runs").expect("repo");
    let dest = dir.join("wt").join(name);
    let branch = format!("arbor/s/{name}");
    let new = NewWorktree {
        source: &repo,
        dest: &dest,
        branch: &branch,
        author: &Author::arbor("/root"),
        message: "m",
    };
    let made = create(&git(), &new).expect("create");
    populate(&git(), &made.dest).expect("populate");
    (made.dest, made.base)
}

/// Commits the worktree's work and merges it into `top`.
fn merge_into(top: &Path, wt: &Path, base: &str, strategy: Strategy) -> MergeReport {
    let label = format!("/root/{}", wt.file_name().expect("name").to_string_lossy());
    let (commit, _) = commit_work(&git(), wt, &Author::arbor(&label), "work").expect("commit");
    let spec = MergeSpec {
        worktree: wt,
        commit: &commit,
        from: base,
        prefix: "",
        into: top,
        strategy,
        ours_label: "/root",
        theirs_label: &label,
    };
    merge(&git(), &spec).expect("merge runs")
}

/// Every file under `dir` but `.git`, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("list") {
            let entry = entry.expect("entry");
            if entry.file_name() == ".git" {
                continue;
            }
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("inside").to_string_lossy();
                out.insert(rel.into_owned(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

#[test]
fn disjoint_changes_merge_and_an_overlapping_one_changes_nothing() {
    let (dir, top) = repo_with(&[("f.txt", FILE)]);
    let (a, base_a) = worktree(dir.path(), &top, "a");
    let (b, base_b) = worktree(dir.path(), &top, "b");
    let (c, base_c) = worktree(dir.path(), &top, "c");
    write(&a, &[("f.txt", &FILE.replace("two", "TWO by a"))]);
    write(&b, &[("f.txt", &FILE.replace("eight", "EIGHT by b"))]);
    write(&c, &[("f.txt", &FILE.replace("two", "2 by c"))]);

    let report = merge_into(&top, &a, &base_a, Strategy::Merge);
    assert_eq!(report.merged, ["f.txt"]);
    let report = merge_into(&top, &b, &base_b, Strategy::Merge);
    assert_eq!(report.merged, ["f.txt"]);
    let both = read(&top.join("f.txt"));
    assert!(
        both.contains("TWO by a") && both.contains("EIGHT by b"),
        "{both}"
    );

    let before = files(&top);
    let report = merge_into(&top, &c, &base_c, Strategy::Merge);
    assert!(report.merged.is_empty());
    assert_eq!(report.conflicts.len(), 1);
    let conflict = &report.conflicts[0];
    assert_eq!(conflict.path, "f.txt");
    assert_eq!(conflict.hunks.len(), 1);
    let hunk = &conflict.hunks[0];
    assert!(
        hunk.starts_with("<<<<<<< /root\n")
            && hunk.contains("TWO by a")
            && hunk.contains("2 by c")
            && hunk.ends_with(">>>>>>> /root/c\n"),
        "{hunk}"
    );
    assert_eq!(
        files(&top),
        before,
        "a conflict must leave the checkout as it was"
    );
}

#[test]
fn new_deleted_and_executable_files_come_over_and_the_index_stays() {
    let (dir, top) = repo_with(&[("keep.txt", "k\n"), ("gone.txt", "g\n"), ("run.sh", "x\n")]);
    let (wt, base) = worktree(dir.path(), &top, "w");
    write(&wt, &[("new/deep/n.txt", "n\n"), ("run.sh", "y\n")]);
    std::fs::remove_file(wt.join("gone.txt")).expect("rm");
    set_mode(&wt.join("run.sh"), 0o755);
    let report = merge_into(&top, &wt, &base, Strategy::Merge);
    assert_eq!(report.merged, ["gone.txt", "new/deep/n.txt", "run.sh"]);
    assert!(!top.join("gone.txt").exists());
    assert_eq!(read(&top.join("new/deep/n.txt")), "n\n");
    assert_eq!(read(&top.join("run.sh")), "y\n");
    assert_ne!(
        mode(&top.join("run.sh")) & 0o111,
        0,
        "the executable bit came over"
    );
    assert_eq!(sh_git(&top, &["diff", "--cached", "--name-only"]), "");
    // Nothing left behind by the writes.
    assert!(files(&top).keys().all(|name| !name.contains("arbor-merge")));
}

#[test]
fn a_deletion_against_a_change_is_a_conflict_unless_a_strategy_decides() {
    let (dir, top) = repo_with(&[("f.txt", FILE)]);
    let (wt, base) = worktree(dir.path(), &top, "w");
    std::fs::remove_file(wt.join("f.txt")).expect("rm");
    write(&top, &[("f.txt", "parent's own\n")]);
    let report = merge_into(&top, &wt, &base, Strategy::Merge);
    assert_eq!(
        report.conflicts,
        [Conflict {
            path: "f.txt".into(),
            hunks: vec!["/root/w deleted this file, which /root's checkout changed".into()],
        }]
    );
    assert_eq!(read(&top.join("f.txt")), "parent's own\n");
    let report = merge_into(&top, &wt, &base, Strategy::Ours);
    assert!(report.merged.is_empty() && report.conflicts.is_empty());
    let report = merge_into(&top, &wt, &base, Strategy::Theirs);
    assert_eq!(report.merged, ["f.txt"]);
    assert!(!top.join("f.txt").exists());
}

#[test]
fn overlapping_hunks_follow_the_strategy_and_the_rest_merges() {
    let (dir, top) = repo_with(&[("f.txt", FILE)]);
    let (wt, base) = worktree(dir.path(), &top, "w");
    let child = FILE.replace("five", "FIVE (w)").replace("one", "ONE (w)");
    let parent = FILE
        .replace("five", "five (root)")
        .replace("nine", "NINE (root)");
    write(&wt, &[("f.txt", &child)]);
    write(&top, &[("f.txt", &parent)]);
    let theirs = merge_into(&top, &wt, &base, Strategy::Theirs);
    assert_eq!(theirs.merged, ["f.txt"]);
    let text = read(&top.join("f.txt"));
    assert_eq!(
        text,
        FILE.replace("five", "FIVE (w)")
            .replace("one", "ONE (w)")
            .replace("nine", "NINE (root)")
    );
    write(&top, &[("f.txt", &parent)]);
    let ours = merge_into(&top, &wt, &base, Strategy::Ours);
    assert_eq!(ours.merged, ["f.txt"]);
    assert_eq!(read(&top.join("f.txt")), parent.replace("one", "ONE (w)"));
    write(&top, &[("f.txt", &parent)]);
    let union = merge_into(&top, &wt, &base, Strategy::Union);
    assert_eq!(union.merged, ["f.txt"]);
    let text = read(&top.join("f.txt"));
    assert!(text.contains("five (root)\nFIVE (w)\n"), "{text}");
}

#[test]
fn an_untracked_file_in_the_way_is_a_conflict() {
    let (dir, top) = repo_with(&[(".gitignore", "local/\n"), ("a.txt", "a\n")]);
    let (wt, base) = worktree(dir.path(), &top, "w");
    write(&wt, &[(".gitignore", ""), ("local/x.txt", "from w\n")]);
    write(&top, &[("local/x.txt", "the user's\n")]);
    let report = merge_into(&top, &wt, &base, Strategy::Merge);
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(report.conflicts[0].path, "local/x.txt");
    assert_eq!(read(&top.join("local/x.txt")), "the user's\n");
    assert_eq!(read(&top.join(".gitignore")), "local/\n");
}

#[test]
fn another_repository_is_refused_and_changes_outside_the_prefix_stay_out() {
    let (dir, top) = repo_with(&[("sub/a.txt", "a\n"), ("b.txt", "b\n")]);
    let (wt, base) = worktree(dir.path(), &top, "w");
    write(&wt, &[("sub/a.txt", "A\n"), ("b.txt", "B\n")]);
    let (commit, _) = commit_work(&git(), &wt, &Author::arbor("/root/w"), "work").expect("commit");
    let spec = MergeSpec {
        worktree: &wt,
        commit: &commit,
        from: &base,
        prefix: "sub",
        into: &top,
        strategy: Strategy::Merge,
        ours_label: "/root",
        theirs_label: "/root/w",
    };
    let report = merge(&git(), &spec).expect("merge");
    assert_eq!(report.merged, ["sub/a.txt"]);
    assert_eq!(read(&top.join("b.txt")), "b\n");
    let (_other_dir, other) = repo_with(&[("x", "x")]);
    let err = merge(
        &git(),
        &MergeSpec {
            into: &other,
            ..spec
        },
    )
    .expect_err("other repo");
    assert!(
        err.to_string()
            .contains("is not a checkout of the repository"),
        "{err}"
    );
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("meta").permissions().mode()
}
