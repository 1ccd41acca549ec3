//! Walking the spawn graph inside one read or write transaction: children, the edge into a
//! thread, breadth-first descendants and upward reachability.

use std::collections::HashMap;

use arbor_protocol::ThreadId;
use rusqlite::{Connection, OptionalExtension, params};

use crate::EdgeStatus;
use crate::error::{Fail, OpResult};

/// The deepest chain the store follows; deeper than any valid agent path can be.
pub(crate) const MAX_WALK: usize = 4096;

/// Below this many expanded nodes a descendant walk never considers a scan.
const SEEK_FLOOR: usize = 256;

/// How many scanned edges cost about as much as one per-parent index seek. Measured with
/// `arbor-bench store` (a seek about 0.5–0.9 µs, a scanned edge about 0.25 µs), then set a
/// little high so large walks switch to the scan early.
const SCAN_EDGES_PER_SEEK: usize = 8;

/// Breadth-first descendants of `root` by depth then id, `filter` applied on every edge.
///
/// Starts with one index seek per expanded node, which is cheapest for small subtrees. Once the
/// seeks spent (and the next level's) would cost more than reading every edge of the session,
/// it reads them all in one scan and finishes in memory: never much worse than the better of
/// the two.
pub(crate) fn descendants_of(
    conn: &Connection,
    root: ThreadId,
    filter: Option<EdgeStatus>,
) -> OpResult<Vec<ThreadId>> {
    let mut out = Vec::new();
    let mut level = vec![root];
    let mut expanded = 0;
    let mut session: Option<Option<(ThreadId, usize)>> = None;
    for _ in 0..MAX_WALK {
        if level.is_empty() {
            break;
        }
        if expanded + level.len() > SEEK_FLOOR {
            let known = match session {
                Some(known) => known,
                None => *session.insert(session_size(conn, root)?),
            };
            if let Some((session_id, edges)) = known
                && (expanded + level.len()) * SCAN_EDGES_PER_SEEK > edges
            {
                let adjacency = adjacency(conn, session_id, filter)?;
                finish_in_memory(&adjacency, level, &mut out);
                return Ok(out);
            }
        }
        let mut next = Vec::new();
        for parent in &level {
            children_of(conn, *parent, filter, &mut next)?;
        }
        expanded += level.len();
        next.sort_unstable();
        out.extend_from_slice(&next);
        level = next;
    }
    Ok(out)
}

/// A session's edges as a sorted adjacency list: `parents[i]`'s children are
/// `children[ranges[i].0..ranges[i].1]`, in id order.
#[derive(Default)]
struct Adjacency {
    parents: Vec<ThreadId>,
    ranges: Vec<(usize, usize)>,
    children: Vec<ThreadId>,
}

impl Adjacency {
    fn children_of(&self, parent: &ThreadId) -> &[ThreadId] {
        match self.parents.binary_search(parent) {
            Ok(i) => self
                .children
                .get(self.ranges[i].0..self.ranges[i].1)
                .unwrap_or(&[]),
            Err(_) => &[],
        }
    }
}

/// Continues a breadth-first walk from `level` over the in-memory adjacency list.
fn finish_in_memory(adjacency: &Adjacency, mut level: Vec<ThreadId>, out: &mut Vec<ThreadId>) {
    let mut next = Vec::new();
    for _ in 0..MAX_WALK {
        if level.is_empty() {
            break;
        }
        for parent in &level {
            next.extend_from_slice(adjacency.children_of(parent));
        }
        next.sort_unstable();
        out.extend_from_slice(&next);
        std::mem::swap(&mut level, &mut next);
        next.clear();
    }
}

/// The session of `thread` and how many edges it has (kept by a trigger, so this is cheap).
fn session_size(conn: &Connection, thread: ThreadId) -> OpResult<Option<(ThreadId, usize)>> {
    let Some(session) = session_of(conn, thread)? else {
        return Ok(None);
    };
    let count: Option<i64> = conn
        .prepare_cached("SELECT edges FROM session_stats WHERE session_id = ?1")?
        .query_row([session.to_string()], |row| row.get(0))
        .optional()?;
    Ok(Some((
        session,
        count.and_then(|n| usize::try_from(n).ok()).unwrap_or(0),
    )))
}

/// The session a thread belongs to, from the thread index.
pub(crate) fn session_of(conn: &Connection, thread: ThreadId) -> OpResult<Option<ThreadId>> {
    let text = conn
        .prepare_cached("SELECT session_id FROM threads WHERE id = ?1")?
        .query_row([thread.to_string()], |row| row.get::<_, String>(0))
        .optional()?;
    text.map(|text| parse_id(&text)).transpose()
}

