//! Finding the checkout a directory belongs to: its top, the directory's place in it, its own
//! git directory and the repository's shared one.

use std::path::{Path, PathBuf};

use crate::{Git, WorktreeError};

/// A checkout (the main one or a worktree) of a git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The checkout's top directory (canonical).
    pub toplevel: PathBuf,
    /// The directory it was found from, relative to `toplevel` with `/` separators and no
    /// trailing one (empty at the top).
    pub prefix: String,
    /// This checkout's own git directory: its `HEAD` and its index.
    pub git_dir: PathBuf,
    /// The repository's shared git directory: objects, refs, worktrees (canonical).
    pub common_dir: PathBuf,
}

/// Whether `dir` or one of its ancestors has a `.git` entry, without running git.
pub fn in_repository(dir: &Path) -> bool {
    dir.ancestors()
        .any(|dir| dir.join(".git").symlink_metadata().is_ok())
}

impl Repo {
    /// The checkout `dir` is in; `None` when no directory above it has a `.git`.
    pub fn discover(git: &Git, dir: &Path) -> Result<Option<Repo>, WorktreeError> {
        if !in_repository(dir) {
            return Ok(None);
        }
        let out = git.run(
            dir,
            &[
                "rev-parse",
                "--show-toplevel",
                "--show-prefix",
                "--git-dir",
                "--git-common-dir",
            ],
        )?;
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text.lines().collect();
        let [toplevel, prefix, git_dir, common_dir] = lines[..] else {
            return Err(WorktreeError::Refused(format!(
                "cannot read where the checkout of {} is: git rev-parse printed `{}`",
                dir.display(),
                text.trim()
            )));
        };
        let absolute = |path: &str| {
            let path = Path::new(path);
            let path = if path.is_absolute() {
                path.to_path_buf()
            } else {
                dir.join(path)
            };
            std::fs::canonicalize(&path).unwrap_or(path)
        };
        Ok(Some(Repo {
            toplevel: absolute(toplevel),
            prefix: prefix.trim_end_matches('/').to_string(),
            git_dir: absolute(git_dir),
            common_dir: absolute(common_dir),
        }))
    }

    /// The directory `prefix` names inside the checkout at `top`.
    pub fn inside(top: &Path, prefix: &str) -> PathBuf {
        if prefix.is_empty() {
            top.to_path_buf()
        } else {
            top.join(prefix)
        }
    }

    /// The commit `HEAD` names, `None` on a branch with no commit yet.
    pub(crate) fn head(&self, git: &Git) -> Result<Option<String>, WorktreeError> {
        let out = git.output(
            &self.toplevel,
            &["rev-parse", "-q", "--verify", "HEAD^{commit}"],
            &[],
            None,
        )?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.code == 0 && !text.is_empty()).then_some(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{git, repo_with};

    #[test]
    fn a_directory_outside_any_repository_is_none() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(
            !in_repository(dir.path()),
            "the temp dir {} is inside a repository",
            dir.path().display()
        );
        assert_eq!(Repo::discover(&git(), dir.path()).expect("runs"), None);
        std::fs::create_dir(dir.path().join(".git")).expect("a .git");
        assert!(in_repository(&dir.path().join("below")));
    }

    #[test]
    fn a_subdirectory_knows_its_prefix_and_git_dirs() {
        let (dir, top) = repo_with(&[("sub/deep/a.txt", "a\n")]);
        let repo = Repo::discover(&git(), &top.join("sub/deep"))
            .expect("runs")
            .expect("a repo");
        assert_eq!(repo.toplevel, std::fs::canonicalize(&top).expect("top"));
        assert_eq!(repo.prefix, "sub/deep");
        assert_eq!(repo.git_dir, repo.toplevel.join(".git"));
        assert_eq!(repo.common_dir, repo.toplevel.join(".git"));
        assert!(repo.head(&git()).expect("head").is_some());
        drop(dir);
    }
}
