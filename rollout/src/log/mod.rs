//! The session log: one append-only JSONL file per session, the only file arbor syncs.
//!
//! Every fact of a session (every agent's rollout items, mail, closes, approvals, usage,
//! status changes, what other processes did) is a line of it, numbered in one order. The
//! driving process appends through a [`SessionLog`]: an append is visible to the session at
//! once and reaches the disk in a group commit of the log's writer thread (one sync covers
//! every line written before it, at most one sync is in flight). Waiters ask for the sync that
//! covers what they need ([`SessionLog::durable`]). Other processes append under the file's
//! lock with [`append_external`]. Rollouts and the SQLite store are written from synced lines
//! (see [`Synced`]); they may lag the log, never lead it.

mod file;
mod writer;

use std::fmt;
use std::path::{Path, PathBuf};

use arbor_protocol::ThreadId;

pub use file::{LogRead, Tail, append_external, for_each_line, read_log};
pub use writer::{Outlets, SessionLog, Start, Synced, SyncedLine, Urgency};

/// The file name of a session's log, in the folder of its root's rollout.
pub fn log_file_name(session: ThreadId) -> String {
    format!("log-{session}.jsonl")
}

/// The log of `session` whose root rollout is `root_rollout`.
pub fn log_path(root_rollout: &Path, session: ThreadId) -> PathBuf {
    root_rollout
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(log_file_name(session))
}

/// Where the complete lines of the log at `path` end, after cutting off a torn tail under the
/// log's lock (what a crash left half-written was never synced, so never acknowledged). A
/// missing file is created empty when `create`.
pub fn open_tail(path: &Path, create: bool) -> Result<Tail, LogError> {
    let file = file::open_rw(path, create)?;
    let _lock = file::Locked::take(&file, path)?;
    file::cut_torn(&file, path)
}

/// Where the complete lines of the log end, read without changing anything.
pub fn peek_tail(path: &Path) -> Result<Tail, LogError> {
    let file = std::fs::File::open(path).map_err(|err| LogError::io(path, "open", &err))?;
    file::tail(&file, path)
}

/// The complete lines of the log at `path` from byte `from`, with their bytes (for the
/// projections of a session brought up to its log); returns them, the end of the last one, and
/// a notice for each line skipped.
pub fn read_synced(
    path: &Path,
    from: u64,
) -> Result<(Vec<SyncedLine>, u64, Vec<String>), LogError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), from, Vec::new()));
        }
        Err(err) => return Err(LogError::io(path, "open", &err)),
    };
    let len = file
        .metadata()
        .map_err(|err| LogError::io(path, "read", &err))?
        .len();
    let bytes = file::read_range(&file, path, from, len.max(from))?;
    Ok(file::parse_lines(path, bytes, from))
}

/// Where the complete lines of any file of log lines (a rollout too) end.
pub(crate) fn file_tail(file: &std::fs::File, path: &Path) -> Result<Tail, LogError> {
    file::tail(file, path)
}

/// Syncs the log file (for a process that reconciles a session it does not drive).
pub fn sync_log(path: &Path) -> Result<(), LogError> {
    let file = std::fs::File::open(path).map_err(|err| LogError::io(path, "open", &err))?;
    file.sync_data()
        .map_err(|err| LogError::io(path, "sync", &err))
}

/// Why the session log could not be written or read. Cheap to clone: every waiter of a failed
/// sync gets the same error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub path: PathBuf,
    /// The step that failed: `open`, `write`, `sync`, `read`, `lock`, `repair`, `encode`.
    pub op: &'static str,
    /// The operating system's reason, starting lowercase (`no space left on device`).
    pub reason: String,
}

impl LogError {
    pub(crate) fn io(path: &Path, op: &'static str, err: &std::io::Error) -> Self {
        Self {
            path: path.to_path_buf(),
            op,
            reason: lowercase_first(&err.to_string()),
        }
    }

    pub(crate) fn encode(path: &Path, err: &serde_json::Error) -> Self {
        Self {
            path: path.to_path_buf(),
            op: "encode",
            reason: err.to_string(),
        }
    }

    pub(crate) fn closed(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            op: "write",
            reason: "the session log is closed".to_string(),
        }
    }
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} the session log {}: {}",
            self.op,
            self.path.display(),
            self.reason
        )
    }
}

impl std::error::Error for LogError {}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
