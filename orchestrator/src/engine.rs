//! The engine seam: what an engine does to a session for a command from outside its run:
//! deliver mail (queue-only or waking its target), append a fact about an agent (closed,
//! interrupted), and read the tree's agents. [`Local`] is the local engine, the session log
//! and the store under an arbor home (`external.rs` appends, `open.rs` reads); the Restate
//! engine implements the same trait over its ingress (`cli/src/restate/engine.rs`). The
//! commands `send`, `close` and `interrupt` are one piece of code over either.
//!
//! Runs themselves (`exec`, `resume`, a follow-up that drives a stopped session) are not behind
//! this trait: a local run is this process driving the session, a Restate run is the server
//! driving it, and the two share their event lines, not their drivers (docs/engines.md).

use std::future::Future;
use std::path::PathBuf;

use arbor_protocol::{AgentPath, AgentStatus, MailId, MailKind};

use crate::error::OrchestratorError;
use crate::external::{close_external, interrupt_external, send_external};
use crate::open::SessionView;

/// Why an engine refused or failed a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The request names something the session does not allow (an unknown or closed agent,
    /// the root as a close target): the caller's mistake.
    #[error("{0}")]
    Refused(String),
    /// The engine could not carry it out (the log, the store, the server).
    #[error("{0}")]
    Failed(String),
}

impl From<OrchestratorError> for EngineError {
    fn from(err: OrchestratorError) -> Self {
        match err {
            OrchestratorError::Refused(message) => Self::Refused(message),
            other => Self::Failed(other.to_string()),
        }
    }
}

/// One agent of a tree, as an engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineAgent {
    pub path: AgentPath,
    pub status: AgentStatus,
    /// Mail in its mailbox not yet taken by a turn.
    pub unread: usize,
}

/// What an engine does for commands from outside a run.
pub trait Engine {
    /// Puts mail from `/root` in `target`'s mailbox: `MailKind::Followup` wakes it,
    /// `MailKind::Message` only queues. Returns the mail's id once the mail is durable.
    fn deliver(
        &self,
        session: &str,
        target: &str,
        kind: MailKind,
        text: &str,
    ) -> impl Future<Output = Result<MailId, EngineError>>;

    /// Closes `target` and the branch below it; returns its status before.
    fn close(
        &self,
        session: &str,
        target: &str,
    ) -> impl Future<Output = Result<AgentStatus, EngineError>>;

    /// Stops `target`'s running turn; returns its status before.
    fn interrupt(
        &self,
        session: &str,
        target: &str,
    ) -> impl Future<Output = Result<AgentStatus, EngineError>>;

    /// The tree's agents, root first.
    fn agents(&self, session: &str) -> impl Future<Output = Result<Vec<EngineAgent>, EngineError>>;
}

/// The local engine of the arbor home at `home`.
#[derive(Debug, Clone)]
pub struct Local {
    pub home: PathBuf,
}

impl Engine for Local {
    async fn deliver(
        &self,
        session: &str,
        target: &str,
        kind: MailKind,
        text: &str,
    ) -> Result<MailId, EngineError> {
        Ok(send_external(&self.home, session, target, kind, text)?
            .mail
            .id)
    }

    async fn close(&self, session: &str, target: &str) -> Result<AgentStatus, EngineError> {
        Ok(close_external(&self.home, session, target)?)
    }

    async fn interrupt(&self, session: &str, target: &str) -> Result<AgentStatus, EngineError> {
        Ok(interrupt_external(&self.home, session, target)?)
    }

    async fn agents(&self, session: &str) -> Result<Vec<EngineAgent>, EngineError> {
        let view = SessionView::open(&self.home, session)?;
        let mut rows: Vec<_> = view.state.threads.values().collect();
        rows.sort_by_key(|row| (row.record.path().depth(), row.record.path().clone()));
        Ok(rows
            .into_iter()
            .map(|row| EngineAgent {
                path: row.record.path().clone(),
                status: row.reported_status(view.driven),
                unread: view.state.unread(row.record.id()).count(),
            })
            .collect())
    }
}
