//! A worktree for a new agent: a branch from the parent checkout's current state (its HEAD,
//! plus a commit of its uncommitted changes when it has any) and `git worktree add` of it. The
//! worktree is registered without files ([`create`], quick); [`populate`] writes them, so a
//! caller can let a new agent start while its files are checked out.

use std::path::{Path, PathBuf};

use crate::commit::commit_tree;
use crate::snapshot::{snapshot, tree_of};
use crate::{Author, Git, Repo, WorktreeError};

/// What to make.
#[derive(Debug)]
pub struct NewWorktree<'a> {
    /// The checkout it forks from (the parent's).
    pub source: &'a Repo,
    /// The directory to make; it must not exist (its parent is made if missing).
    pub dest: &'a Path,
    /// The new branch.
    pub branch: &'a str,
    /// Author of the commit that holds the source's uncommitted changes.
    pub author: &'a Author,
    /// Its message.
    pub message: &'a str,
}

/// A worktree made by [`create`] (its files not yet written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The worktree's top directory (canonical).
    pub dest: PathBuf,
    /// Where the agent works: the source's prefix inside the worktree.
    pub cwd: PathBuf,
    pub branch: String,
    /// The commit the branch starts at.
    pub base: String,
    /// The source's prefix (empty at the top).
    pub prefix: String,
}

/// Whether `branch` exists in the repository of `repo`.
pub fn branch_exists(git: &Git, repo: &Repo, branch: &str) -> Result<bool, WorktreeError> {
    let out = git.output(
        &repo.toplevel,
        &[
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
        &[],
        None,
    )?;
    Ok(out.code == 0)
}

/// Makes the branch and registers the worktree, without writing its files.
pub fn create(git: &Git, new: &NewWorktree<'_>) -> Result<Created, WorktreeError> {
    let source = new.source;
    if new.dest.symlink_metadata().is_ok() {
        return Err(WorktreeError::Refused(format!(
            "{} already exists",
            new.dest.display()
        )));
    }
    let tree = snapshot(git, source)?;
    let base = match source.head(git)? {
        Some(head) if tree_of(git, &source.toplevel, &head)? == tree => head,
        head => commit_tree(
            git,
            &source.toplevel,
            &tree,
            head.as_deref(),
            new.author,
            new.message,
        )?,
    };
    if let Some(parent) = new.dest.parent() {
        std::fs::create_dir_all(parent).map_err(|err| {
            WorktreeError::io(format!("cannot create {}", parent.display()), &err)
        })?;
    }
    let dest_text = new.dest.to_string_lossy();
    git.run(
        &source.toplevel,
        &[
            "worktree",
            "add",
            "--no-checkout",
            "-b",
            new.branch,
            &dest_text,
            &base,
        ],
    )?;
    let dest = std::fs::canonicalize(new.dest).unwrap_or_else(|_| new.dest.to_path_buf());
    Ok(Created {
        cwd: Repo::inside(&dest, &source.prefix),
        dest,
        branch: new.branch.to_string(),
        base,
        prefix: source.prefix.clone(),
    })
}

/// Writes a worktree's files and its index from its `HEAD` (done once; a worktree whose
/// index exists is left as it is).
pub fn populate(git: &Git, dest: &Path) -> Result<(), WorktreeError> {
    if is_populated(dest) {
        return Ok(());
    }
    // `--reset`: files a cut-short earlier run left are overwritten, not in the way.
    git.run(dest, &["read-tree", "-u", "--reset", "HEAD"])?;
    Ok(())
}

/// Whether a worktree's files were written: its index exists (git writes it last).
pub fn is_populated(dest: &Path) -> bool {
    git_dir_of(dest).is_some_and(|dir| dir.join("index").exists())
}

/// The git directory a worktree's `.git` file names.
fn git_dir_of(dest: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dest.join(".git")).ok()?;
    let dir = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    Some(if dir.is_absolute() {
        dir
    } else {
        dest.join(dir)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{git, repo_with, sh_git, write};

    fn make(top: &Path, dest: &Path, branch: &str) -> Created {
        let repo = Repo::discover(&git(), top).expect("runs").expect("repo");
        let new = NewWorktree {
            source: &repo,
            dest,
            branch,
            author: &Author::arbor("/root"),
            message: "arbor: uncommitted changes of /root",
        };
        create(&git(), &new).expect("created")
    }

    #[test]
    fn a_clean_checkout_forks_at_head() {
        let (dir, top) = repo_with(&[("a.txt", "a\n")]);
        let dest = dir.path().join("wt/one");
        let made = make(&top, &dest, "arbor/s/one");
        assert_eq!(made.base, sh_git(&top, &["rev-parse", "HEAD"]));
        assert!(!is_populated(&made.dest));
        assert!(!made.dest.join("a.txt").exists());
        populate(&git(), &made.dest).expect("populate");
        assert!(is_populated(&made.dest));
        assert_eq!(
            std::fs::read_to_string(made.dest.join("a.txt")).expect("a"),
            "a\n"
        );
        assert_eq!(sh_git(&made.dest, &["status", "--porcelain"]), "");
        assert_eq!(
            sh_git(&made.dest, &["rev-parse", "--abbrev-ref", "HEAD"]),
            "arbor/s/one"
        );
    }

    #[test]
    fn uncommitted_changes_come_along_as_a_commit_by_the_parent() {
        let (dir, top) = repo_with(&[("a.txt", "a\n"), ("sub/b.txt", "b\n")]);
        write(&top, &[("a.txt", "edited\n"), ("sub/new.txt", "new\n")]);
        let repo = Repo::discover(&git(), &top.join("sub"))
            .expect("runs")
            .expect("repo");
        let dest = dir.path().join("wt/two");
        let new = NewWorktree {
            source: &repo,
            dest: &dest,
            branch: "arbor/s/two",
            author: &Author::arbor("/root"),
            message: "arbor: uncommitted changes of /root",
        };
        let made = create(&git(), &new).expect("created");
        assert_ne!(made.base, sh_git(&top, &["rev-parse", "HEAD"]));
        assert_eq!(made.prefix, "sub");
        assert_eq!(made.cwd, made.dest.join("sub"));
        assert_eq!(
            sh_git(&top, &["log", "-1", "--format=%an <%ae>|%s", &made.base]),
            "arbor </root>|arbor: uncommitted changes of /root"
        );
        populate(&git(), &made.dest).expect("populate");
        assert_eq!(
            std::fs::read_to_string(made.dest.join("a.txt")).expect("a"),
            "edited\n"
        );
        assert!(made.dest.join("sub/new.txt").exists());
        // The parent's own checkout and index are as they were.
        assert_eq!(sh_git(&top, &["diff", "--cached", "--name-only"]), "");
        assert_eq!(
            sh_git(&top, &["status", "--porcelain"]),
            "M a.txt\n?? sub/new.txt"
        );
        assert!(branch_exists(&git(), &repo, "arbor/s/two").expect("runs"));
        assert!(!branch_exists(&git(), &repo, "arbor/s/none").expect("runs"));
    }
}
