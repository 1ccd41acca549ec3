//! Commits arbor makes: a tree on a parent, by `arbor <agent path>`, never signed and with no
//! hook run (the user's key and hooks are for the user's own commits).

use std::path::Path;

use crate::snapshot::tree_of;
use crate::{Author, Git, Repo, WorktreeError};

/// A commit of `tree` on `parent` (none: a first commit).
pub(crate) fn commit_tree(
    git: &Git,
    dir: &Path,
    tree: &str,
    parent: Option<&str>,
    author: &Author,
    message: &str,
) -> Result<String, WorktreeError> {
    let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", message];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    args.push(tree);
    let out = git.run_env(dir, &args, &author.env())?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// Commits everything the worktree at `dir` holds (what `git add -A` stages) on its branch,
/// with its own index. Returns the branch's commit afterwards, and whether it is new.
pub fn commit_work(
    git: &Git,
    dir: &Path,
    author: &Author,
    message: &str,
) -> Result<(String, bool), WorktreeError> {
    let repo = Repo::discover(git, dir)?
        .ok_or_else(|| WorktreeError::NotARepository(dir.to_path_buf()))?;
    let top = &repo.toplevel;
    git.run(top, &["add", "-A", "--", "."])?;
    let tree = git.text(top, &["write-tree"])?;
    let head = repo.head(git)?;
    if let Some(head) = &head
        && tree_of(git, top, head)? == tree
    {
        return Ok((head.clone(), false));
    }
    let commit = commit_tree(git, top, &tree, head.as_deref(), author, message)?;
    let old = head.unwrap_or_else(|| "0".repeat(40));
    git.run(
        top,
        &["update-ref", "-m", "arbor: commit", "HEAD", &commit, &old],
    )?;
    Ok((commit, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{git, repo_with, sh_git, write};

    #[test]
    fn work_is_committed_once_by_arbor_and_the_tree_is_clean_after() {
        let (_dir, top) = repo_with(&[("a.txt", "a\n")]);
        let head = sh_git(&top, &["rev-parse", "HEAD"]);
        let author = Author::arbor("/root/worker_a");
        let (same, new) = commit_work(&git(), &top, &author, "nothing").expect("commit");
        assert_eq!((same.as_str(), new), (head.as_str(), false));
        write(&top, &[("a.txt", "b\n"), ("n.txt", "n\n")]);
        let (commit, new) =
            commit_work(&git(), &top, &author, "work of /root/worker_a").expect("commit");
        assert!(new);
        assert_eq!(sh_git(&top, &["rev-parse", "HEAD"]), commit);
        assert_eq!(
            sh_git(&top, &["log", "-1", "--format=%an <%ae> %cn|%s|%P"]),
            format!("arbor </root/worker_a> arbor|work of /root/worker_a|{head}")
        );
        assert_eq!(sh_git(&top, &["status", "--porcelain"]), "");
    }
}
