//! The thread index: one row per agent thread with its identity, settings and last known
//! status, and the session lookups built on it.

use arbor_protocol::{
    AgentPath, AgentStatus, ROLLOUT_FORMAT_VERSION, SessionMeta, ThreadId, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::{Fail, OpResult};
use crate::walk::parse_id;
use crate::{Store, StoreError};

/// Shortest session-id prefix [`Store::find_session_by_prefix`] accepts.
pub const MIN_SESSION_PREFIX: usize = 8;

/// What a command line passes as SESSION for the newest session.
pub const LAST_SESSION: &str = "--last";

/// One indexed thread: its rollout header (the one identity type of an agent, shared with the
/// rollout and the orchestrator), its last status and where its rollout is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRecord {
    pub meta: SessionMeta,
    pub status: AgentStatus,
    pub rollout_path: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl ThreadRecord {
    /// The record of a thread from its rollout header, with status `pending_init`.
    pub fn from_meta(meta: &SessionMeta, rollout_path: String, created_at: Timestamp) -> Self {
        Self {
            meta: meta.clone(),
            status: AgentStatus::PendingInit,
            rollout_path,
            created_at,
            updated_at: created_at,
        }
    }

    /// The thread's id.
    pub fn id(&self) -> ThreadId {
        self.meta.thread_id
    }

    /// The agent's path.
    pub fn path(&self) -> &AgentPath {
        &self.meta.path
    }

    /// The parent's thread id (`None` for a session's root).
    pub fn parent_id(&self) -> Option<ThreadId> {
        self.meta.parent_id
    }

    /// The session (its root's thread id).
    pub fn session_id(&self) -> ThreadId {
        self.meta.session_id
    }
}

pub(crate) const THREAD_COLUMNS: &str = "t.id, t.session_id, t.parent_id, t.path, t.depth, \
    t.nickname, t.role, t.model, t.effort, t.sandbox, t.cwd, t.status, t.status_reason, \
    t.rollout_path, t.created_at, t.updated_at, t.provider, t.handle";

/// How many columns [`THREAD_COLUMNS`] names (a query's later columns start here).
pub(crate) const THREAD_COLUMN_COUNT: usize = 18;

const COLUMNS: &str = "id, session_id, parent_id, path, depth, nickname, role, model, effort, \
                       sandbox, cwd, status, status_reason, rollout_path, created_at, updated_at, \
                       provider, handle";

impl Store {
    /// One thread's record.
    pub fn thread(&self, id: ThreadId) -> Result<Option<ThreadRecord>, StoreError> {
        self.read("read thread", |conn| thread_by_id(conn, id))
    }

    /// Every thread of a session, root first, then by depth and id.
    pub fn threads_in_session(
        &self,
        session_id: ThreadId,
    ) -> Result<Vec<ThreadRecord>, StoreError> {
        self.read("list session threads", |conn| {
            session_threads(conn, session_id)
        })
    }

    /// The root thread of every session, newest first.
    pub fn sessions(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        self.read("list sessions", |conn| {
            query(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM threads WHERE parent_id IS NULL
                     ORDER BY created_at DESC, id DESC"
                ),
                params![],
            )
        })
    }

    /// The root thread of the session `name` names: [`LAST_SESSION`] (the newest), its
    /// handle, its id, or a unique prefix of its id (case-insensitive).
    pub fn find_session(&self, name: &str) -> Result<ThreadRecord, StoreError> {
        let wanted = name.trim().to_ascii_lowercase();
        if wanted == LAST_SESSION {
            return self.newest_session()?.ok_or_else(|| {
                StoreError::NoSessions(self.path().parent().unwrap_or(self.path()).to_path_buf())
            });
        }
        if wanted.starts_with('-') {
            return Err(StoreError::UnknownOption(name.to_string()));
        }
        if arbor_protocol::is_handle(&wanted) {
            let mut found = self.read("find session by handle", |conn| {
                query(
                    conn,
                    &format!(
                        "SELECT {COLUMNS} FROM threads
                         WHERE handle = ?1 AND parent_id IS NULL ORDER BY id LIMIT 10"
                    ),
                    params![wanted],
                )
            })?;
            return match found.len() {
                0 => Err(StoreError::SessionNotFound(name.to_string())),
                1 => found
                    .pop()
                    .ok_or_else(|| StoreError::SessionNotFound(name.to_string())),
                _ => Err(ambiguous(name, found)),
            };
        }
        self.find_session_by_prefix(name)
    }

    /// The newest session's root, if there is one.
    pub fn newest_session(&self) -> Result<Option<ThreadRecord>, StoreError> {
        let mut found = self.read("find the newest session", |conn| {
            query(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM threads WHERE parent_id IS NULL
                     ORDER BY created_at DESC, id DESC LIMIT 1"
                ),
                params![],
            )
        })?;
        Ok(found.pop())
    }

    /// Whether a session already has `handle`.
    pub fn handle_taken(&self, handle: &str) -> Result<bool, StoreError> {
        self.read("look a handle up", |conn| {
            let taken = conn
                .prepare_cached("SELECT 1 FROM threads WHERE handle = ?1 LIMIT 1")?
                .query_row([handle], |_| Ok(()))
                .optional()?;
            Ok(taken.is_some())
        })
    }

    /// The root thread of the one session whose id starts with `prefix` (at least
    /// [`MIN_SESSION_PREFIX`] characters, case-insensitive).
    pub fn find_session_by_prefix(&self, prefix: &str) -> Result<ThreadRecord, StoreError> {
        let wanted = prefix.trim().to_ascii_lowercase();
        if wanted.chars().count() < MIN_SESSION_PREFIX {
            return Err(StoreError::PrefixTooShort(prefix.to_string()));
        }
        // '~' sorts after every character of an id, so [prefix, prefix~) is the prefix's range.
        let upper = format!("{wanted}~");
        let mut found = self.read("find session by prefix", |conn| {
            query(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM threads
                     WHERE id >= ?1 AND id < ?2 AND parent_id IS NULL ORDER BY id LIMIT 10"
                ),
                params![wanted, upper],
            )
        })?;
        match found.len() {
            0 => Err(StoreError::SessionNotFound(prefix.to_string())),
            1 => found
                .pop()
                .ok_or_else(|| StoreError::SessionNotFound(prefix.to_string())),
            _ => Err(ambiguous(prefix, found)),
        }
    }
}

