//! The approval log (behaviour §7): every request, who decided it, how, and at what cost.

use std::fmt;

use arbor_protocol::{AgentPath, ThreadId, Timestamp};
use rusqlite::{Connection, Row, params};
use serde_json::Value;

use crate::error::{Fail, OpResult};
use crate::walk::parse_id;
use crate::{Store, StoreError};

/// How an approval request ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalOutcome {
    Pending,
    Allow,
    Deny,
    /// The reviewer could not complete (timeout, transport); the action was blocked.
    ReviewUnavailable,
    /// Nobody was there to answer within the wait.
    NoApprover,
}

impl ApprovalOutcome {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::ReviewUnavailable => "review_unavailable",
            Self::NoApprover => "no_approver",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            "review_unavailable" => Some(Self::ReviewUnavailable),
            "no_approver" => Some(Self::NoApprover),
            _ => None,
        }
    }
}

impl fmt::Display for ApprovalOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who decided an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecidedBy {
    User,
    Guardian,
    Policy,
}

impl DecidedBy {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Guardian => "guardian",
            Self::Policy => "policy",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "user" => Some(Self::User),
            "guardian" => Some(Self::Guardian),
            "policy" => Some(Self::Policy),
            _ => None,
        }
    }
}

impl fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One approval request and, once decided, its decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRecord {
    pub id: String,
    pub session_id: ThreadId,
    pub requester_id: ThreadId,
    pub requester: AgentPath,
    /// The exact planned action.
    pub action: Value,
    pub justification: Option<String>,
    pub outcome: ApprovalOutcome,
    pub decided_by: Option<DecidedBy>,
    pub risk_level: Option<String>,
    pub rationale: Option<String>,
    /// Model tokens the review cost.
    pub tokens: Option<u64>,
    pub requested_at: Timestamp,
    pub decided_at: Option<Timestamp>,
}

impl ApprovalRecord {
    /// A new pending request made now.
    pub fn pending(
        id: String,
        session_id: ThreadId,
        requester_id: ThreadId,
        requester: AgentPath,
        action: Value,
        justification: Option<String>,
    ) -> Self {
        Self {
            id,
            session_id,
            requester_id,
            requester,
            action,
            justification,
            outcome: ApprovalOutcome::Pending,
            decided_by: None,
            risk_level: None,
            rationale: None,
            tokens: None,
            requested_at: Timestamp::now(),
            decided_at: None,
        }
    }
}

pub(crate) const COLUMNS: &str = "id, session_id, requester_id, requester, action, justification, outcome, \
                       decided_by, risk_level, rationale, tokens, requested_at, decided_at";

impl Store {
    /// One request by id.
    pub fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
        self.read("read approval", |conn| {
            let mut found = query(
                conn,
                &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
                id,
            )?;
            Ok(found.pop())
        })
    }

    /// Every request of a session, in request order.
    pub fn approvals(&self, session_id: ThreadId) -> Result<Vec<ApprovalRecord>, StoreError> {
        self.read("list approvals", |conn| {
            query(
                conn,
                &format!("SELECT {COLUMNS} FROM approvals WHERE session_id = ?1 ORDER BY rowid"),
                &session_id.to_string(),
            )
        })
    }

    /// The session's undecided requests, in request order.
    pub fn pending_approvals(
        &self,
        session_id: ThreadId,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        self.read("list pending approvals", |conn| {
            query(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM approvals
                     WHERE session_id = ?1 AND outcome = 'pending' ORDER BY rowid"
                ),
                &session_id.to_string(),
            )
        })
    }
}

/// Writes a request with its decision (and a human's answer waiting for a driver) as the
/// session state holds it.
pub(crate) fn insert_or_replace_approval(
    conn: &Connection,
    record: &ApprovalRecord,
    answer: Option<bool>,
) -> OpResult<()> {
    let action = serde_json::to_string(&record.action).map_err(|err| StoreError::Invalid {
        what: "approval action",
        message: err.to_string(),
    })?;
    conn.prepare_cached(
        "INSERT INTO approvals (id, session_id, requester_id, requester, action,
             justification, outcome, decided_by, risk_level, rationale, tokens,
             requested_at, decided_at, answer)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (id) DO UPDATE SET outcome = excluded.outcome,
             decided_by = excluded.decided_by, risk_level = excluded.risk_level,
             rationale = excluded.rationale, tokens = excluded.tokens,
             decided_at = excluded.decided_at, answer = excluded.answer",
    )?
    .execute(params![
        record.id,
        record.session_id.to_string(),
        record.requester_id.to_string(),
        record.requester.as_str(),
        action,
        record.justification,
        record.outcome.as_str(),
        record.decided_by.map(DecidedBy::as_str),
        record.risk_level,
        record.rationale,
        record.tokens.map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        record.requested_at.as_millis(),
        record.decided_at.map(Timestamp::as_millis),
        answer,
    ])?;
    Ok(())
}

fn query(conn: &Connection, sql: &str, key: &str) -> OpResult<Vec<ApprovalRecord>> {
    crate::query::collect(conn, sql, [key], approval_from_row)
}

pub(crate) fn approval_from_row(row: &Row<'_>) -> OpResult<ApprovalRecord> {
    let requester: String = row.get(3)?;
    let action: String = row.get(4)?;
    let outcome: String = row.get(6)?;
    let decided_by: Option<String> = row.get(7)?;
    let tokens: Option<i64> = row.get(10)?;
    Ok(ApprovalRecord {
        id: row.get(0)?,
        session_id: parse_id(row.get_ref(1)?.as_str()?)?,
        requester_id: parse_id(row.get_ref(2)?.as_str()?)?,
        requester: AgentPath::from_persisted(&requester)
            .map_err(|_| Fail::corrupt("agent path", requester.clone()))?,
        action: serde_json::from_str(&action)
            .map_err(|_| Fail::corrupt("approval action", action.clone()))?,
        justification: row.get(5)?,
        outcome: ApprovalOutcome::parse(&outcome)
            .ok_or_else(|| Fail::corrupt("approval outcome", outcome.clone()))?,
        decided_by: decided_by
            .map(|text| DecidedBy::parse(&text).ok_or_else(|| Fail::corrupt("decided_by", text)))
            .transpose()?,
        risk_level: row.get(8)?,
        rationale: row.get(9)?,
        tokens: tokens.map(|t| u64::try_from(t).unwrap_or(0)),
        requested_at: Timestamp::from_millis(row.get(11)?),
        decided_at: row.get::<_, Option<i64>>(12)?.map(Timestamp::from_millis),
    })
}
