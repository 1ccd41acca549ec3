//! What a worktree changed: a [`ChangeSummary`] against the commit it started from (and what
//! is still unmerged since its last merge), or the changes as a unified diff bounded in size.

use std::ffi::OsStr;
use std::path::{Component, Path};

use arbor_protocol::ChangeSummary;

use crate::snapshot::{snapshot, tree_of};
use crate::{Git, Repo, WorktreeError};

/// Pathspecs are literal paths here, never patterns.
const LITERAL: (&str, &str) = ("GIT_LITERAL_PATHSPECS", "1");

/// A worktree's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkStatus {
    /// Its changes since it started (within its prefix).
    pub summary: ChangeSummary,
    /// The tree it holds now.
    pub tree: String,
    /// Files changed since its last merge (since it started, when it never merged).
    pub unmerged: u64,
}

/// The state of the worktree at `dir`, which started at `base` and whose changes up to
/// `merged` (a commit) were merged back; only paths under `prefix` count.
pub fn status(
    git: &Git,
    dir: &Path,
    base: &str,
    merged: Option<&str>,
    prefix: &str,
) -> Result<WorkStatus, WorktreeError> {
    let repo = Repo::discover(git, dir)?
        .ok_or_else(|| WorktreeError::NotARepository(dir.to_path_buf()))?;
    let tree = snapshot(git, &repo)?;
    let top = &repo.toplevel;
    let mut summary = numstat(git, top, base, &tree, prefix)?;
    let unmerged = match merged {
        None => summary.files,
        Some(merged) => count_changed(git, top, merged, &tree, prefix)?,
    };
    let tip_tree = match repo.head(git)? {
        Some(head) => Some(tree_of(git, top, &head)?),
        None => None,
    };
    summary.committed = summary.files > 0 && tip_tree.as_deref() == Some(tree.as_str());
    summary.merged = summary.files > 0 && unmerged == 0;
    Ok(WorkStatus {
        summary,
        tree,
        unmerged,
    })
}

/// Files, lines added and lines removed between two trees, under `prefix`.
fn numstat(
    git: &Git,
    top: &Path,
    from: &str,
    to: &str,
    prefix: &str,
) -> Result<ChangeSummary, WorktreeError> {
    let mut args = vec![
        "diff-tree",
        "-r",
        "-z",
        "--numstat",
        "--no-renames",
        from,
        to,
    ];
    push_pathspec(&mut args, prefix);
    let out = git.run_env(top, &args, &[literal()])?;
    let mut summary = ChangeSummary::default();
    // `-z --numstat`: `added<TAB>removed<TAB>path<NUL>`, `-` for binary files.
    for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let mut fields = text.splitn(3, '\t');
        let added = fields.next().and_then(|n| n.parse::<u64>().ok());
        let removed = fields.next().and_then(|n| n.parse::<u64>().ok());
        summary.files += 1;
        summary.added += added.unwrap_or(0);
        summary.removed += removed.unwrap_or(0);
    }
    Ok(summary)
}

/// How many files differ between two trees (commits or trees), under `prefix`.
fn count_changed(
    git: &Git,
    top: &Path,
    from: &str,
    to: &str,
    prefix: &str,
) -> Result<u64, WorktreeError> {
    Ok(changed(git, top, from, to, prefix)?.len() as u64)
}

/// The files that differ between two trees, under `prefix`, relative to the top.
fn changed(
    git: &Git,
    top: &Path,
    from: &str,
    to: &str,
    prefix: &str,
) -> Result<Vec<String>, WorktreeError> {
    let mut args = vec![
        "diff-tree",
        "-r",
        "-z",
        "--name-only",
        "--no-renames",
        from,
        to,
    ];
    push_pathspec(&mut args, prefix);
    let out = git.run_env(top, &args, &[literal()])?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect())
}

/// The files the worktree at `dir` changed since `from` (a commit), under `prefix` and relative
/// to it (the paths a merge of it writes), with the tree it holds now.
pub fn changed_paths(
    git: &Git,
    dir: &Path,
    from: &str,
    prefix: &str,
) -> Result<(String, Vec<String>), WorktreeError> {
    let repo = Repo::discover(git, dir)?
        .ok_or_else(|| WorktreeError::NotARepository(dir.to_path_buf()))?;
    let tree = snapshot(git, &repo)?;
    let under = prefix.trim_end_matches('/');
    let paths = changed(git, &repo.toplevel, from, &tree, prefix)?
        .into_iter()
        .map(|path| match under {
            "" => path,
            under => path
                .strip_prefix(under)
                .and_then(|rest| rest.strip_prefix('/'))
                .map_or(path.clone(), str::to_string),
        })
        .collect();
    Ok((tree, paths))
}

fn push_pathspec<'a>(args: &mut Vec<&'a str>, spec: &'a str) {
    if !spec.is_empty() {
        args.extend(["--", spec]);
    }
}

fn literal() -> (&'static str, &'static OsStr) {
    (LITERAL.0, OsStr::new(LITERAL.1))
}

