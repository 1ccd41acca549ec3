//! Removing a worktree: its directory (modified and untracked files too: the caller decides
//! whether anything there still matters) and, when asked, its branch. The directory is removed
//! by arbor itself, through handles that follow no symbolic link (`std::fs::remove_dir_all`
//! opens each directory with `O_NOFOLLOW` and unlinks relative to it), so a link an agent left
//! in its worktree is removed, never what it points to; git then prunes its record.

use std::path::Path;

use crate::{Git, WorktreeError};

/// Removes the worktree at `dir` of the repository whose shared git directory is `common_dir`
/// and, with `branch`, deletes that branch. A directory already gone is pruned from git's list;
/// a branch already gone is fine.
pub fn remove(
    git: &Git,
    common_dir: &Path,
    dir: &Path,
    branch: Option<&str>,
) -> Result<(), WorktreeError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => {
            return Err(WorktreeError::io(
                format!("cannot remove {}", dir.display()),
                &err,
            ));
        }
    }
    git.run(common_dir, &["worktree", "prune"])?;
    if let Some(branch) = branch {
        let exists = git.output(
            common_dir,
            &[
                "show-ref",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
            &[],
            None,
        )?;
        if exists.code == 0 {
            git.run(common_dir, &["branch", "-D", "--", branch])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{git, repo_with, sh_git, write};
    use crate::{Author, NewWorktree, Repo, create, populate};

    #[test]
    fn a_worktree_and_its_branch_go_even_with_changes_and_twice_is_fine() {
        let (dir, top) = repo_with(&[("a.txt", "a\n")]);
        let repo = Repo::discover(&git(), &top).expect("runs").expect("repo");
        let dest = dir.path().join("wt/x");
        let new = NewWorktree {
            source: &repo,
            dest: &dest,
            branch: "arbor/s/x",
            author: &Author::arbor("/root"),
            message: "m",
        };
        let made = create(&git(), &new).expect("create");
        populate(&git(), &made.dest).expect("populate");
        write(&made.dest, &[("a.txt", "changed\n"), ("u.txt", "u\n")]);
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).expect("outside");
        std::fs::write(outside.join("keep"), "k").expect("keep");
        std::os::unix::fs::symlink(&outside, made.dest.join("link")).expect("link");
        remove(&git(), &repo.common_dir, &made.dest, Some("arbor/s/x")).expect("remove");
        assert!(!dest.exists());
        assert!(outside.join("keep").exists(), "a link was followed");
        assert_eq!(sh_git(&top, &["branch", "--list", "arbor/*"]), "");
        assert_eq!(
            sh_git(&top, &["worktree", "list", "--porcelain"])
                .lines()
                .count(),
            3
        );
        remove(&git(), &repo.common_dir, &made.dest, Some("arbor/s/x")).expect("again");
    }
}
