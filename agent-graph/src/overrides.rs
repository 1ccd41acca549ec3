//! Human answers to approval requests and the overrides they leave: a request approved by a
//! human with no waiter to run it (a denial overridden, or a request whose waiter is gone)
//! lets the identical retry through once. Overrides live here, so they survive a restart.

use arbor_protocol::{AgentPath, AgentStatus, ThreadId, Timestamp};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::approvals::{
    ApprovalDecision, ApprovalOutcome, ApprovalRecord, DecidedBy, action_text, insert_approval,
};
use crate::approvals::{Replace, write_decision};
use crate::error::{Fail, OpResult};
use crate::threads::write_thread_status;
use crate::walk::parse_id;
use crate::{Store, StoreError, Ticket};

/// What makes a retry identical to the request it retries. The command is canonical (the
/// caller's business); `cwd` is the resolved working directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OverrideKey {
    pub requester: AgentPath,
    pub command: String,
    pub cwd: String,
    /// The request asked to run outside the sandbox.
    pub escalated: bool,
}

/// One override, used or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalOverride {
    /// The request the human approved.
    pub request_id: String,
    pub session_id: ThreadId,
    pub key: OverrideKey,
    pub granted_at: Timestamp,
    /// The request that used it (the approved request itself when its waiter ran it).
    pub used_by: Option<String>,
    pub used_at: Option<Timestamp>,
}

/// A human's answer from outside the runtime (`arbor approve` / `arbor deny`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HumanAnswer {
    /// Approve; `key` identifies the retry an override lets through.
    Approve(OverrideKey),
    Deny,
}

/// How [`Store::open_approval`] opened a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Opened {
    /// Recorded pending: someone must decide it.
    Pending,
    /// Recorded with the decision it came with.
    Recorded,
    /// An override let it through: recorded as allowed (this record).
    Overridden(Box<ApprovalRecord>),
}

/// What a human answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// The request was pending and is decided now. An approval also grants an override: the
    /// request's waiter uses it up when it runs the action; with no waiter left, the identical
    /// retry does.
    Decided,
    /// The request had been denied (by the guardian or a human) or had found no approver: the
    /// approval is an override for the identical retry; the recorded decision stays.
    Overridden,
    /// Refused: the request is already decided in a way the answer cannot change.
    AlreadyDecided {
        outcome: ApprovalOutcome,
        decided_by: Option<DecidedBy>,
    },
    /// Refused: the request already has an override.
    AlreadyOverridden,
}

const COLUMNS: &str =
    "request_id, session_id, requester, command, cwd, escalated, granted_at, used_by, used_at";

