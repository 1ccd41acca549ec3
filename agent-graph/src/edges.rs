//! The spawn graph (behaviour §3): parent → child edges, Open or Closed, and the neutral
//! [`AgentGraphStore`] trait the SQLite [`Store`] implements.

use std::fmt;

use arbor_protocol::{AgentPath, ThreadId};
use rusqlite::{OptionalExtension, params};

use crate::walk::{children_of, descendants_of, parent_of, parse_id, reaches};
use crate::{Store, StoreError};

/// The state of a spawn edge. Only an explicit close writes `Closed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeStatus {
    Open,
    Closed,
}

impl EdgeStatus {
    /// The stored name: `open` or `closed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "open" => Some(Self::Open),
            "closed" => Some(Self::Closed),
            _ => None,
        }
    }
}

impl fmt::Display for EdgeStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The spawn graph, independent of where it is kept.
///
/// Edges are written only as a projection of the session log (a spawn opens the edge into the
/// child, a close closes it); reads block, so async callers run them on `spawn_blocking`.
pub trait AgentGraphStore: Send + Sync {
    /// Direct children of `parent` whose edge matches `filter`, ordered by id.
    fn children(
        &self,
        parent: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Result<Vec<ThreadId>, StoreError>;
    /// Breadth-first descendants of `root`, by depth then id; `filter` applies to every edge on
    /// the way down.
    fn descendants(
        &self,
        root: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Result<Vec<ThreadId>, StoreError>;
    /// The direct child of `parent` at `path`. When a path was reused after a close, an open
    /// child wins over closed ones, then the newest.
    fn find_child_by_path(
        &self,
        parent: ThreadId,
        path: &AgentPath,
        filter: Option<EdgeStatus>,
    ) -> Result<Option<ThreadId>, StoreError>;
    /// The descendant of `root` at `path`, reached through edges that all match `filter`.
    fn find_descendant_by_path(
        &self,
        root: ThreadId,
        path: &AgentPath,
        filter: Option<EdgeStatus>,
    ) -> Result<Option<ThreadId>, StoreError>;
}

impl Store {
    /// The edge into `child`: its parent and status.
    pub fn edge(&self, child: ThreadId) -> Result<Option<(ThreadId, EdgeStatus)>, StoreError> {
        self.read("read edge", |conn| parent_of(conn, child))
    }

    /// Direct children of `parent` whose edge matches `filter`, ordered by id.
    pub fn children(
        &self,
        parent: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Result<Vec<ThreadId>, StoreError> {
        self.read("list children", |conn| {
            let mut out = Vec::new();
            children_of(conn, parent, filter, &mut out)?;
            Ok(out)
        })
    }

    /// Breadth-first descendants of `root` (not `root` itself), ordered by depth then id. The
    /// filter applies to every edge on the way down: an open grandchild under a closed child is
    /// not an open descendant.
    pub fn descendants(
        &self,
        root: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Result<Vec<ThreadId>, StoreError> {
        self.read("list descendants", |conn| {
            descendants_of(conn, root, filter)
        })
    }

    /// The direct child of `parent` at `path` whose edge matches `filter`. An open child wins
    /// over closed ones (a closed agent's path may be reused), then the newest.
    pub fn find_child_by_path(
        &self,
        parent: ThreadId,
        path: &AgentPath,
        filter: Option<EdgeStatus>,
    ) -> Result<Option<ThreadId>, StoreError> {
        self.read("find child by path", |conn| {
            let found = conn
                .prepare_cached(
                    "SELECT e.child FROM edges e JOIN threads t ON t.id = e.child
                     WHERE e.parent = ?1 AND t.path = ?2 AND (?3 IS NULL OR e.status = ?3)
                     ORDER BY e.status = 'open' DESC, t.created_at DESC, e.child DESC
                     LIMIT 1",
                )?
                .query_row(
                    params![
                        parent.to_string(),
                        path.as_str(),
                        filter.map(|f| f.as_str())
                    ],
                    |row| row.get::<_, String>(0),
                )
                .optional()?;
            found.map(|text| parse_id(&text)).transpose()
        })
    }

    /// The descendant of `root` at `path`, reached from `root` through edges that all match
    /// `filter`. Candidates come from the thread index; an open one wins, then the newest.
    pub fn find_descendant_by_path(
        &self,
        root: ThreadId,
        path: &AgentPath,
        filter: Option<EdgeStatus>,
    ) -> Result<Option<ThreadId>, StoreError> {
        self.read("find descendant by path", |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT t.id FROM threads t
                 JOIN threads r ON r.id = ?1 AND t.session_id = r.session_id
                 LEFT JOIN edges e ON e.child = t.id
                 WHERE t.path = ?2 AND t.id <> r.id
                 ORDER BY e.status = 'open' DESC, t.created_at DESC, t.id DESC",
            )?;
            let candidates = stmt
                .query_map(params![root.to_string(), path.as_str()], |row| {
                    row.get::<_, String>(0)
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            for text in candidates {
                let candidate = parse_id(&text)?;
                if reaches(conn, candidate, root, filter)? {
                    return Ok(Some(candidate));
                }
            }
            Ok(None)
        })
    }
}

impl AgentGraphStore for Store {
    fn children(
        &self,
        parent: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Result<Vec<ThreadId>, StoreError> {
        Store::children(self, parent, filter)
    }

    fn descendants(
        &self,
        root: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Result<Vec<ThreadId>, StoreError> {
        Store::descendants(self, root, filter)
    }

    fn find_child_by_path(
        &self,
        parent: ThreadId,
        path: &AgentPath,
        filter: Option<EdgeStatus>,
    ) -> Result<Option<ThreadId>, StoreError> {
        Store::find_child_by_path(self, parent, path, filter)
    }

    fn find_descendant_by_path(
        &self,
        root: ThreadId,
        path: &AgentPath,
        filter: Option<EdgeStatus>,
    ) -> Result<Option<ThreadId>, StoreError> {
        Store::find_descendant_by_path(self, root, path, filter)
    }
}
