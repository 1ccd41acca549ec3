//! Loading a session's state from the store and writing back the rows the log changed: the
//! one way rows are written, in one transaction per commit, with how far into the log the
//! store has come.

use arbor_protocol::{AgentStatus, ThreadId, Usage};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::approvals::{approval_from_row, insert_or_replace_approval};
use crate::error::{Fail, OpResult};
use crate::overrides::{override_from_row, upsert_override};
use crate::state::{AgentRow, Changes, LogPosition, MailRow, SessionState};
use crate::threads::{RawThread, THREAD_COLUMN_COUNT, THREAD_COLUMNS};
use crate::{EdgeStatus, Store, StoreError};

const EXTRA_COLUMNS: &str = "turn_open, last_end, last_end_reason, tokens_in, tokens_cached, tokens_out, last_seq, \
     tokens_compaction, tokens_cache_write";

impl Store {
    /// Everything the store holds about `session`: its agents with their edges, its
    /// unconsumed mail, approvals, overrides and how far into its log the store has come. An
    /// unknown session loads empty.
    pub fn load_session(&self, session: ThreadId) -> Result<SessionState, StoreError> {
        self.read("load session", |conn| load(conn, session))
    }

    /// Writes the rows `state` changed since its last commit, and its log position, in one
    /// transaction. On failure the changes stay in `state`, to be written with the next ones.
    pub fn commit(&self, state: &mut SessionState) -> Result<(), StoreError> {
        let Some(session) = state.session_id() else {
            return Ok(());
        };
        let changes = state.take_changes();
        let result = self.write("commit session changes", |conn| {
            write(conn, session, state, &changes)
        });
        if result.is_err() {
            state.restore_changes(changes);
        }
        result
    }
}

