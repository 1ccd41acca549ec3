//! The orchestrator's error: why a session could not start or go on, or a request was not
//! answered. (A `Result<_, String>` in the orchestrator carries text a model or a person reads
//! verbatim: a tool's output, a refusal, the reason a turn ended.)

use arbor_rollout::log::LogError;

use crate::lease::LeaseError;

/// Why a session could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Store(#[from] arbor_agent_graph::StoreError),
    #[error(transparent)]
    Roles(#[from] arbor_roles::RoleError),
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Policy(#[from] arbor_tools::PolicyError),
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
    /// A request was refused; the text says why, as the model or the user reads it.
    #[error("{0}")]
    Refused(String),
    /// A file of the home could not be read or deleted.
    #[error("{0}")]
    Files(String),
}

impl From<OrchestratorError> for String {
    fn from(err: OrchestratorError) -> Self {
        err.to_string()
    }
}
