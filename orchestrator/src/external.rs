//! What other `arbor` processes do to a session, driven or not: queue mail (`send`,
//! `followup`), close or interrupt an agent, answer an approval request. Each is a line
//! appended to the session's log under its lock and synced before the command returns; a live
//! driver reads it back within its poll interval and acts on it, and the next process to take
//! the session over brings the store and the rollouts up to it. Nothing here writes the store.

use std::path::Path;

use arbor_agent_graph::{AgentRow, AnswerOutcome, ApprovalOutcome, ApprovalRecord, answer_outcome};
use arbor_protocol::{
    AgentPath, AgentStatus, ApprovalDecided, Mail, MailKind, RolloutItem, ThreadId, UserAnswer,
    UserMail, UserTarget,
};
use arbor_rollout::log::append_external;

use crate::error::OrchestratorError;
use crate::lease::Lease;
use crate::mail;
use crate::open::SessionView;

/// The open agent of the view that `target` (a path or a thread id) names.
fn resolve<'a>(view: &'a SessionView, target: &str) -> Result<&'a AgentRow, OrchestratorError> {
    let target = target.trim();
    let session = view.root.id();
    if let Ok(id) = ThreadId::parse(target) {
        let row = view.state.thread(id).ok_or_else(|| {
            OrchestratorError::Refused(format!("agent `{target}` not found in session {session}"))
        })?;
        if view.state.behind_closed(row) {
            return Err(OrchestratorError::Refused(format!(
                "agent {} is closed",
                row.record.path()
            )));
        }
        return Ok(row);
    }
    let path = AgentPath::root()
        .resolve(target)
        .map_err(|err| OrchestratorError::Refused(err.to_string()))?;
    match view.state.at_path(&path) {
        Some(row) if !view.state.behind_closed(row) => Ok(row),
        Some(_) => Err(OrchestratorError::Refused(format!(
            "agent {path} is closed"
        ))),
        None => Err(OrchestratorError::Refused(format!(
            "live agent path `{path}` not found"
        ))),
    }
}

/// Mail another process queued with [`send_external`].
#[derive(Debug)]
pub struct SentExternal {
    pub mail: Mail,
    pub recipient: arbor_agent_graph::ThreadRecord,
}

/// Queues mail from `/root` to `target`: a `user_mail` line, synced before this returns. From
/// then on the mail is sent: `arbor mail` lists it, a live driver delivers it within its poll
/// interval, and the next `resume` or `followup` finds it.
pub fn send_external(
    home: &Path,
    session: &str,
    target: &str,
    kind: MailKind,
    content: &str,
) -> Result<SentExternal, OrchestratorError> {
    mail::check_content(content).map_err(OrchestratorError::Refused)?;
    let view = SessionView::open(home, session)?;
    let target = resolve(&view, target)?;
    mail::check_recipient(kind, target.record.path()).map_err(OrchestratorError::Refused)?;
    let mail = Mail::from_user(target.record.path().clone(), kind, content.to_string());
    let line = RolloutItem::UserMail(Box::new(UserMail {
        recipient_id: target.record.id(),
        mail: mail.clone(),
    }));
    append_external(&view.log_path, target.record.id(), &[line])?;
    Ok(SentExternal {
        mail,
        recipient: target.record.clone(),
    })
}

/// Closes an agent of a live or stopped session; returns its previous status.
pub fn close_external(
    home: &Path,
    session: &str,
    target: &str,
) -> Result<AgentStatus, OrchestratorError> {
    let view = SessionView::open(home, session)?;
    let target = resolve(&view, target)?;
    if target.record.path().is_root() {
        return Err(OrchestratorError::Refused(
            "root is not a spawned agent".to_string(),
        ));
    }
    let previous = target.reported_status(view.driven);
    let line = RolloutItem::UserClose(UserTarget {
        target_id: target.record.id(),
    });
    append_external(&view.log_path, target.record.id(), &[line])?;
    Ok(previous)
}

