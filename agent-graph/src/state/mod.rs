//! The state of one session as the store holds it, and how each line of the session log
//! changes it. Pure data: no SQL here. The store loads a session's state, the log's lines are
//! applied to it in order ([`SessionState::apply`]), and the rows they changed are written back
//! in one transaction ([`crate::Store::commit`]). Read commands apply the lines the store has
//! not seen yet to a loaded state in memory, so they show everything in the log without
//! writing anything; `doctor --rebuild` applies the whole log to an empty state.

mod apply;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arbor_protocol::{AgentPath, AgentStatus, Mail, MailId, ThreadId, Timestamp, Usage};

use crate::{ApprovalOverride, ApprovalRecord, EdgeStatus, ThreadRecord};

/// The reason a turn that was in flight when its process died is given.
pub const PROCESS_EXIT: &str = "process_exit";

/// How far into the session log a state has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogPosition {
    /// The number of the last line applied (0: none).
    pub seq: u64,
    /// The offset just after it.
    pub offset: u64,
}

/// One agent of the session.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRow {
    pub record: ThreadRecord,
    /// The edge from its parent; `None` for the root.
    pub edge: Option<EdgeStatus>,
    /// A turn has started and not ended.
    pub turn_open: bool,
    /// How its last turn ended, if one did.
    pub last_end: Option<AgentStatus>,
    pub usage: Usage,
    /// The number of the last log line of this agent.
    pub last_seq: u64,
}

impl AgentRow {
    /// The status to report: the recorded one while a process drives the session; otherwise a
    /// turn cut by the driver's exit is `interrupted: process_exit`, and any other active
    /// status falls back to how the last turn ended.
    pub fn reported_status(&self, driven: bool) -> AgentStatus {
        let status = &self.record.status;
        if driven || !status.is_active() {
            return status.clone();
        }
        if self.turn_open {
            return AgentStatus::Interrupted(PROCESS_EXIT.to_string());
        }
        self.last_end.clone().unwrap_or(AgentStatus::PendingInit)
    }
}

/// A mail not yet consumed by its recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailRow {
    pub recipient_id: ThreadId,
    pub mail: Mail,
}

/// Rows changed since the state was loaded or last committed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub threads: BTreeSet<ThreadId>,
    /// Mail added, by its place in [`SessionState::mail`].
    pub mail: BTreeSet<u64>,
    /// Mail consumed, and when.
    pub consumed: Vec<(MailId, Timestamp)>,
    pub approvals: BTreeSet<String>,
    pub overrides: BTreeSet<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
            && self.mail.is_empty()
            && self.consumed.is_empty()
            && self.approvals.is_empty()
            && self.overrides.is_empty()
    }

    /// Adds `other` (changes left over from a commit that failed).
    pub fn merge(&mut self, other: Changes) {
        self.threads.extend(other.threads);
        self.mail.extend(other.mail);
        self.consumed.extend(other.consumed);
        self.approvals.extend(other.approvals);
        self.overrides.extend(other.overrides);
    }
}

/// Everything the store holds about one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionState {
    pub session: Option<ThreadId>,
    pub applied: LogPosition,
    /// Every agent, by id (ids sort by creation).
    pub threads: BTreeMap<ThreadId, AgentRow>,
    /// Unconsumed mail in the order it was sent.
    pub mail: BTreeMap<u64, MailRow>,
    mail_index: HashMap<MailId, u64>,
    next_mail: u64,
    /// Approval requests in the order they were made.
    pub approvals: Vec<ApprovalRecord>,
    approval_index: HashMap<String, usize>,
    /// Answers given from another process that a driver has yet to act on (decide the request
    /// with, or grant an override for), by request.
    pub answers: BTreeMap<String, bool>,
    /// Overrides in the order they were granted.
    pub overrides: Vec<ApprovalOverride>,
    override_index: HashMap<String, usize>,
    changes: Changes,
    /// The stamp of the line being applied.
    now: Timestamp,
    /// Lines that could not be applied (a mail to a path nobody holds), for doctor.
    pub notices: Vec<String>,
}

impl SessionState {
    /// An empty state for `session` (nothing applied yet).
    pub fn new(session: ThreadId) -> Self {
        Self {
            session: Some(session),
            ..Self::default()
        }
    }

    /// The session id.
    pub fn session_id(&self) -> Option<ThreadId> {
        self.session
    }

    /// The root agent.
    pub fn root(&self) -> Option<&AgentRow> {
        self.session.and_then(|id| self.threads.get(&id))
    }

    pub fn thread(&self, id: ThreadId) -> Option<&AgentRow> {
        self.threads.get(&id)
    }

    /// The open agent at `path` (the root, or one whose edge is open), else the newest agent
    /// there.
    pub fn at_path(&self, path: &AgentPath) -> Option<&AgentRow> {
        let mut newest = None;
        for row in self.threads.values().rev() {
            if row.record.path() != path {
                continue;
            }
            if row.edge != Some(EdgeStatus::Closed) {
                return Some(row);
            }
            newest.get_or_insert(row);
        }
        newest
    }

    /// Whether `row` or one of its ancestors sits behind a closed edge.
    pub fn behind_closed(&self, row: &AgentRow) -> bool {
        let mut current = Some(row);
        while let Some(row) = current {
            if row.edge == Some(EdgeStatus::Closed) {
                return true;
            }
            current = row.record.parent_id().and_then(|id| self.threads.get(&id));
        }
        false
    }

    /// Unconsumed mail of `recipient`, in the order sent.
    pub fn unread(&self, recipient: ThreadId) -> impl Iterator<Item = &Mail> {
        self.mail
            .values()
            .filter(move |row| row.recipient_id == recipient)
            .map(|row| &row.mail)
    }

    pub fn approval(&self, id: &str) -> Option<&ApprovalRecord> {
        self.approval_index.get(id).map(|at| &self.approvals[*at])
    }

    pub fn override_of(&self, request_id: &str) -> Option<&ApprovalOverride> {
        self.override_index
            .get(request_id)
            .map(|at| &self.overrides[*at])
    }

    /// Pending requests of `requester`.
    pub fn pending_approvals(&self, requester: ThreadId) -> usize {
        self.approvals
            .iter()
            .filter(|a| a.requester_id == requester && a.outcome == crate::ApprovalOutcome::Pending)
            .count()
    }

    /// Takes the rows changed so far (to commit them).
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// Puts back changes whose commit failed, to be written with the next ones.
    pub fn restore_changes(&mut self, changes: Changes) {
        self.changes.merge(changes);
    }

    /// Whether rows changed since the last [`Self::take_changes`].
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    // Loading, for the store.

    pub(crate) fn load_thread(&mut self, row: AgentRow) {
        self.threads.insert(row.record.id(), row);
    }

    pub(crate) fn load_mail(&mut self, order: u64, row: MailRow) {
        self.mail_index.insert(row.mail.id, order);
        self.mail.insert(order, row);
        self.next_mail = self.next_mail.max(order + 1);
    }

    pub(crate) fn load_approval(&mut self, record: ApprovalRecord, answer: Option<bool>) {
        if let Some(answer) = answer {
            self.answers.insert(record.id.clone(), answer);
        }
        self.approval_index
            .insert(record.id.clone(), self.approvals.len());
        self.approvals.push(record);
    }

    pub(crate) fn load_override(&mut self, grant: ApprovalOverride) {
        self.override_index
            .insert(grant.request_id.clone(), self.overrides.len());
        self.overrides.push(grant);
    }
}
