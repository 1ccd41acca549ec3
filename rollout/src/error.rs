//! The one error type of the rollout crate; every message names the file it is about.

use std::io;
use std::path::PathBuf;

use arbor_protocol::ThreadId;

/// Why a rollout could not be created, appended to, found or read.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// A file-system call failed; `op` says which step (`create`, `append`, `sync`, …).
    #[error("rollout {}: {op}: {source}", .path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// No file under `sessions/` carries the thread's id.
    #[error("no rollout for thread {thread_id} under {}", .sessions.display())]
    NotFound {
        thread_id: ThreadId,
        sessions: PathBuf,
    },
    /// The file has no complete first line (empty, blank or torn).
    #[error("rollout {} has no session_meta first line: {reason}", .path.display())]
    MissingMeta { path: PathBuf, reason: String },
    /// The first line is a complete item, but not the `session_meta` header.
    #[error(
        "rollout {}: line {line} is a `{found}` item, expected the session_meta header",
        .path.display()
    )]
    NotMeta {
        path: PathBuf,
        line: usize,
        found: String,
    },
    /// A complete line that is not JSON, or whose known `type` has a malformed payload.
    #[error("rollout {}: line {line}: {reason}", .path.display())]
    BadLine {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// The session log could not be read or written.
    #[error(transparent)]
    Log(#[from] crate::log::LogError),
}

impl RolloutError {
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            op,
            source,
        }
    }
}