/// Every edge of a session matching `filter`, read in one pass over `edges_by_session`, which
/// yields them grouped by parent and ordered by child.
fn adjacency(
    conn: &Connection,
    session: ThreadId,
    filter: Option<EdgeStatus>,
) -> OpResult<Adjacency> {
    let mut stmt = conn.prepare_cached(
        "SELECT parent, child FROM edges INDEXED BY edges_by_session
         WHERE session_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY parent, child",
    )?;
    let mut rows = stmt.query(params![session.to_string(), filter.map(|f| f.as_str())])?;
    let mut adjacency = Adjacency::default();
    let mut last_parent: Vec<u8> = Vec::new();
    while let Some(row) = rows.next()? {
        let parent = row.get_ref(0)?.as_str()?;
        if parent.as_bytes() != last_parent.as_slice() {
            adjacency.parents.push(parse_id(parent)?);
            let at = adjacency.children.len();
            adjacency.ranges.push((at, at));
            last_parent.clear();
            last_parent.extend_from_slice(parent.as_bytes());
        }
        adjacency
            .children
            .push(parse_id(row.get_ref(1)?.as_str()?)?);
        if let Some(range) = adjacency.ranges.last_mut() {
            range.1 = adjacency.children.len();
        }
    }
    Ok(adjacency)
}

/// Every edge of a session, keyed by child: used by the tree view.
pub(crate) fn session_edges(
    conn: &Connection,
    session: ThreadId,
) -> OpResult<HashMap<ThreadId, (ThreadId, EdgeStatus)>> {
    let mut stmt =
        conn.prepare_cached("SELECT child, parent, status FROM edges WHERE session_id = ?1")?;
    let mut rows = stmt.query([session.to_string()])?;
    let mut out = HashMap::new();
    while let Some(row) = rows.next()? {
        let child = parse_id(row.get_ref(0)?.as_str()?)?;
        let parent = parse_id(row.get_ref(1)?.as_str()?)?;
        let status = parse_status(row.get_ref(2)?.as_str()?)?;
        out.insert(child, (parent, status));
    }
    Ok(out)
}

/// Appends `parent`'s children matching `filter`, ordered by id.
pub(crate) fn children_of(
    conn: &Connection,
    parent: ThreadId,
    filter: Option<EdgeStatus>,
    out: &mut Vec<ThreadId>,
) -> OpResult<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT child FROM edges WHERE parent = ?1 AND (?2 IS NULL OR status = ?2)
         ORDER BY child",
    )?;
    let mut rows = stmt.query(params![parent.to_string(), filter.map(|f| f.as_str())])?;
    while let Some(row) = rows.next()? {
        out.push(parse_id(row.get_ref(0)?.as_str()?)?);
    }
    Ok(())
}

