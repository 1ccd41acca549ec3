//! CLI errors and exit codes: 0 done, 1 the run failed, 2 usage or input error, 3 the session
//! is driven by another process, 130 interrupted.

use std::fmt;

/// An error with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// A usage or input error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// Standard output was closed by its reader (`arbor agents --json | head -c1`): the
    /// command stops quietly (exit 0).
    pub fn closed_output() -> Self {
        Self {
            code: 0,
            message: String::new(),
        }
    }

    /// Whether this is [`Self::closed_output`].
    pub fn is_closed_output(&self) -> bool {
        self.code == 0 && self.message.is_empty()
    }

    /// A failed run (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<arbor_orchestrator::OrchestratorError> for CliError {
    fn from(err: arbor_orchestrator::OrchestratorError) -> Self {
        use arbor_orchestrator::OrchestratorError as E;
        let code = match &err {
            E::Held { .. } => 3,
            E::Roles(_) | E::Policy(_) => 2,
            E::Store(store) if store.is_lookup() => 2,
            E::Refused(_) => 2,
            E::Store(_)
            | E::LeaseIo { .. }
            | E::Start(_)
            | E::Log(_)
            | E::Projection(_)
            | E::Files(_)
            | E::Engine(_)
            | E::Stopped => 1,
        };
        let message = match &err {
            E::Store(store) => store_message(store),
            _ => err.to_string(),
        };
        Self { code, message }
    }
}

/// An orchestrator error from a request made from outside a session (a diff, a merge, mail to
/// a session another process may drive): a refusal is a usage error, a failure of the store or
/// the log underneath a plain failure.
pub(crate) fn external(err: arbor_orchestrator::OrchestratorError) -> CliError {
    match err {
        arbor_orchestrator::OrchestratorError::Refused(message) => CliError::usage(message),
        // What failed underneath a request from outside: the store or the log.
        other @ (arbor_orchestrator::OrchestratorError::Store(_)
        | arbor_orchestrator::OrchestratorError::Log(_)) => CliError::failed(other.to_string()),
        other => other.into(),
    }
}

impl From<arbor_agent_graph::StoreError> for CliError {
    fn from(err: arbor_agent_graph::StoreError) -> Self {
        if err.is_lookup() {
            return Self::usage(err.to_string());
        }
        Self::failed(store_message(&err))
    }
}

/// A store error as the user reads it: a damaged store says how to make it again.
fn store_message(err: &arbor_agent_graph::StoreError) -> String {
    if err.is_damaged() {
        format!(
            "{err}; `arbor doctor --rebuild` makes the store again from the session logs, keeping \
             this file beside it"
        )
    } else {
        err.to_string()
    }
}

/// Exit code when the run was interrupted by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

impl From<arbor_rollout::log::LogError> for CliError {
    fn from(err: arbor_rollout::log::LogError) -> Self {
        Self::failed(err.to_string())
    }
}
