//! The SQLite store: spawn graph, thread index, durable mail, approval log, session tree, bad
//! files; one module each, with the fixtures they share here.

mod approvals;
mod files;
mod graph;
mod mail;
mod tree;

use arbor_agent_graph::{AgentGraphStore, EdgeStatus, Store, ThreadRecord};
use arbor_protocol::{AgentPath, AgentStatus, ThreadId, Timestamp};

/// A thread id whose text sorts like `n`.
pub(crate) fn tid(n: u64) -> ThreadId {
    ThreadId::parse(&format!("00000000-0000-7000-8000-{n:012}")).expect("crafted id")
}

fn path(text: &str) -> AgentPath {
    AgentPath::parse(text).expect("valid path")
}

/// A record for thread `n` at `at`, below `parent` (a root when `None`).
fn record(n: u64, session: u64, parent: Option<u64>, at: &str) -> ThreadRecord {
    let path = path(at);
    ThreadRecord {
        id: tid(n),
        session_id: tid(session),
        parent_id: parent.map(tid),
        depth: path.depth() as u32,
        path,
        nickname: None,
        role: "default".into(),
        model: "scripted".into(),
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/work".into(),
        status: AgentStatus::Running,
        rollout_path: format!("/home/sessions/rollout-{n}.jsonl"),
        created_at: Timestamp::from_millis(1_000 + n as i64),
        updated_at: Timestamp::from_millis(1_000 + n as i64),
    }
}

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open store");
    (dir, store)
}

/// Indexes each thread `(n, parent, path)` of session `session`, parents before children.
pub(crate) fn seed_threads(store: &Store, session: u64, threads: &[(u64, Option<u64>, &str)]) {
    for (n, parent, at) in threads {
        store
            .upsert_thread(record(*n, session, *parent, at))
            .wait()
            .expect("upsert thread");
    }
}

/// Writes edges `(parent, child, status)` through the neutral trait, in the given order.
fn seed_edges(graph: &dyn AgentGraphStore, edges: &[(u64, u64, EdgeStatus)]) {
    for (parent, child, status) in edges {
        graph
            .upsert_edge(tid(*parent), tid(*child), *status)
            .wait()
            .expect("upsert edge");
    }
}

fn ids(ns: &[u64]) -> Vec<ThreadId> {
    ns.iter().copied().map(tid).collect()
}

/// R=20 → 22 open, 21 open; 21 → 24 open; 22 → 23 closed; R → 25 closed; 25 → 26 closed.
fn descendant_fixture() -> (tempfile::TempDir, Store) {
    let (dir, store) = open_store();
    seed_threads(
        &store,
        20,
        &[
            (20, None, "/root"),
            (21, Some(20), "/root/t21"),
            (22, Some(20), "/root/t22"),
            (23, Some(22), "/root/t22/t23"),
            (24, Some(21), "/root/t21/t24"),
            (25, Some(20), "/root/t25"),
            (26, Some(25), "/root/t25/t26"),
        ],
    );
    seed_edges(
        &store,
        &[
            (20, 22, EdgeStatus::Open),
            (20, 21, EdgeStatus::Open),
            (21, 24, EdgeStatus::Open),
            (22, 23, EdgeStatus::Closed),
            (20, 25, EdgeStatus::Closed),
            (25, 26, EdgeStatus::Closed),
        ],
    );
    (dir, store)
}
