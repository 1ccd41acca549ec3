//! The orchestrator's error: why a session could not start or go on, or a request was not
//! answered. (A `Result<_, String>` in the orchestrator carries text a model or a person reads
//! verbatim: a tool's output, a refusal, the reason a turn ended.)

use std::path::PathBuf;

use arbor_protocol::ThreadId;
use arbor_rollout::log::LogError;

/// Why a session could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Store(#[from] arbor_agent_graph::StoreError),
    #[error(transparent)]
    Roles(#[from] arbor_roles::RoleError),
    /// Another live process holds the session's lease.
    #[error(
        "session {session} is driven by another process (pid {pid}); wait for it to finish or stop it"
    )]
    Held { session: ThreadId, pid: String },
    /// The lease file could not be opened, locked or written.
    #[error("lease file {}: {source}", .path.display())]
    LeaseIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Policy(#[from] arbor_tools::ToolError),
    #[error("{0}")]
    Start(String),
    /// The session log could not take or sync a line.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The rollouts or the store could not be written from the log.
    #[error("{0}")]
    Projection(String),
    /// The session stopped before the request was answered.
    #[error("the session stopped")]
    Stopped,
    /// A request was refused (an unknown target, a closed agent, an empty message); the text
    /// says why, as the model or the user reads it.
    #[error("{0}")]
    Refused(String),
    /// A file of the home could not be read or deleted.
    #[error("{0}")]
    Files(String),
    /// Another engine behind the engine seam could not carry out a request (its server
    /// unreachable or answering out of turn); the text says what failed.
    #[error("{0}")]
    Engine(String),
}

impl From<OrchestratorError> for String {
    fn from(err: OrchestratorError) -> Self {
        err.to_string()
    }
}
