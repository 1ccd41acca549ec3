//! A session made elsewhere, brought into the home as a local session (the Restate engine's
//! `arbor export --to-local`). Its lines go through the session log's own writer into a new
//! log, as a driving process writes them, and the session is then reconciled like any other:
//! the rollouts and the store are projections of that log, so `arbor resume`, `doctor` and the
//! read commands treat it as a session this machine ran. It gets a handle of its own here.

use std::path::Path;

use arbor_agent_graph::Store;
use arbor_protocol::{RolloutItem, ThreadId, Timestamp};
use arbor_rollout::log::{SessionLog, Start, Urgency};

use crate::error::OrchestratorError;
use crate::lease::Lease;

/// Writes session `session` from `lines` (each of a thread, stamped): the root's
/// `session_meta` first (its stamp names the folder of the log and of the root's rollout), each
/// agent's header before its other lines. Refused when the home has a session or thread with
/// that id already.
pub fn import_session(
    home: &Path,
    session: ThreadId,
    mut lines: Vec<(ThreadId, Timestamp, RolloutItem)>,
) -> Result<(), OrchestratorError> {
    let store = Store::open(home)?;
    if store.thread(session)?.is_some() {
        return Err(OrchestratorError::Refused(format!(
            "a local session {session} exists already under {}",
            home.display()
        )));
    }
    let root_stamp = match lines.first_mut() {
        Some((thread, stamp, RolloutItem::SessionMeta(meta))) if *thread == session => {
            // A local session has a handle, as one made here does.
            if meta.handle.is_none() {
                let taken = |h: &str| store.handle_taken(h).unwrap_or(false);
                meta.handle = Some(arbor_protocol::pick_handle(taken));
            }
            *stamp
        }
        _ => {
            return Err(OrchestratorError::Refused(format!(
                "session {session}: the root's header must come first"
            )));
        }
    };
    let _lease = Lease::acquire(home, session)?;
    let log_path = crate::durability::create_log(home, session, root_stamp)?;
    let (log, _outlets) = SessionLog::start(&log_path, Start::default())?;
    let mut lsn = 0;
    for (thread, stamp, item) in lines {
        lsn = log.append_at(thread, stamp, [item])?;
    }
    log.wait_durable(lsn, Urgency::Now)?;
    log.close()?;
    crate::open::reconcile(home, &store, session, &log_path)?;
    Ok(())
}
