//! The session log's creation, the watch that stops the session when the log or its
//! projections fail, and the log's totals.

use std::sync::Arc;

use arbor_protocol::{ThreadId, Timestamp};
use arbor_rollout::log as session_log;

use crate::ctx::Ctx;
use crate::error::OrchestratorError;
use arbor_tree::Input;

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
