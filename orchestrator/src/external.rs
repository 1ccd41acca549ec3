//! What other `arbor` processes do to a session, driven or not: queue mail (`send`,
//! `followup`), close or interrupt an agent. Every action is appended to the session journal
//! (synced, under a lock) and then applied to the store; a live driver picks it up from the
//! journal within a second.

use std::path::Path;

use arbor_agent_graph::{EdgeStatus, Store, ThreadRecord};
use arbor_protocol::{AgentPath, AgentStatus, Mail, MailKind, ThreadId, Timestamp};
use arbor_rollout::{
    JournalEntry, PROCESS_EXIT, append_journal, journal_path, tail_status, tail_turn_open,
};

use crate::OrchestratorError;
use crate::lease::Lease;
use crate::mail;
use crate::resume::find_root;

/// Why an action from outside the tree was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    /// The request itself is wrong (unknown target, closed agent, empty message).
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Start(#[from] OrchestratorError),
    #[error(transparent)]
    Store(#[from] arbor_agent_graph::StoreError),
    #[error(transparent)]
    Rollout(#[from] arbor_rollout::RolloutError),
}

/// A session as another process sees it.
struct Target {
    store: Store,
    root: ThreadRecord,
    thread: ThreadRecord,
}

fn resolve(home: &Path, session: &str, target: &str) -> Result<Target, ExternalError> {
    let store = Store::open(home).map_err(OrchestratorError::from)?;
    let root = find_root(&store, session)?;
    let target = target.trim();
    let thread = if let Ok(id) = ThreadId::parse(target) {
        let thread = store
            .thread(id)?
            .filter(|t| t.session_id == root.id)
            .ok_or_else(|| {
                ExternalError::Refused(format!("agent `{target}` not found in session {}", root.id))
            })?;
        if store
            .edge(id)?
            .is_some_and(|(_, status)| status == EdgeStatus::Closed)
        {
            return Err(ExternalError::Refused(format!(
                "agent {} is closed",
                thread.path
            )));
        }
        thread
    } else {
        let path = AgentPath::root()
            .resolve(target)
            .map_err(|err| ExternalError::Refused(err.to_string()))?;
        let open = if path.is_root() {
            Some(root.id)
        } else {
            store.find_descendant_by_path(root.id, &path, Some(EdgeStatus::Open))?
        };
        match open {
            Some(id) => store.thread(id)?.ok_or_else(|| {
                ExternalError::Refused(format!("live agent path `{path}` not found"))
            })?,
            None => {
                let closed = store
                    .find_descendant_by_path(root.id, &path, None)?
                    .is_some();
                return Err(ExternalError::Refused(if closed {
                    format!("agent {path} is closed")
                } else {
                    format!("live agent path `{path}` not found")
                }));
            }
        }
    };
    Ok(Target {
        store,
        root,
        thread,
    })
}

fn journal(target: &Target, entry: &JournalEntry) -> Result<(), ExternalError> {
    let path = journal_path(Path::new(&target.root.rollout_path), target.root.id);
    Ok(append_journal(&path, entry)?)
}

/// Mail another process queued with [`send_external`].
#[derive(Debug)]
pub struct SentExternal {
    pub mail: Mail,
    pub recipient: ThreadRecord,
    /// Set when the store could not take the mail after the journal did: it is sent (the
    /// journal is its durable record) and the driver stores it; this says so.
    pub notice: Option<String>,
}

/// Queues mail from `/root` to `target`: journal first (synced: from then on the mail is sent),
/// then the store. Should the store refuse it, the live driver stores it from the journal
/// within a second, or the next `arbor resume`/`followup` does at its start.
pub fn send_external(
    home: &Path,
    session: &str,
    target: &str,
    kind: MailKind,
    content: &str,
) -> Result<SentExternal, ExternalError> {
    mail::check_content(content).map_err(ExternalError::Refused)?;
    let target = resolve(home, session, target)?;
    mail::check_recipient(kind, &target.thread.path).map_err(ExternalError::Refused)?;
    let mail = Mail::new(
        AgentPath::root(),
        target.thread.path.clone(),
        kind,
        content.to_string(),
    );
    journal(
        &target,
        &JournalEntry::Mail {
            recipient_id: target.thread.id,
            mail: mail.clone(),
        },
    )?;
    let notice = target
        .store
        .enqueue_mail(target.root.id, target.thread.id, &mail)
        .wait()
        .err()
        .map(|err| {
            format!(
                "the mail is in the session journal but the store did not take it now ({err}); \
                 the process driving the session, or the next `arbor resume` or `arbor followup`, \
                 stores and delivers it"
            )
        });
    Ok(SentExternal {
        mail,
        recipient: target.thread,
        notice,
    })
}

/// The status another process reports for a thread (read commands, `interrupt`, `close`).
/// The store's status is a projection committed a little after the rollout's lines, so where
/// it may lag, the end of the rollout decides:
/// - under a live driver (`driven`), the store's status, except that `pending_init` or
///   `queued` while the rollout shows a turn started is `running`;
/// - under a dead one, a final status as stored; an active one from the rollout's last turn
///   line: how that turn ended, or `interrupted: process_exit` for a turn cut by the exit.
pub fn reported_status(record: &ThreadRecord, driven: bool) -> AgentStatus {
    let stored = &record.status;
    let rollout = Path::new(&record.rollout_path);
    if driven {
        let starting = matches!(stored, AgentStatus::PendingInit | AgentStatus::Queued);
        if starting && tail_turn_open(rollout).unwrap_or(false) {
            return AgentStatus::Running;
        }
        return stored.clone();
    }
    if !stored.is_active() {
        return stored.clone();
    }
    match tail_status(rollout) {
        Ok(status) if !status.is_active() => status,
        _ => AgentStatus::Interrupted(PROCESS_EXIT.to_string()),
    }
}

/// The status another process reports for the target (see [`reported_status`]).
fn current_status(home: &Path, target: &Target) -> AgentStatus {
    let driven = Lease::holder(home, target.root.id).is_some();
    reported_status(&target.thread, driven)
}

/// Closes an agent of a live or stopped session; returns its previous status.
pub fn close_external(
    home: &Path,
    session: &str,
    target: &str,
) -> Result<AgentStatus, ExternalError> {
    let target = resolve(home, session, target)?;
    if target.thread.path.is_root() {
        return Err(ExternalError::Refused(
            "root is not a spawned agent".to_string(),
        ));
    }
    let previous = current_status(home, &target);
    journal(
        &target,
        &JournalEntry::Close {
            target_id: target.thread.id,
            at: Timestamp::now(),
        },
    )?;
    target
        .store
        .set_edge_status(target.thread.id, EdgeStatus::Closed)
        .wait()?;
    if Lease::holder(home, target.root.id).is_none() {
        target
            .store
            .set_thread_status(target.thread.id, &AgentStatus::Closed)
            .wait()?;
    }
    Ok(previous)
}

/// Interrupts an agent's running turn in a live session. A stopped session runs nothing, so
/// nothing changes there; either way the previous status is returned.
pub fn interrupt_external(
    home: &Path,
    session: &str,
    target: &str,
) -> Result<AgentStatus, ExternalError> {
    let target = resolve(home, session, target)?;
    let previous = current_status(home, &target);
    if Lease::holder(home, target.root.id).is_some() {
        journal(
            &target,
            &JournalEntry::Interrupt {
                target_id: target.thread.id,
                at: Timestamp::now(),
            },
        )?;
    }
    Ok(previous)
}

/// What a human's answer from the command line did to an approval request.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalAnswer {
    pub record: arbor_agent_graph::ApprovalRecord,
    /// The pending request is decided now (its waiter, if any, picks the answer up).
    pub decided: bool,
    /// The identical retry of the request runs once without asking.
    pub override_granted: bool,
}

/// `arbor approve` (`approve`) or `arbor deny`: answers approval request `request_id` of a live
/// or stopped session. A pending request is decided; an approval of a pending request or of a
/// denied one (guardian, user, no approver) also lets the identical retry through once, even
/// after a restart.
pub fn answer_external(
    home: &Path,
    session: &str,
    request_id: &str,
    approve: bool,
) -> Result<ExternalAnswer, ExternalError> {
    use arbor_agent_graph::{AnswerOutcome, HumanAnswer};
    let store = Store::open(home).map_err(OrchestratorError::from)?;
    let root = find_root(&store, session)?;
    let request_id = request_id.trim();
    let not_found = || {
        ExternalError::Refused(format!(
            "approval request `{request_id}` not found in session {}",
            root.id
        ))
    };
    let record = store
        .approval(request_id)?
        .filter(|record| record.session_id == root.id)
        .ok_or_else(not_found)?;
    let answer = if approve {
        let key = crate::approval::record_key(&record).ok_or_else(|| {
            ExternalError::Refused(format!(
                "approval request {request_id} is not a command and cannot be approved"
            ))
        })?;
        HumanAnswer::Approve(key)
    } else {
        HumanAnswer::Deny
    };
    let outcome = store.answer_approval(request_id, answer).wait()?;
    let refused =
        |what: String| ExternalError::Refused(format!("approval request {request_id} {what}"));
    let (decided, override_granted) = match outcome {
        AnswerOutcome::Decided => (true, approve),
        AnswerOutcome::Overridden => (false, true),
        AnswerOutcome::AlreadyOverridden => {
            return Err(refused("was already approved for one retry".to_string()));
        }
        AnswerOutcome::AlreadyDecided {
            outcome,
            decided_by,
        } => {
            let by = decided_by.map_or_else(|| "nobody".to_string(), |by| by.to_string());
            return Err(refused(format!("is already decided: {outcome} by {by}")));
        }
    };
    let record = store.approval(request_id)?.unwrap_or(record);
    Ok(ExternalAnswer {
        record,
        decided,
        override_granted,
    })
}