impl Store {
    /// Applies a human's answer to request `id` in one step, so it cannot race the driving
    /// process's own decision: a pending request is decided (an approval also grants an
    /// override); a denial or `no_approver` by anyone but the policy can be overridden by an
    /// approval; everything else is refused with the reason. Fails for an unknown id.
    pub fn answer_approval(&self, id: &str, answer: HumanAnswer) -> Ticket<AnswerOutcome> {
        let id = id.to_string();
        self.submit("answer approval", move |conn| {
            let current: Option<(String, Option<String>, String)> = conn
                .prepare_cached(
                    "SELECT outcome, decided_by, session_id FROM approvals WHERE id = ?1",
                )?
                .query_row([&id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()?;
            let Some((outcome, decided_by, session)) = current else {
                return Err(StoreError::UnknownApproval(id).into());
            };
            let outcome = ApprovalOutcome::parse(&outcome)
                .ok_or_else(|| Fail::corrupt("approval outcome", outcome.clone()))?;
            let decided_by = decided_by
                .map(|text| {
                    DecidedBy::parse(&text).ok_or_else(|| Fail::corrupt("decided_by", text))
                })
                .transpose()?;
            let overridden: bool = conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM approval_overrides WHERE request_id = ?1)",
                )?
                .query_row([&id], |row| row.get(0))?;
            let decision = |outcome| ApprovalDecision {
                outcome,
                decided_by: DecidedBy::User,
                risk_level: None,
                rationale: None,
                tokens: None,
            };
            match (outcome, &answer) {
                (ApprovalOutcome::Pending, HumanAnswer::Deny) => {
                    set_decision(conn, &id, &decision(ApprovalOutcome::Deny))?;
                    Ok(AnswerOutcome::Decided)
                }
                (ApprovalOutcome::Pending, HumanAnswer::Approve(key)) => {
                    set_decision(conn, &id, &decision(ApprovalOutcome::Allow))?;
                    insert_override(conn, &id, &session, key)?;
                    Ok(AnswerOutcome::Decided)
                }
                (ApprovalOutcome::Allow, _) => Ok(AnswerOutcome::AlreadyDecided {
                    outcome,
                    decided_by,
                }),
                (_, HumanAnswer::Approve(_)) if overridden => Ok(AnswerOutcome::AlreadyOverridden),
                (
                    ApprovalOutcome::Deny
                    | ApprovalOutcome::ReviewUnavailable
                    | ApprovalOutcome::NoApprover,
                    HumanAnswer::Approve(key),
                ) if !(outcome == ApprovalOutcome::Deny
                    && decided_by == Some(DecidedBy::Policy)) =>
                {
                    insert_override(conn, &id, &session, key)?;
                    Ok(AnswerOutcome::Overridden)
                }
                _ => Ok(AnswerOutcome::AlreadyDecided {
                    outcome,
                    decided_by,
                }),
            }
        })
    }

    /// Decides request `id` only if it is still pending; resolves to whether it did (a human
    /// may have answered it first from another process).
    pub fn decide_pending_approval(&self, id: &str, decision: ApprovalDecision) -> Ticket<bool> {
        self.close_approval(id, decision, None)
    }

    /// Like [`Store::decide_pending_approval`], and in the same commit sets the requester's
    /// status (back to `running`), whoever decided.
    pub fn close_approval(
        &self,
        id: &str,
        decision: ApprovalDecision,
        requester_status: Option<(ThreadId, AgentStatus)>,
    ) -> Ticket<bool> {
        if decision.outcome == ApprovalOutcome::Pending {
            return Ticket::ready(Err(StoreError::Invalid {
                what: "approval decision",
                message: "the outcome of a decision cannot be pending".into(),
            }));
        }
        let id = id.to_string();
        self.submit("decide pending approval", move |conn| {
            let decided = set_decision(conn, &id, &decision)? > 0;
            if let Some((requester, status)) = &requester_status {
                write_thread_status(conn, *requester, status)?;
            }
            Ok(decided)
        })
    }

    /// Opens request `record` in one commit: when `session` holds an unused override for
    /// `key`, the override is used up and the request is recorded as allowed by the user
    /// (rationale `override: the user approved request <id>`); otherwise it is recorded as it
    /// is: pending, with its requester's status set to `status`, or already decided (nobody
    /// could be asked), leaving the status alone.
    pub fn open_approval(
        &self,
        record: ApprovalRecord,
        status: AgentStatus,
        key: OverrideKey,
    ) -> Ticket<Opened> {
        let action = match action_text(&record) {
            Ok(text) => text,
            Err(err) => return Ticket::ready(Err(err)),
        };
        self.submit("open approval request", move |conn| {
            let mut record = record;
            if let Some(overridden) = unused_override(conn, record.session_id, &key)? {
                mark_used(conn, &overridden, &record.id)?;
                record.outcome = ApprovalOutcome::Allow;
                record.decided_by = Some(DecidedBy::User);
                record.rationale =
                    Some(format!("override: the user approved request {overridden}"));
                record.decided_at = Some(Timestamp::now().max(record.requested_at));
                insert_approval(conn, &record, &action)?;
                return Ok(Opened::Overridden(Box::new(record)));
            }
            insert_approval(conn, &record, &action)?;
            if record.outcome != ApprovalOutcome::Pending {
                return Ok(Opened::Recorded);
            }
            write_thread_status(conn, record.requester_id, &status)?;
            Ok(Opened::Pending)
        })
    }