fn load(conn: &Connection, session: ThreadId) -> OpResult<SessionState> {
    let mut state = SessionState::new(session);
    let key = session.to_string();
    let sql = format!(
        "SELECT {THREAD_COLUMNS}, {EXTRA_COLUMNS}, e.status FROM threads t
         LEFT JOIN edges e ON e.child = t.id
         WHERE t.session_id = ?1 ORDER BY t.id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([&key])?;
    while let Some(row) = rows.next()? {
        state.load_thread(agent_from_row(row)?);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT seq, recipient_id, id, author, recipient, kind, trigger_turn, content, created_at,
                from_user
         FROM mail WHERE session_id = ?1 AND consumed_at IS NULL ORDER BY seq",
    )?;
    let mut rows = stmt.query([&key])?;
    while let Some(row) = rows.next()? {
        let order: i64 = row.get(0)?;
        let queued = crate::mail::queued_from_row(row, 1)?;
        state.load_mail(
            u64::try_from(order).unwrap_or(0),
            MailRow {
                recipient_id: queued.recipient_id,
                mail: queued.mail,
            },
        );
    }
    let sql = format!(
        "SELECT {}, answer FROM approvals WHERE session_id = ?1 ORDER BY requested_at, rowid",
        crate::approvals::COLUMNS
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([&key])?;
    while let Some(row) = rows.next()? {
        let record = approval_from_row(row)?;
        let answer: Option<bool> = row.get(13)?;
        state.load_approval(record, answer);
    }
    let sql = format!(
        "SELECT {} FROM approval_overrides WHERE session_id = ?1 ORDER BY granted_at, rowid",
        crate::overrides::COLUMNS
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([&key])?;
    while let Some(row) = rows.next()? {
        state.load_override(override_from_row(row)?);
    }
    for record in crate::worktrees::load(conn, &key)? {
        state.load_worktree(record);
    }
    let position: Option<(i64, i64)> = conn
        .prepare_cached("SELECT seq, offset FROM log_state WHERE session_id = ?1")?
        .query_row([&key], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    if let Some((seq, offset)) = position {
        state.applied = LogPosition {
            seq: u64::try_from(seq).unwrap_or(0),
            offset: u64::try_from(offset).unwrap_or(0),
        };
    }
    // Nothing loaded is a change.
    drop(state.take_changes());
    Ok(state)
}

fn agent_from_row(row: &Row<'_>) -> OpResult<AgentRow> {
    let record = RawThread::from_row(row)?.into_record()?;
    let base = THREAD_COLUMN_COUNT;
    let last_end: Option<String> = row.get(base + 1)?;
    let last_end = last_end
        .map(|name| {
            AgentStatus::from_parts(&name, row.get(base + 2)?)
                .ok_or_else(|| Fail::corrupt("agent status", name))
        })
        .transpose()?;
    let count =
        |i: usize| -> OpResult<u64> { Ok(u64::try_from(row.get::<_, i64>(i)?).unwrap_or(0)) };
    let edge: Option<String> = row.get(base + 9)?;
    let edge = edge
        .map(|text| EdgeStatus::parse(&text).ok_or_else(|| Fail::corrupt("edge status", text)))
        .transpose()?;
    Ok(AgentRow {
        edge,
        turn_open: row.get(base)?,
        last_end,
        usage: Usage {
            input_tokens: count(base + 3)?,
            cached_input_tokens: count(base + 4)?,
            output_tokens: count(base + 5)?,
            compaction_tokens: count(base + 7)?,
            cache_write_tokens: count(base + 8)?,
        },
        last_seq: count(base + 6)?,
        record,
    })
}

fn write(
    conn: &Connection,
    session: ThreadId,
    state: &SessionState,
    changes: &Changes,
) -> OpResult<()> {
    for id in &changes.threads {
        if let Some(row) = state.thread(*id) {
            write_thread(conn, row)?;
        }
    }
    for order in &changes.mail {
        if let Some(row) = state.mail.get(order) {
            crate::mail::insert_mail(conn, session, row.recipient_id, &row.mail)?;
        }
    }
    for (id, at) in &changes.consumed {
        conn.prepare_cached(
            "UPDATE mail SET consumed_at = ?2 WHERE id = ?1 AND consumed_at IS NULL",
        )?
        .execute(params![id.to_string(), at.as_millis()])?;
    }
    for id in &changes.approvals {
        if let Some(record) = state.approval(id) {
            insert_or_replace_approval(conn, record, state.answers.get(id).copied())?;
        }
    }
    for id in &changes.overrides {
        if let Some(grant) = state.override_of(id) {
            upsert_override(conn, grant)?;
        }
    }
    for id in &changes.worktrees {
        if let Some(record) = state.worktree(*id) {
            crate::worktrees::upsert(conn, session, record)?;
        }
    }
    conn.prepare_cached(
        "INSERT INTO log_state (session_id, seq, offset) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, offset = excluded.offset",
    )?
    .execute(params![
        session.to_string(),
        i64::try_from(state.applied.seq).unwrap_or(i64::MAX),
        i64::try_from(state.applied.offset).unwrap_or(i64::MAX),
    ])?;
    Ok(())
}

fn write_thread(conn: &Connection, row: &AgentRow) -> OpResult<()> {
    let r = &row.record;
    let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT INTO threads (id, session_id, parent_id, path, depth, nickname, role, model,
             effort, sandbox, cwd, status, status_reason, rollout_path, created_at, updated_at,
             turn_open, last_end, last_end_reason, tokens_in, tokens_cached, tokens_out, last_seq,
             tokens_compaction, provider, tokens_cache_write, handle)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
             ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)
         ON CONFLICT (id) DO UPDATE SET status = excluded.status,
             status_reason = excluded.status_reason, updated_at = excluded.updated_at,
             turn_open = excluded.turn_open, last_end = excluded.last_end,
             last_end_reason = excluded.last_end_reason, tokens_in = excluded.tokens_in,
             tokens_cached = excluded.tokens_cached, tokens_out = excluded.tokens_out,
             last_seq = excluded.last_seq, tokens_compaction = excluded.tokens_compaction,
             tokens_cache_write = excluded.tokens_cache_write",
    )?
    .execute(params![
        r.id().to_string(),
        r.session_id().to_string(),
        r.parent_id().map(|id| id.to_string()),
        r.path().as_str(),
        r.meta.depth,
        r.meta.nickname,
        r.meta.role,
        r.meta.model,
        r.meta.effort,
        r.meta.sandbox,
        r.meta.cwd,
        r.status.name(),
        r.status.detail(),
        r.rollout_path,
        r.created_at.as_millis(),
        r.updated_at.as_millis(),
        row.turn_open,
        row.last_end.as_ref().map(AgentStatus::name),
        row.last_end.as_ref().and_then(AgentStatus::detail),
        signed(row.usage.input_tokens),
        signed(row.usage.cached_input_tokens),
        signed(row.usage.output_tokens),
        signed(row.last_seq),
        signed(row.usage.compaction_tokens),
        r.meta.provider,
        signed(row.usage.cache_write_tokens),
        r.meta.handle,
    ])?;
    if let (Some(parent), Some(edge)) = (r.parent_id(), row.edge) {
        conn.prepare_cached(
            "INSERT INTO edges (child, parent, session_id, status, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (child) DO UPDATE SET status = excluded.status,
                 updated_at = excluded.updated_at",
        )?
        .execute(params![
            r.id().to_string(),
            parent.to_string(),
            r.session_id().to_string(),
            edge.as_str(),
            r.created_at.as_millis(),
            r.updated_at.as_millis(),
        ])?;
    }
    Ok(())
}
