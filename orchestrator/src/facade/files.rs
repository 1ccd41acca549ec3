//! What the session's durability looks like from outside: waiting for the log and its
//! projections, the failure that stopped them, the log's totals; and the workspace's
//! `.arbor` directory a new session makes sure of.

use arbor_rollout::log::{LogError, SessionLog, Urgency};

use super::Orchestrator;
use crate::durability::LogTotals;
use crate::error::OrchestratorError;

impl Orchestrator {
    /// Waits until everything appended so far is on disk and written to the rollouts and the
    /// store (for callers that read those files while the session runs).
    pub async fn flush(&self) -> Result<(), OrchestratorError> {
        let upto = self.ctx.log.appended();
        self.ctx.log.durable(upto, Urgency::Now).await?;
        self.ctx.projection.projected(upto).await
    }

    /// Like [`Self::flush`], blocking the calling thread (never call it on a runtime worker
    /// the session's agents need).
    pub fn flush_blocking(&self) -> Result<(), OrchestratorError> {
        let upto = self.ctx.log.appended();
        self.ctx.log.wait_durable(upto, Urgency::Now)?;
        self.ctx.projection.wait_projected(upto)
    }

    /// Waits until everything the session appended up to `lsn` is on disk: what prints an
    /// event waits for the event's `lsn` with [`Urgency::Soon`].
    pub async fn durable(&self, lsn: u64, urgency: Urgency) -> Result<(), LogError> {
        self.ctx.log.durable(lsn, urgency).await
    }

    /// The session log, for waiting on durability outside the runtime.
    pub fn log(&self) -> &SessionLog {
        &self.ctx.log
    }

    /// Why the session could not go on writing, if it could not: the log (or its projections)
    /// failed, naming the file and the system's reason.
    pub fn failure(&self) -> Option<String> {
        if let Some(err) = self.ctx.log.failure() {
            return Some(err.to_string());
        }
        self.ctx.projection.failure()
    }

    /// Lines appended to the session log by this process, and the syncs they took.
    pub fn log_totals(&self) -> LogTotals {
        LogTotals {
            lines: self.ctx.log.appended(),
            syncs: self.ctx.log.syncs(),
        }
    }
}

/// Makes sure `<workspace>/.arbor` exists, so the sandbox keeps it (and the workspace rules and
/// roles in it) read-only: a missing one could be created by a command.
pub(super) fn protect_arbor_dir(workspace: &std::path::Path) {
    let dir = workspace.join(".arbor");
    if dir.symlink_metadata().is_err()
        && let Err(err) = std::fs::create_dir(&dir)
    {
        tracing::warn!(dir = %dir.display(), error = %err, "cannot create the .arbor directory");
    }
}
