//! The one repository a session makes worktrees in: the one its workspace was in when the
//! session was made, recorded in the root's header. Every sandboxed command of the session
//! started after it existed, so none could change its config while arbor's git runs there
//! (its git directories are kept read-only in every sandbox, wherever they lie). A repository
//! that appeared later (a `git init` of an agent's, in a folder that had none, or below the
//! workspace) could have been written by a command still running, and arbor's git, which runs
//! outside the sandbox, would run what its config names: worktrees are refused there.

use std::path::{Path, PathBuf};

use arbor_protocol::WorkspaceRepository;
use arbor_tools::gitrepo::{GitRepository, find_repository};

/// The repository of a session's workspace when the session was made, if it was in one.
#[derive(Debug, Clone, Default)]
pub struct SessionRepository {
    found: Option<GitRepository>,
}

impl SessionRepository {
    /// The repository `cwd` is in now, for a session being made (blocking: it reads files).
    pub fn at_start(cwd: &Path) -> Self {
        Self {
            found: find_repository(cwd),
        }
    }

    /// The repository a resumed session's root header recorded; `None` (a session made
    /// before it was recorded): the one `cwd` is in now.
    pub fn recorded(record: Option<&WorkspaceRepository>, cwd: &Path) -> Self {
        let now = find_repository(cwd);
        let Some(record) = record else {
            return Self { found: now };
        };
        let found = record.common_dir.as_ref().map(|common| {
            let common_dir = PathBuf::from(common);
            match now {
                // The checkout's own git dir (a linked worktree's), when it is still the same
                // repository's.
                Some(now) if now.common_dir == common_dir => now,
                _ => GitRepository {
                    git_dir: common_dir.clone(),
                    common_dir,
                },
            }
        });
        Self { found }
    }

    /// What the root's header records.
    pub fn record(&self) -> WorkspaceRepository {
        WorkspaceRepository {
            common_dir: self
                .found
                .as_ref()
                .map(|repo| repo.common_dir.display().to_string()),
        }
    }

    /// Its git directories, which every sandbox of the session keeps read-only (the sandbox
    /// already protects `<workspace>/.git`; these also cover a repository whose git directory
    /// lies elsewhere in a writable root, as a linked worktree's does).
    pub fn git_dirs(&self, workspace: &Path) -> Vec<PathBuf> {
        let own = std::fs::canonicalize(workspace.join(".git")).ok();
        let mut dirs = Vec::new();
        if let Some(repo) = &self.found {
            for dir in [&repo.git_dir, &repo.common_dir] {
                if Some(dir) != own.as_ref() && !dirs.contains(dir) {
                    dirs.push(dir.clone());
                }
            }
        }
        dirs
    }

    /// Whether worktrees may be made from `source`, whose repository's shared git directory is
    /// `common_dir`; the error is `spawn_agent`'s.
    pub fn admits(&self, source: &Path, common_dir: &Path) -> Result<(), String> {
        let why = "a repository made or changed while the session runs could have been written \
                   by an agent's command, and arbor's git, which runs outside the sandbox, would \
                   run what its config names";
        match &self.found {
            Some(start) if start.common_dir == common_dir => Ok(()),
            Some(start) => Err(format!(
                "isolation \"worktree\": {} is in the repository {}, not in {}, the one this \
                 session started in; arbor makes worktrees only there ({why})",
                source.display(),
                common_dir.display(),
                start.common_dir.display()
            )),
            None => Err(format!(
                "isolation \"worktree\": the workspace was in no git repository when this \
                 session started, so arbor makes no worktrees in the one {} is in now ({why}); \
                 start a new session there to use worktrees",
                source.display()
            )),
        }
    }
}
