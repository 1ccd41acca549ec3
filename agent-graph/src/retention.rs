//! Deleting whole sessions (`arbor gc`): every row of theirs, in every table, in one
//! transaction, so a session is either all there or gone from every read.

use arbor_protocol::ThreadId;
use rusqlite::Connection;

use crate::error::OpResult;
use crate::{Store, StoreError};

/// The tables holding a session's rows, in an order that deletes what refers to a row before
/// the row itself.
const TABLES: &[&str] = &[
    "approval_overrides",
    "worktrees",
    "approvals",
    "mail",
    "edges",
    "session_stats",
    "log_state",
];

impl Store {
    /// Deletes every row of `sessions` (their threads last), in one transaction. Sessions the
    /// store does not hold are ignored. Returns how many threads went.
    pub fn delete_sessions(&self, sessions: &[ThreadId]) -> Result<usize, StoreError> {
        if sessions.is_empty() {
            return Ok(0);
        }
        self.write("delete sessions", |conn| delete(conn, sessions))
    }
}

fn delete(conn: &Connection, sessions: &[ThreadId]) -> OpResult<usize> {
    let mut threads = 0;
    for session in sessions {
        let id = session.to_string();
        for table in TABLES {
            conn.prepare_cached(&format!("DELETE FROM {table} WHERE session_id = ?1"))?
                .execute([&id])?;
        }
        // Children before the root: a thread's parent and session are threads.
        threads += conn
            .prepare_cached("DELETE FROM threads WHERE session_id = ?1 AND id <> ?1")?
            .execute([&id])?;
        threads += conn
            .prepare_cached("DELETE FROM threads WHERE id = ?1")?
            .execute([&id])?;
    }
    Ok(threads)
}
