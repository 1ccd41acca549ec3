//! How one line of the session log changes the session's state. Applying the same lines in
//! the same order always gives the same state: the live store, a store brought up to the log
//! at open, and one rebuilt from the first line agree.

use arbor_protocol::{
    AgentStatus, ApprovalDecided, ApprovalRequested, Mail, RolloutItem, RolloutLine, SessionMeta,
    ThreadId, Timestamp, WorktreeFact, rollout_relative_path,
};

use super::{AgentRow, LogPosition, MailRow, SessionState};
use crate::{
    ApprovalOutcome, ApprovalOverride, ApprovalRecord, DecidedBy, EdgeStatus, OverrideKey,
    ThreadRecord,
};

impl SessionState {
    /// Applies one log line; `end` is the offset just after it. Lines already applied (a
    /// number at or below [`SessionState::applied`]) change nothing.
    pub fn apply(&mut self, line: &RolloutLine, end: u64) {
        let (Some(seq), Some(thread)) = (line.seq, line.thread) else {
            return;
        };
        if seq <= self.applied.seq {
            return;
        }
        self.applied = LogPosition { seq, offset: end };
        let at = line.timestamp;
        self.now = at;
        match &line.item {
            RolloutItem::SessionMeta(meta) => self.spawned(meta, at),
            RolloutItem::Status(changed) => self.set_status(thread, changed.status.clone()),
            // A started turn means the agent runs, whenever the session's own status line
            // for it lands: a turn's first lines may reach the log before that line does.
            RolloutItem::TurnStarted(_) => self.change(thread, |row| {
                row.turn_open = true;
                if row.edge != Some(EdgeStatus::Closed) {
                    row.record.status = AgentStatus::Running;
                }
            }),
            RolloutItem::TurnCompleted(done) => {
                self.ended(thread, AgentStatus::Completed(done.last_message.clone()));
            }
            RolloutItem::TurnAborted(aborted) => self.ended(thread, aborted.status()),
            RolloutItem::MailSent(mail) => match self.recipient_of(mail) {
                Some(recipient) => self.add_mail(recipient, (**mail).clone()),
                None => self.notices.push(format!(
                    "line {seq}: mail {} to {}, which is not an agent of the session",
                    mail.id, mail.recipient
                )),
            },
            RolloutItem::UserMail(user) => self.add_mail(user.recipient_id, user.mail.clone()),
            RolloutItem::MailConsumed(consumed) => self.consume(consumed.mail.id, at),
            RolloutItem::AgentClosed(closed) => self.close(closed.target_id),
            RolloutItem::UserClose(target) => self.close(target.target_id),
            RolloutItem::ApprovalRequested(asked) => self.requested(thread, asked, at),
            RolloutItem::ApprovalDecided(decided) => self.decided(decided, at),
            RolloutItem::UserAnswer(answer) => {
                // An answer waits for a driver to act on it (a decision, or an override).
                if self.approval(&answer.request_id).is_some() {
                    self.answers
                        .insert(answer.request_id.clone(), answer.approve);
                    self.changes.approvals.insert(answer.request_id.clone());
                }
            }
            RolloutItem::ApprovalOverride(grant) => {
                self.grant(thread, grant, at);
                if self.answers.remove(&grant.request_id).is_some() {
                    self.changes.approvals.insert(grant.request_id.clone());
                }
            }
            RolloutItem::OverrideUsed(used) => {
                if let Some(index) = self.override_index.get(&used.request_id).copied() {
                    let grant = &mut self.overrides[index];
                    if grant.used_by.is_none() {
                        grant.used_by = Some(used.used_by.clone());
                        grant.used_at = Some(at);
                        self.changes.overrides.insert(used.request_id.clone());
                    }
                }
            }
            RolloutItem::Usage(line) => self.change(thread, |row| row.usage.add(line.usage)),
            RolloutItem::Worktree(fact) => self.worktree_fact(thread, fact, at),
            RolloutItem::ResponseItem(_)
            | RolloutItem::Compacted(_)
            | RolloutItem::ModelFallback(_)
            | RolloutItem::UserInterrupt(_) => {}
        }
        self.change(thread, |row| row.last_seq = seq);
    }

    /// Runs `edit` on an agent's row and marks it changed; unknown agents are left alone.
    fn change(&mut self, thread: ThreadId, edit: impl FnOnce(&mut AgentRow)) {
        if let Some(row) = self.threads.get_mut(&thread) {
            edit(row);
            row.record.updated_at = self.now;
            self.changes.threads.insert(thread);
        }
    }

    fn spawned(&mut self, meta: &SessionMeta, at: Timestamp) {
        if self.session.is_none() && meta.parent_id.is_none() {
            self.session = Some(meta.thread_id);
        }
        let mut record =
            ThreadRecord::from_meta(meta, rollout_relative_path(at, meta.thread_id), at);
        record.status = AgentStatus::PendingInit;
        let row = AgentRow {
            record,
            edge: meta.parent_id.map(|_| EdgeStatus::Open),
            turn_open: false,
            last_end: None,
            usage: Default::default(),
            last_seq: 0,
        };
        self.threads.insert(meta.thread_id, row);
        self.changes.threads.insert(meta.thread_id);
    }

