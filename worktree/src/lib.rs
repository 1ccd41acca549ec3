//! Git worktrees for arbor's agents. Everything here runs the user's own `git` as a child
//! process ([`Git`]: found on `PATH`, at least [`MIN_VERSION`], hooks off for every command
//! arbor runs), and blocks: async callers use `spawn_blocking`.
//!
//! - [`Repo::discover`]: whether a directory is in a checkout, and where its git data is.
//! - [`snapshot`]: the tree of everything a checkout holds that git would track (tracked files
//!   as they are on disk plus untracked ones that are not ignored), written through a copy of
//!   its index so the user's index is never touched.
//! - [`create`] and [`populate`]: a new branch from a checkout's current state (its HEAD plus a
//!   commit of its uncommitted changes) and a worktree of it; the files are written by
//!   `populate`, which the caller may run in the background.
//! - [`status`] and [`diff`]: what a worktree changed since a commit, as a [`ChangeSummary`]
//!   or a unified diff bounded in size.
//! - [`commit_work`]: everything a worktree holds committed on its branch.
//! - [`merge`]: a three-way merge of a worktree's commit into another checkout of the same
//!   repository. All of it or nothing: with a conflict nothing is written.
//! - [`remove`]: the worktree and (optionally) its branch deleted.
//!
//! [`ChangeSummary`]: arbor_protocol::ChangeSummary

mod changes;
mod commit;
mod create;
mod git;
mod merge;
mod remove;
mod repo;
mod snapshot;
#[cfg(test)]
mod testing;
mod vet;

use std::path::PathBuf;

pub use changes::{WorkStatus, changed_paths, diff, status};
pub use commit::commit_work;
pub use create::{Created, NewWorktree, branch_exists, create, is_populated, populate};
pub use git::{Author, Git, MIN_VERSION, Version};
pub use merge::{Conflict, MergeReport, MergeSpec, Strategy, merge};
pub use remove::remove;
pub use repo::{Repo, in_repository};
pub use snapshot::snapshot;

/// Why a worktree operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorktreeError {
    #[error("git was not found ({0}): worktrees need git {MIN_VERSION} or newer on PATH")]
    GitMissing(String),
    #[error("git {found} is too old: worktrees need git {MIN_VERSION} or newer")]
    GitTooOld { found: Version },
    #[error("{} is not inside a git repository", .0.display())]
    NotARepository(PathBuf),
    #[error("`git {command}` failed in {}: {stderr}", .dir.display())]
    Git {
        command: String,
        dir: PathBuf,
        stderr: String,
    },
    #[error("{context}: {message}")]
    Io { context: String, message: String },
    /// The operation cannot be done as asked; the text says why.
    #[error("{0}")]
    Refused(String),
}

impl WorktreeError {
    pub(crate) fn io(context: impl Into<String>, err: &std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            message: err.to_string(),
        }
    }
}
