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

/// One agent of a tree, as an engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineAgent {
    pub path: AgentPath,
    pub status: AgentStatus,
    /// Mail in its mailbox not yet taken by a turn.
    pub unread: usize,
}

/// What an engine does for commands from outside a run.
///
/// Errors: `OrchestratorError::Refused` for a request the session does not allow (an unknown or
/// closed agent, the root as a close target), anything else for an engine that could not
/// carry it out.
pub trait Engine {
    /// Puts mail from `/root` in `target`'s mailbox: `MailKind::Followup` wakes it,
    /// `MailKind::Message` only queues. Returns the mail's id once the mail is durable.
    fn deliver(
        &self,
        session: &str,
        target: &str,
        kind: MailKind,
        text: &str,
    ) -> impl Future<Output = Result<MailId, OrchestratorError>>;

    /// Closes `target` and the branch below it; returns its status before.
    fn close(
        &self,
        session: &str,
        target: &str,
    ) -> impl Future<Output = Result<AgentStatus, OrchestratorError>>;

    /// Stops `target`'s running turn; returns its status before.
    fn interrupt(
        &self,
        session: &str,
        target: &str,
    ) -> impl Future<Output = Result<AgentStatus, OrchestratorError>>;

    /// The tree's agents, root first.
    fn agents(
        &self,
        session: &str,
    ) -> impl Future<Output = Result<Vec<EngineAgent>, OrchestratorError>>;
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
    ) -> Result<MailId, OrchestratorError> {
        Ok(send_external(&self.home, session, target, kind, text)?
            .mail
            .id)
    }

    async fn close(&self, session: &str, target: &str) -> Result<AgentStatus, OrchestratorError> {
        close_external(&self.home, session, target)
    }

    async fn interrupt(
        &self,
        session: &str,
        target: &str,
    ) -> Result<AgentStatus, OrchestratorError> {
        interrupt_external(&self.home, session, target)
    }

    async fn agents(&self, session: &str) -> Result<Vec<EngineAgent>, OrchestratorError> {
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
