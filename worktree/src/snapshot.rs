//! The tree of a checkout as it is on disk: what `git add -A` would stage, written to the
//! object store through a copy of the checkout's index (its stat data spares hashing the files
//! that did not change), so the checkout's own index is never touched.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Git, Repo, WorktreeError};

/// A temporary index file, removed (with a lock git may have left) when dropped.
pub(crate) struct TempIndex {
    path: PathBuf,
}

impl TempIndex {
    /// A copy of `repo`'s index, or an empty one when it has none, in its git directory (which
    /// the agents' commands cannot write, unlike the temp dirs: a link planted there under a
    /// name arbor will use cannot receive the copy).
    pub(crate) fn copy_of(repo: &Repo) -> Result<TempIndex, WorktreeError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "arbor-index-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let temp = TempIndex {
            path: repo.git_dir.join(name),
        };
        let index = repo.git_dir.join("index");
        match std::fs::copy(&index, &temp.path) {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(WorktreeError::io(
                    format!("cannot copy the index {}", index.display()),
                    &err,
                ));
            }
        }
        Ok(temp)
    }

    /// The variable that makes git use this index.
    pub(crate) fn env(&self) -> (&'static str, &OsStr) {
        ("GIT_INDEX_FILE", self.path.as_os_str())
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let mut lock = self.path.clone().into_os_string();
        lock.push(".lock");
        let _ = std::fs::remove_file(lock);
    }
}

/// The tree id of everything `repo`'s checkout holds that git would track: tracked files as
/// they are on disk, deletions, and untracked files that are not ignored.
pub fn snapshot(git: &Git, repo: &Repo) -> Result<String, WorktreeError> {
    let index = TempIndex::copy_of(repo)?;
    let env = [index.env()];
    git.run_env(&repo.toplevel, &["add", "-A", "--", "."], &env)?;
    let tree = git.run_env(&repo.toplevel, &["write-tree"], &env)?;
    Ok(String::from_utf8_lossy(&tree).trim().to_string())
}

/// The tree of a commit.
pub(crate) fn tree_of(git: &Git, dir: &Path, commit: &str) -> Result<String, WorktreeError> {
    git.text(dir, &["rev-parse", &format!("{commit}^{{tree}}")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{git, repo_with, sh_git, write};

    #[test]
    fn a_snapshot_holds_changes_and_new_files_but_not_ignored_ones_nor_the_index() {
        let (_dir, top) = repo_with(&[("a.txt", "a\n"), (".gitignore", "build/\n")]);
        let repo = Repo::discover(&git(), &top).expect("runs").expect("repo");
        let head_tree = tree_of(&git(), &top, "HEAD").expect("tree");
        assert_eq!(snapshot(&git(), &repo).expect("snapshot"), head_tree);
        write(
            &top,
            &[("a.txt", "changed\n"), ("new.txt", "n\n"), ("build/x", "x")],
        );
        let tree = snapshot(&git(), &repo).expect("snapshot");
        assert_ne!(tree, head_tree);
        let listed = sh_git(&top, &["ls-tree", "-r", "--name-only", &tree]);
        assert_eq!(listed, ".gitignore\na.txt\nnew.txt");
        assert_eq!(
            sh_git(&top, &["cat-file", "blob", &format!("{tree}:a.txt")]),
            "changed"
        );
        // The user's index still stages nothing.
        assert_eq!(sh_git(&top, &["diff", "--cached", "--name-only"]), "");
    }
}