/// The edge into `child`, if any: its parent and status.
pub(crate) fn parent_of(
    conn: &Connection,
    child: ThreadId,
) -> OpResult<Option<(ThreadId, EdgeStatus)>> {
    let row = conn
        .prepare_cached("SELECT parent, status FROM edges WHERE child = ?1")?
        .query_row([child.to_string()], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .optional()?;
    row.map(|(parent, status)| Ok((parse_id(&parent)?, parse_status(&status)?)))
        .transpose()
}

/// True when walking up from `from` reaches `root` through edges matching `filter`.
pub(crate) fn reaches(
    conn: &Connection,
    from: ThreadId,
    root: ThreadId,
    filter: Option<EdgeStatus>,
) -> OpResult<bool> {
    let mut cursor = from;
    for _ in 0..MAX_WALK {
        let Some((parent, status)) = parent_of(conn, cursor)? else {
            return Ok(false);
        };
        if filter.is_some_and(|wanted| wanted != status) {
            return Ok(false);
        }
        if parent == root {
            return Ok(true);
        }
        cursor = parent;
    }
    Ok(false)
}

/// Parses a stored thread id.
pub(crate) fn parse_id(text: &str) -> OpResult<ThreadId> {
    ThreadId::parse(text).map_err(|_| Fail::corrupt("thread id", text))
}

fn parse_status(text: &str) -> OpResult<EdgeStatus> {
    EdgeStatus::parse(text).ok_or_else(|| Fail::corrupt("edge status", text))
}

#[cfg(test)]
mod tests {
    use arbor_protocol::{AgentPath, Timestamp};

    use super::*;
    use arbor_protocol::{RolloutItem, RolloutLine, SessionMeta};

    use crate::{SessionState, Store};

    fn meta(id: ThreadId, session: ThreadId, parent: Option<ThreadId>, depth: u32) -> SessionMeta {
        let mut path = AgentPath::root();
        for level in 0..depth {
            path = path.join(&format!("l{level}")).expect("path");
        }
        SessionMeta {
            thread_id: id,
            session_id: session,
            parent_id: parent,
            path,
            depth,
            nickname: None,
            role: "default".into(),
            model: "m".into(),
            provider: None,
            effort: None,
            sandbox: "read-only".into(),
            cwd: "/".into(),
            format_version: arbor_protocol::ROLLOUT_FORMAT_VERSION,
            repository: None,
            handle: None,
        }
    }

    /// Applies `items` (each of a thread) to `state` as the next log lines.
    fn apply(state: &mut SessionState, items: Vec<(ThreadId, RolloutItem)>) {
        for (thread, item) in items {
            let seq = state.applied.seq + 1;
            let line = RolloutLine {
                seq: Some(seq),
                thread: Some(thread),
                timestamp: Timestamp::now(),
                item,
            };
            state.apply(&line, seq * 100);
        }
    }

    fn close(target: ThreadId) -> RolloutItem {
        RolloutItem::UserClose(arbor_protocol::UserTarget { target_id: target })
    }

    /// A session whose root has `fanout` children, each with `fanout` children, and so on for
    /// `depth` levels; every third edge is closed.
    fn build(
        store: &Store,
        fanout: usize,
        depth: u32,
    ) -> (
        ThreadId,
        Vec<(ThreadId, ThreadId, EdgeStatus)>,
        SessionState,
    ) {
        let root = ThreadId::new();
        let mut state = SessionState::new(root);
        let mut lines = vec![(
            root,
            RolloutItem::SessionMeta(Box::new(meta(root, root, None, 0))),
        )];
        let mut level = vec![root];
        let mut edges = Vec::new();
        for d in 1..=depth {
            let mut next = Vec::new();
            for parent in &level {
                for _ in 0..fanout {
                    let child = ThreadId::new();
                    lines.push((
                        child,
                        RolloutItem::SessionMeta(Box::new(meta(child, root, Some(*parent), d))),
                    ));
                    let status = if edges.len() % 3 == 2 {
                        lines.push((child, close(child)));
                        EdgeStatus::Closed
                    } else {
                        EdgeStatus::Open
                    };
                    edges.push((*parent, child, status));
                    next.push(child);
                }
            }
            level = next;
        }
        apply(&mut state, lines);
        store.commit(&mut state).expect("commit");
        (root, edges, state)
    }

    /// The obvious breadth-first walk over an edge list.
    fn expected(
        edges: &[(ThreadId, ThreadId, EdgeStatus)],
        root: ThreadId,
        filter: Option<EdgeStatus>,
    ) -> Vec<ThreadId> {
        let mut out = Vec::new();
        let mut level = vec![root];
        while !level.is_empty() {
            let mut next: Vec<ThreadId> = edges
                .iter()
                .filter(|(p, _, s)| level.contains(p) && filter.is_none_or(|f| f == *s))
                .map(|(_, c, _)| *c)
                .collect();
            next.sort_unstable();
            out.extend_from_slice(&next);
            level = next;
        }
        out
    }

    #[test]
    fn seek_and_scan_walks_agree_with_a_plain_bfs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        // 4 + 16 + 64 + 256 = 340 edges: large enough to pass the seek floor and switch.
        let (root, edges, _) = build(&store, 4, 4);
        for filter in [None, Some(EdgeStatus::Open), Some(EdgeStatus::Closed)] {
            for start in [root, edges[0].1, edges[5].1] {
                let got = store
                    .read("test walk", |conn| {
                        let walked = descendants_of(conn, start, filter)?;
                        let mut seeks_only = Vec::new();
                        let mut level = vec![start];
                        while !level.is_empty() {
                            let mut next = Vec::new();
                            for parent in &level {
                                children_of(conn, *parent, filter, &mut next)?;
                            }
                            next.sort_unstable();
                            seeks_only.extend_from_slice(&next);
                            level = next;
                        }
                        let scanned = {
                            let session = session_of(conn, start)?.expect("indexed");
                            let mut out = Vec::new();
                            finish_in_memory(
                                &adjacency(conn, session, filter)?,
                                vec![start],
                                &mut out,
                            );
                            out
                        };
                        Ok((walked, seeks_only, scanned))
                    })
                    .expect("walk");
                let want = expected(&edges, start, filter);
                assert_eq!(got.0, want, "hybrid {filter:?}");
                assert_eq!(got.1, want, "seeks {filter:?}");
                assert_eq!(got.2, want, "scan {filter:?}");
            }
        }
    }

    #[test]
    fn the_edge_count_trigger_counts_new_edges_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (root, edges, mut state) = build(&store, 2, 2);
        // A close of an open edge updates its row: no new edge is counted.
        let open = edges
            .iter()
            .find(|(_, _, status)| *status == EdgeStatus::Open)
            .map(|(_, child, _)| *child)
            .expect("an open edge");
        apply(&mut state, vec![(open, close(open))]);
        store.commit(&mut state).expect("commit");
        let child = open;
        let size = store
            .read("count", |conn| session_size(conn, child))
            .expect("size");
        assert_eq!(size, Some((root, edges.len())));
    }
}
