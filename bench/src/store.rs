//! Store benchmarks: the open-descendant BFS of a 100 000-edge tree, and committing the
//! projection of many log lines at once.
//!
//! The store lives in a temporary folder under `ARBOR_BENCH_DIR` (default: the system temp
//! folder).

use std::time::{Duration, Instant};

use arbor_agent_graph::{EdgeStatus, SessionState, Store};
use arbor_protocol::{
    AgentPath, ROLLOUT_FORMAT_VERSION, RolloutItem, RolloutLine, SessionMeta, ThreadId, Timestamp,
    UserTarget,
};
use serde_json::json;

/// Edges in the BFS benchmark tree.
const TREE_EDGES: usize = 100_000;
/// Children per node; with 100 000 edges the tree is 6 levels deep.
const FANOUT: usize = 7;
/// Every n-th edge is closed, so the open filter has something to cut.
const CLOSED_EVERY: usize = 10;
/// Timed BFS queries per filter; the median is reported.
const BFS_RUNS: usize = 9;

pub fn run() -> Result<(), String> {
    let dir = crate::bench_dir()?;
    let store = Store::open(dir.path()).map_err(|err| err.to_string())?;
    bfs(&store)?;
    store.close();
    Ok(())
}

/// The header of an agent of `session` at `path`.
pub fn meta(
    id: ThreadId,
    session: ThreadId,
    parent: Option<ThreadId>,
    path: AgentPath,
) -> SessionMeta {
    SessionMeta {
        thread_id: id,
        session_id: session,
        parent_id: parent,
        depth: path.depth() as u32,
        path,
        nickname: None,
        role: "worker".into(),
        model: "bench".into(),
        provider: None,
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/bench".into(),
        format_version: ROLLOUT_FORMAT_VERSION,
        repository: None,
        handle: None,
    }
}

/// Applies `item` of `thread` to `state` as its next log line.
pub fn apply(state: &mut SessionState, thread: ThreadId, item: RolloutItem) {
    let seq = state.applied.seq + 1;
    let line = RolloutLine {
        seq: Some(seq),
        thread: Some(thread),
        timestamp: Timestamp::now(),
        item,
    };
    let end = state.applied.offset + 300;
    state.apply(&line, end);
}

/// Builds a breadth-first tree of [`TREE_EDGES`] edges from spawn and close lines, commits
/// it, and times `descendants` from its root.
fn bfs(store: &Store) -> Result<(), String> {
    let err = |e: arbor_agent_graph::StoreError| e.to_string();
    let root = ThreadId::new();
    let started = Instant::now();
    let mut state = SessionState::new(root);
    apply(
        &mut state,
        root,
        RolloutItem::SessionMeta(Box::new(meta(root, root, None, AgentPath::root()))),
    );
    let mut nodes = vec![(root, AgentPath::root())];
    let mut next_parent = 0;
    let mut edges = 0;
    while edges < TREE_EDGES {
        let (parent, parent_path) = nodes[next_parent].clone();
        next_parent += 1;
        for k in 0..FANOUT {
            if edges == TREE_EDGES {
                break;
            }
            let id = ThreadId::new();
            let path = parent_path
                .join(&format!("t{k}"))
                .map_err(|e| e.to_string())?;
            apply(
                &mut state,
                id,
                RolloutItem::SessionMeta(Box::new(meta(id, root, Some(parent), path.clone()))),
            );
            if edges % CLOSED_EVERY == CLOSED_EVERY - 1 {
                apply(
                    &mut state,
                    id,
                    RolloutItem::UserClose(UserTarget { target_id: id }),
                );
            }
            edges += 1;
            nodes.push((id, path));
        }
    }
    let applied = started.elapsed();
    store.commit(&mut state).map_err(err)?;
    let depth = nodes.last().map(|(_, path)| path.depth()).unwrap_or(0);
    crate::report(json!({
        "bench": "store.build_tree",
        "edges": TREE_EDGES,
        "depth": depth,
        "apply_seconds": applied.as_secs_f64(),
        "seconds": started.elapsed().as_secs_f64(),
    }));
    for (name, filter) in [("open", Some(EdgeStatus::Open)), ("all", None)] {
        let mut times = Vec::with_capacity(BFS_RUNS);
        let mut found = 0;
        for _ in 0..BFS_RUNS {
            let start = Instant::now();
            found = store.descendants(root, filter).map_err(err)?.len();
            times.push(start.elapsed());
        }
        times.sort_unstable();
        crate::report(json!({
            "bench": format!("store.descendants_{name}"),
            "edges": TREE_EDGES,
            "depth": depth,
            "found": found,
            "runs": BFS_RUNS,
            "median_ms": millis(times[BFS_RUNS / 2]),
            "min_ms": millis(times[0]),
            "goal_ms": 50,
        }));
    }
    Ok(())
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