/// Interrupts an agent's running turn in a live session. A stopped session runs nothing, so
/// nothing changes there; either way the previous status is returned.
pub fn interrupt_external(
    home: &Path,
    session: &str,
    target: &str,
) -> Result<AgentStatus, OrchestratorError> {
    let view = SessionView::open(home, session)?;
    let target = resolve(&view, target)?;
    let previous = target.reported_status(view.driven);
    if view.driven {
        let line = RolloutItem::UserInterrupt(UserTarget {
            target_id: target.record.id(),
        });
        append_external(&view.log_path, target.record.id(), &[line])?;
    }
    Ok(previous)
}

/// What a human's answer from the command line did to an approval request.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalAnswer {
    pub record: ApprovalRecord,
    /// The pending request is decided (by this process, or by the driver it was handed to).
    pub decided: bool,
    /// The identical retry of the request runs once without asking.
    pub override_granted: bool,
    /// A live driver decides with the answer; this is its pid.
    pub handed_to: Option<u32>,
}

/// `arbor approve` (`approve`) or `arbor deny`: answers approval request `request_id` of a live
/// or stopped session. A pending request is decided; an approval of a pending request or of a
/// denied one (guardian, user, no approver) also lets the identical retry through once, even
/// after a restart. A live driver gets the answer as a `user_answer` line and decides with it;
/// a stopped session is answered here, under its lease, with the decision's own lines.
pub fn answer_external(
    home: &Path,
    session: &str,
    request_id: &str,
    approve: bool,
) -> Result<ExternalAnswer, OrchestratorError> {
    answer_external_with(home, session, request_id, approve, false)
}

/// Like [`answer_external`]; `for_session` (with `approve`) also asks a live driver to let the
/// same command in the same cwd run without asking for the rest of its run. A stopped session
/// has no run to remember it for: there the approval is the same as `arbor approve`.
pub fn answer_external_with(
    home: &Path,
    session: &str,
    request_id: &str,
    approve: bool,
    for_session: bool,
) -> Result<ExternalAnswer, OrchestratorError> {
    let view = SessionView::open(home, session)?;
    let request_id = request_id.trim();
    let record = view.state.approval(request_id).cloned().ok_or_else(|| {
        OrchestratorError::Refused(format!(
            "approval request `{request_id}` not found in session {}",
            view.root.id()
        ))
    })?;
    let key = crate::approval::record_key(&record);
    if approve && key.is_none() {
        return Err(OrchestratorError::Refused(format!(
            "approval request {request_id} is not a command and cannot be approved"
        )));
    }
    let refused =
        |what: String| OrchestratorError::Refused(format!("approval request {request_id} {what}"));
    let waiting = view.state.answers.get(request_id).copied();
    if record.outcome == ApprovalOutcome::Pending && waiting.is_some() {
        return Err(refused(
            "is already answered; the process driving the session decides with it".to_string(),
        ));
    }
    // An approval handed to a driver that has not acted on it yet counts as granted.
    let overridden = view.state.override_of(request_id).is_some() || waiting == Some(true);
    let outcome = answer_outcome(record.outcome, record.decided_by, overridden, approve);
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
    // Without a driver this process decides, holding the lease so that none starts meanwhile.
    let lease = match Lease::acquire(home, view.root.id()) {
        Ok(lease) => Some(lease),
        Err(OrchestratorError::Held { .. }) => None,
        Err(err) => return Err(err),
    };
    let requester = record.requester_id;
    let mut lines = Vec::new();
    let handed_to = if lease.is_some() {
        if decided {
            lines.push(RolloutItem::ApprovalDecided(Box::new(ApprovalDecided {
                request_id: request_id.to_string(),
                outcome: if approve { "allow" } else { "deny" }.to_string(),
                decided_by: Some("user".to_string()),
                risk_level: None,
                rationale: None,
                tokens: None,
            })));
        }
        if override_granted && let Some(key) = &key {
            lines.push(crate::approval::override_line(request_id, key));
        }
        None
    } else {
        lines.push(RolloutItem::UserAnswer(UserAnswer {
            request_id: request_id.to_string(),
            approve,
            for_session: approve && for_session,
        }));
        Lease::holder(home, view.root.id())
    };
    append_external(&view.log_path, requester, &lines)?;
    drop(lease);
    Ok(ExternalAnswer {
        record,
        decided,
        override_granted,
        handed_to,
    })
}
