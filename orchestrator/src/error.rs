//! The orchestrator's error: why a session could not start or go on.

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
}
