//! What the session's durability looks like from outside: waiting for the log and its
//! projections, the failure that stopped them, and the log's creation and watch.

use std::sync::Arc;

use arbor_protocol::{ThreadId, Timestamp};
use arbor_rollout::log::{self as session_log, LogError, SessionLog, Urgency};

use crate::ctx::Ctx;
use crate::error::OrchestratorError;
use crate::facade::Orchestrator;
use crate::session::core::Input;

impl Orchestrator {
    /// Waits until everything appended so far is on disk and written to the rollouts and the
    /// store (for callers that read those files while the session runs).
    pub async fn flush(&self) -> Result<(), String> {
        let upto = self.ctx.log.appended();
        self.ctx
            .log
            .durable(upto, Urgency::Now)
            .await
            .map_err(|err| err.to_string())?;
        self.ctx.projection.projected(upto).await
    }

    /// Like [`Self::flush`], blocking the calling thread (never call it on a runtime worker
    /// the session's agents need).
    pub fn flush_blocking(&self) -> Result<(), String> {
        let upto = self.ctx.log.appended();
        self.ctx
            .log
            .wait_durable(upto, Urgency::Now)
            .map_err(|err| err.to_string())?;
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

/// What this process wrote to the session's log so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogTotals {
    /// Lines appended.
    pub lines: u64,
    /// Syncs of the log.
    pub syncs: u64,
}

/// Stops the session when its log or its projections fail (a full disk, an I/O error): no new
/// turn starts, the running ones are interrupted, and nothing after the last durable line is
/// acknowledged.
pub(crate) fn watch_failure(ctx: &Arc<Ctx>) {
    let watcher = Arc::clone(ctx);
    let token = ctx.root_token.clone();
    ctx.tracker.spawn(async move {
        tokio::select! {
            () = token.cancelled() => {}
            err = watcher.log.failed() => {
                tracing::error!(error = %err, "the session stops");
                watcher.session.send(Input::Stop { reason: "session_log_failed".to_string() });
            }
            err = watcher.projection.failed() => {
                tracing::error!(error = %err, "the session stops");
                watcher.session.send(Input::Stop { reason: "session_files_failed".to_string() });
            }
        }
    });
}

/// Creates the log of a new session in today's folder of the sessions tree, with the folders
/// above it, and syncs the folder so the file survives: the one folder sync of a session.
pub(crate) fn create_log(
    home: &std::path::Path,
    session: ThreadId,
    stamp: Timestamp,
) -> Result<std::path::PathBuf, OrchestratorError> {
    let root_rollout = arbor_rollout::rollout_path(home, stamp, session);
    let path = session_log::log_path(&root_rollout, session);
    let fail = |what: &str, err: std::io::Error| {
        OrchestratorError::Start(format!("cannot create {what} {}: {err}", path.display()))
    };
    let dir = path.parent().unwrap_or(home);
    std::fs::create_dir_all(dir).map_err(|err| fail("the folder of", err))?;
    std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .map_err(|err| fail("the session log", err))?;
    std::fs::File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|err| fail("the folder of", err))?;
    Ok(path)
}
