//! Human answers to approval requests and the overrides they leave: a request approved by a
//! human with no waiter to run it (a denial overridden, or a request whose waiter is gone)
//! lets the identical retry through once. Overrides are log lines, projected here, so they
//! survive a restart.

use arbor_protocol::{AgentPath, ThreadId, Timestamp};
use rusqlite::{Connection, Row, params};

use crate::approvals::{ApprovalOutcome, DecidedBy};
use crate::error::{Fail, OpResult};
use crate::walk::parse_id;
use crate::{Store, StoreError};

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

pub(crate) const COLUMNS: &str =
    "request_id, session_id, requester, command, cwd, escalated, granted_at, used_by, used_at";

/// What a human's answer does to a request: a pending request is decided (an approval also
/// grants an override, used up by the request's waiter or, with none left, by its identical
/// retry); a denial or `no_approver` by anyone but the policy can be overridden by an
/// approval; everything else is refused with the reason.
pub fn answer_outcome(
    outcome: ApprovalOutcome,
    decided_by: Option<DecidedBy>,
    overridden: bool,
    approve: bool,
) -> AnswerOutcome {
    let refused = AnswerOutcome::AlreadyDecided {
        outcome,
        decided_by,
    };
    match (outcome, approve) {
        (ApprovalOutcome::Pending, _) => AnswerOutcome::Decided,
        (ApprovalOutcome::Allow, _) => refused,
        (_, true) if overridden => AnswerOutcome::AlreadyOverridden,
        (ApprovalOutcome::Deny, true) if decided_by == Some(DecidedBy::Policy) => refused,
        (
            ApprovalOutcome::Deny
            | ApprovalOutcome::ReviewUnavailable
            | ApprovalOutcome::NoApprover,
            true,
        ) => AnswerOutcome::Overridden,
        (_, false) => refused,
    }
}

impl Store {
    /// Every override of a session, in grant order.
    pub fn overrides(&self, session: ThreadId) -> Result<Vec<ApprovalOverride>, StoreError> {
        self.read("list approval overrides", |conn| {
            crate::query::collect(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM approval_overrides WHERE session_id = ?1
                     ORDER BY granted_at, rowid"
                ),
                [session.to_string()],
                override_from_row,
            )
        })
    }
}

/// Writes an override as the session state holds it.
pub(crate) fn upsert_override(conn: &Connection, grant: &ApprovalOverride) -> OpResult<()> {
    conn.prepare_cached(
        "INSERT INTO approval_overrides (request_id, session_id, requester, command, cwd,
             escalated, granted_at, used_by, used_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (request_id) DO UPDATE SET used_by = excluded.used_by,
             used_at = excluded.used_at",
    )?
    .execute(params![
        grant.request_id,
        grant.session_id.to_string(),
        grant.key.requester.as_str(),
        grant.key.command,
        grant.key.cwd,
        grant.key.escalated,
        grant.granted_at.as_millis(),
        grant.used_by,
        grant.used_at.map(Timestamp::as_millis),
    ])?;
    Ok(())
}

pub(crate) fn override_from_row(row: &Row<'_>) -> OpResult<ApprovalOverride> {
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