/// The unified diff of the worktree at `dir` since `from` (a commit), under `prefix` and, when
/// given, under `path` (relative to the prefix). At most `max_bytes`: a longer diff keeps its
/// head and tail with a marker saying how much was left out between them.
pub fn diff(
    git: &Git,
    dir: &Path,
    from: &str,
    prefix: &str,
    path: Option<&str>,
    max_bytes: usize,
) -> Result<String, WorktreeError> {
    let spec = pathspec(prefix, path)?;
    let repo = Repo::discover(git, dir)?
        .ok_or_else(|| WorktreeError::NotARepository(dir.to_path_buf()))?;
    let tree = snapshot(git, &repo)?;
    let mut args = vec![
        "-c",
        "core.quotePath=false",
        "diff-tree",
        "-r",
        "-p",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        from,
        &tree,
    ];
    push_pathspec(&mut args, &spec);
    let (head, tail, total) = git.run_bounded(&repo.toplevel, &args, max_bytes, &[literal()])?;
    let mut text = String::from_utf8_lossy(&head).into_owned();
    let kept = (head.len() + tail.len()) as u64;
    if total > kept {
        text.push_str(&format!(
            "\n… [{} bytes of the diff left out] …\n",
            total - kept
        ));
    }
    text.push_str(&String::from_utf8_lossy(&tail));
    Ok(text)
}

/// `path` (relative to `prefix`) as one literal pathspec from the top of the worktree. A path
/// must stay inside: absolute paths and `..` are refused.
fn pathspec(prefix: &str, path: Option<&str>) -> Result<String, WorktreeError> {
    let Some(path) = path.map(str::trim).filter(|p| !p.is_empty() && *p != ".") else {
        return Ok(prefix.to_string());
    };
    let parsed = Path::new(path);
    if parsed
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(WorktreeError::Refused(format!(
            "path `{path}` must be relative and stay inside the worktree"
        )));
    }
    let path = path.trim_end_matches('/');
    Ok(if prefix.is_empty() {
        path.to_string()
    } else {
        format!("{prefix}/{path}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{git, repo_with, sh_git, write};

    #[test]
    fn status_counts_files_and_lines_and_tells_committed_from_merged() {
        let (_dir, top) = repo_with(&[("a.txt", "1\n2\n3\n"), ("b.bin", "\0x")]);
        let base = sh_git(&top, &["rev-parse", "HEAD"]);
        let clean = status(&git(), &top, &base, None, "").expect("status");
        assert_eq!(clean.summary, ChangeSummary::default());
        assert_eq!(clean.unmerged, 0);
        write(
            &top,
            &[
                ("a.txt", "1\ntwo\n3\n4\n"),
                ("b.bin", "\0y"),
                ("c.txt", "c\n"),
            ],
        );
        let changed = status(&git(), &top, &base, None, "").expect("status");
        assert_eq!(
            changed.summary,
            ChangeSummary {
                files: 3,
                added: 3,
                removed: 1,
                committed: false,
                merged: false,
            }
        );
        sh_git(&top, &["add", "-A"]);
        sh_git(&top, &["commit", "-q", "-m", "work"]);
        let tip = sh_git(&top, &["rev-parse", "HEAD"]);
        let committed = status(&git(), &top, &base, None, "").expect("status");
        assert!(committed.summary.committed && !committed.summary.merged);
        let merged = status(&git(), &top, &base, Some(&tip), "").expect("status");
        assert!(merged.summary.merged);
        assert_eq!(merged.unmerged, 0);
        write(&top, &[("c.txt", "more\n")]);
        let after = status(&git(), &top, &base, Some(&tip), "").expect("status");
        assert_eq!((after.unmerged, after.summary.merged), (1, false));
    }

    #[test]
    fn a_diff_is_bounded_and_limited_to_a_path() {
        let (_dir, top) = repo_with(&[("a.txt", "a\n"), ("sub/b.txt", "b\n")]);
        let base = sh_git(&top, &["rev-parse", "HEAD"]);
        let long: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        write(&top, &[("a.txt", &long), ("sub/b.txt", "bee\n")]);
        let only_b = diff(&git(), &top, &base, "", Some("sub/b.txt"), 1 << 20).expect("diff");
        assert!(
            only_b.starts_with("diff --git a/sub/b.txt b/sub/b.txt"),
            "{only_b}"
        );
        assert!(only_b.contains("-b\n+bee\n") && !only_b.contains("a.txt"));
        let cut = diff(&git(), &top, &base, "", None, 1000).expect("diff");
        assert!(cut.len() < 1200, "{}", cut.len());
        assert!(cut.starts_with("diff --git a/a.txt"), "{cut}");
        assert!(cut.contains("bytes of the diff left out"), "{cut}");
        assert!(cut.ends_with("+bee\n"), "{cut}");
        let err = diff(&git(), &top, &base, "", Some("../x"), 100).expect_err("outside");
        assert_eq!(
            err.to_string(),
            "path `../x` must be relative and stay inside the worktree"
        );
    }
}