    fn worktree_fact(&mut self, thread: ThreadId, fact: &WorktreeFact, at: Timestamp) {
        let changed = match (fact, self.worktrees.get_mut(&thread)) {
            (WorktreeFact::Created(created), None) if self.threads.contains_key(&thread) => {
                let record = crate::WorktreeRecord::created(thread, created, at);
                self.worktrees.insert(thread, record);
                true
            }
            (_, Some(record)) => record.apply(fact, at),
            (_, None) => false,
        };
        if changed {
            self.changes.worktrees.insert(thread);
        }
    }

    fn set_status(&mut self, thread: ThreadId, status: AgentStatus) {
        self.change(thread, |row| {
            // A closed agent stays closed, whatever a late status line of its own says.
            if row.edge != Some(EdgeStatus::Closed) {
                row.record.status = status;
            }
        });
    }

    fn ended(&mut self, thread: ThreadId, status: AgentStatus) {
        self.change(thread, |row| {
            row.turn_open = false;
            row.last_end = Some(status.clone());
            if row.edge != Some(EdgeStatus::Closed) {
                row.record.status = status;
            }
        });
    }

    fn close(&mut self, target: ThreadId) {
        self.change(target, |row| {
            if row.edge.is_some() {
                row.edge = Some(EdgeStatus::Closed);
                row.record.status = AgentStatus::Closed;
            }
        });
    }

    /// The newest agent of the session at the mail's recipient path (a closed agent's path may
    /// be taken again by a later spawn).
    fn recipient_of(&self, mail: &Mail) -> Option<ThreadId> {
        self.threads
            .values()
            .rev()
            .find(|row| *row.record.path() == mail.recipient)
            .map(|row| row.record.id())
    }

    fn add_mail(&mut self, recipient: ThreadId, mail: Mail) {
        if self.mail_index.contains_key(&mail.id) {
            return;
        }
        let order = self.next_mail;
        self.next_mail += 1;
        self.mail_index.insert(mail.id, order);
        self.mail.insert(
            order,
            MailRow {
                recipient_id: recipient,
                mail,
            },
        );
        self.changes.mail.insert(order);
    }

    fn consume(&mut self, id: arbor_protocol::MailId, at: Timestamp) {
        if let Some(order) = self.mail_index.remove(&id) {
            self.mail.remove(&order);
            // Added and consumed between two commits: the row never needs writing.
            if !self.changes.mail.remove(&order) {
                self.changes.consumed.push((id, at));
            }
        }
    }

    fn requested(&mut self, thread: ThreadId, asked: &ApprovalRequested, at: Timestamp) {
        if self.approval_index.contains_key(&asked.request_id) {
            return;
        }
        let (Some(session), Some(requester)) = (self.session, self.threads.get(&thread)) else {
            return;
        };
        let mut record = ApprovalRecord::pending(
            asked.request_id.clone(),
            session,
            thread,
            requester.record.path().clone(),
            asked.action.clone(),
            asked.justification.clone(),
        );
        record.requested_at = at;
        self.approval_index
            .insert(record.id.clone(), self.approvals.len());
        self.changes.approvals.insert(record.id.clone());
        self.approvals.push(record);
    }

    /// The first decision of a request stands.
    fn decided(&mut self, decided: &ApprovalDecided, at: Timestamp) {
        let Some(index) = self.approval_index.get(&decided.request_id).copied() else {
            return;
        };
        let record = &mut self.approvals[index];
        let outcome = ApprovalOutcome::parse(&decided.outcome);
        let (Some(outcome), ApprovalOutcome::Pending) = (outcome, record.outcome) else {
            return;
        };
        if outcome == ApprovalOutcome::Pending {
            return;
        }
        record.outcome = outcome;
        record.decided_by = decided.decided_by.as_deref().and_then(DecidedBy::parse);
        record.risk_level = decided.risk_level.clone();
        record.rationale = decided.rationale.clone();
        record.tokens = decided.tokens;
        record.decided_at = Some(at.max(record.requested_at));
        self.answers.remove(&decided.request_id);
        self.changes.approvals.insert(decided.request_id.clone());
    }

    fn grant(&mut self, thread: ThreadId, grant: &arbor_protocol::ApprovalOverride, at: Timestamp) {
        if self.override_index.contains_key(&grant.request_id) {
            return;
        }
        let (Some(session), Some(requester)) = (self.session, self.threads.get(&thread)) else {
            return;
        };
        let row = ApprovalOverride {
            request_id: grant.request_id.clone(),
            session_id: session,
            key: OverrideKey {
                requester: requester.record.path().clone(),
                command: grant.command.clone(),
                cwd: grant.cwd.clone(),
                escalated: grant.escalated,
            },
            granted_at: at,
            used_by: None,
            used_at: None,
        };
        self.override_index
            .insert(row.request_id.clone(), self.overrides.len());
        self.changes.overrides.insert(row.request_id.clone());
        self.overrides.push(row);
    }
}