fn ambiguous(name: &str, found: Vec<ThreadRecord>) -> StoreError {
    StoreError::AmbiguousSession {
        prefix: name.to_string(),
        matches: found
            .into_iter()
            .map(|record| (record.id(), record.meta.handle))
            .collect(),
    }
}

pub(crate) fn thread_by_id(conn: &Connection, id: ThreadId) -> OpResult<Option<ThreadRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM threads WHERE id = ?1");
    let row = conn
        .prepare_cached(&sql)?
        .query_row([id.to_string()], RawThread::from_row)
        .optional()?;
    row.map(RawThread::into_record).transpose()
}

pub(crate) fn session_threads(conn: &Connection, session: ThreadId) -> OpResult<Vec<ThreadRecord>> {
    query(
        conn,
        &format!("SELECT {COLUMNS} FROM threads WHERE session_id = ?1 ORDER BY depth, id"),
        params![session.to_string()],
    )
}

fn query(
    conn: &Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
) -> OpResult<Vec<ThreadRecord>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let raws = stmt
        .query_map(args, RawThread::from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raws.into_iter().map(RawThread::into_record).collect()
}

/// A row as stored, before its text fields are parsed.
pub(crate) struct RawThread {
    id: String,
    session_id: String,
    parent_id: Option<String>,
    path: String,
    depth: i64,
    nickname: Option<String>,
    role: String,
    model: String,
    effort: Option<String>,
    sandbox: String,
    cwd: String,
    status: String,
    status_reason: Option<String>,
    rollout_path: String,
    created_at: i64,
    updated_at: i64,
    provider: Option<String>,
    handle: Option<String>,
}

impl RawThread {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            session_id: row.get(1)?,
            parent_id: row.get(2)?,
            path: row.get(3)?,
            depth: row.get(4)?,
            nickname: row.get(5)?,
            role: row.get(6)?,
            model: row.get(7)?,
            effort: row.get(8)?,
            sandbox: row.get(9)?,
            cwd: row.get(10)?,
            status: row.get(11)?,
            status_reason: row.get(12)?,
            rollout_path: row.get(13)?,
            created_at: row.get(14)?,
            updated_at: row.get(15)?,
            provider: row.get(16)?,
            handle: row.get(17)?,
        })
    }

    pub(crate) fn into_record(self) -> OpResult<ThreadRecord> {
        let path = AgentPath::from_persisted(&self.path)
            .map_err(|_| Fail::corrupt("agent path", self.path.clone()))?;
        let depth = u32::try_from(self.depth)
            .map_err(|_| Fail::corrupt("thread depth", self.depth.to_string()))?;
        let status = AgentStatus::from_parts(&self.status, self.status_reason)
            .ok_or_else(|| Fail::corrupt("agent status", self.status.clone()))?;
        Ok(ThreadRecord {
            meta: SessionMeta {
                thread_id: parse_id(&self.id)?,
                session_id: parse_id(&self.session_id)?,
                parent_id: self.parent_id.as_deref().map(parse_id).transpose()?,
                path,
                depth,
                nickname: self.nickname,
                role: self.role,
                model: self.model,
                provider: self.provider,
                effort: self.effort,
                sandbox: self.sandbox,
                cwd: self.cwd,
                format_version: ROLLOUT_FORMAT_VERSION,
                repository: None,
                handle: self.handle,
            },
            status,
            rollout_path: self.rollout_path,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}
