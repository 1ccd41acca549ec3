//! The git worktrees of a session's agents, as the `worktree` lines of the log leave them:
//! where each is, its branch, what it started from, the last commit of it merged back, and
//! whether it was removed. A projection like every other table.

use arbor_protocol::{ThreadId, Timestamp, WorktreeFact};
use rusqlite::{Connection, Row, params};

use crate::error::OpResult;
use crate::walk::parse_id;

/// One agent's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeRecord {
    pub thread_id: ThreadId,
    /// The directory, relative to `$ARBOR_HOME`.
    pub path: String,
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The checkout it forked from (absolute): where its changes merge back.
    pub source: String,
    /// The agent's cwd inside it, relative to its top.
    pub prefix: String,
    /// The last commit of it merged back, if any, and the checkout it was merged into.
    pub merged: Option<String>,
    pub merged_into: Option<String>,
    /// The worktree and its branch were removed.
    pub removed: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl WorktreeRecord {
    /// The record a `created` fact starts.
    pub fn created(
        thread_id: ThreadId,
        fact: &arbor_protocol::WorktreeCreated,
        at: Timestamp,
    ) -> Self {
        Self {
            thread_id,
            path: fact.path.clone(),
            branch: fact.branch.clone(),
            base: fact.base.clone(),
            source: fact.source.clone(),
            prefix: fact.prefix.clone(),
            merged: None,
            merged_into: None,
            removed: false,
            created_at: at,
            updated_at: at,
        }
    }

    /// Applies a later fact; false when it changes nothing.
    pub fn apply(&mut self, fact: &WorktreeFact, at: Timestamp) -> bool {
        match fact {
            WorktreeFact::Created(_) => return false,
            WorktreeFact::Merged(merged) => {
                self.merged = Some(merged.commit.clone());
                self.merged_into = Some(merged.into.clone());
            }
            WorktreeFact::Removed => self.removed = true,
        }
        self.updated_at = at;
        true
    }
}

const COLUMNS: &str = "thread_id, path, branch, base, source, prefix, merged, merged_into, removed,
    created_at, updated_at";

/// The worktrees of `session`.
pub(crate) fn load(conn: &Connection, session: &str) -> OpResult<Vec<WorktreeRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM worktrees WHERE session_id = ?1 ORDER BY thread_id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([session])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(from_row(row)?);
    }
    Ok(out)
}

fn from_row(row: &Row<'_>) -> OpResult<WorktreeRecord> {
    let id: String = row.get(0)?;
    Ok(WorktreeRecord {
        thread_id: parse_id(&id)?,
        path: row.get(1)?,
        branch: row.get(2)?,
        base: row.get(3)?,
        source: row.get(4)?,
        prefix: row.get(5)?,
        merged: row.get(6)?,
        merged_into: row.get(7)?,
        removed: row.get(8)?,
        created_at: Timestamp::from_millis(row.get(9)?),
        updated_at: Timestamp::from_millis(row.get(10)?),
    })
}

/// Writes one record (inserted, or its changing columns updated).
pub(crate) fn upsert(
    conn: &Connection,
    session: ThreadId,
    record: &WorktreeRecord,
) -> OpResult<()> {
    conn.prepare_cached(
        "INSERT INTO worktrees (thread_id, session_id, path, branch, base, source, prefix, merged,
             merged_into, removed, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
         ON CONFLICT (thread_id) DO UPDATE SET merged = excluded.merged,
             merged_into = excluded.merged_into, removed = excluded.removed,
             updated_at = excluded.updated_at",
    )?
    .execute(params![
        record.thread_id.to_string(),
        session.to_string(),
        record.path,
        record.branch,
        record.base,
        record.source,
        record.prefix,
        record.merged,
        record.merged_into,
        record.removed,
        record.created_at.as_millis(),
        record.updated_at.as_millis(),
    ])?;
    Ok(())
}