    /// Uses up the oldest unused override for `key` in `session` on behalf of request
    /// `used_by`; resolves to the overridden request's id, `None` when there is none.
    pub fn take_override(
        &self,
        session: ThreadId,
        key: OverrideKey,
        used_by: &str,
    ) -> Ticket<Option<String>> {
        let used_by = used_by.to_string();
        self.submit("take approval override", move |conn| {
            let found = unused_override(conn, session, &key)?;
            if let Some(request_id) = &found {
                mark_used(conn, request_id, &used_by)?;
            }
            Ok(found)
        })
    }

    /// Uses up the override granted with request `id` on behalf of the request itself (its
    /// waiter runs the approved action); resolves to whether there was one left.
    pub fn use_own_override(&self, id: &str) -> Ticket<bool> {
        let id = id.to_string();
        self.submit("use own approval override", move |conn| {
            Ok(mark_used(conn, &id, &id)? > 0)
        })
    }

    /// Every override of a session, in grant order.
    pub fn overrides(&self, session: ThreadId) -> Result<Vec<ApprovalOverride>, StoreError> {
        self.read("list approval overrides", |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM approval_overrides WHERE session_id = ?1
                 ORDER BY granted_at, rowid"
            ))?;
            let mut rows = stmt.query([session.to_string()])?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(from_row(row)?);
            }
            Ok(out)
        })
    }
}

fn unused_override(
    conn: &Connection,
    session: ThreadId,
    key: &OverrideKey,
) -> OpResult<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT request_id FROM approval_overrides
             WHERE session_id = ?1 AND requester = ?2 AND command = ?3 AND cwd = ?4
               AND escalated = ?5 AND used_by IS NULL
             ORDER BY granted_at, rowid LIMIT 1",
        )?
        .query_row(
            params![
                session.to_string(),
                key.requester.as_str(),
                key.command,
                key.cwd,
                key.escalated
            ],
            |row| row.get(0),
        )
        .optional()?)
}

fn set_decision(conn: &Connection, id: &str, decision: &ApprovalDecision) -> OpResult<usize> {
    write_decision(conn, id, decision, Replace::Pending)
}

fn insert_override(conn: &Connection, id: &str, session: &str, key: &OverrideKey) -> OpResult<()> {
    conn.prepare_cached(
        "INSERT INTO approval_overrides (request_id, session_id, requester, command, cwd,
             escalated, granted_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        id,
        session,
        key.requester.as_str(),
        key.command,
        key.cwd,
        key.escalated,
        Timestamp::now().as_millis(),
    ])?;
    Ok(())
}

fn mark_used(conn: &Connection, request_id: &str, used_by: &str) -> OpResult<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE approval_overrides SET used_by = ?2, used_at = ?3
             WHERE request_id = ?1 AND used_by IS NULL",
        )?
        .execute(params![request_id, used_by, Timestamp::now().as_millis()])?)
}

fn from_row(row: &Row<'_>) -> OpResult<ApprovalOverride> {
    let requester: String = row.get(2)?;
    Ok(ApprovalOverride {
        request_id: row.get(0)?,
        session_id: parse_id(row.get_ref(1)?.as_str()?)?,
        key: OverrideKey {
            requester: AgentPath::from_persisted(&requester)
                .map_err(|_| Fail::corrupt("agent path", requester.clone()))?,
            command: row.get(3)?,
            cwd: row.get(4)?,
            escalated: row.get(5)?,
        },
        granted_at: Timestamp::from_millis(row.get(6)?),
        used_by: row.get(7)?,
        used_at: row.get::<_, Option<i64>>(8)?.map(Timestamp::from_millis),
    })
}
