//! The SQLite store as the projection of session logs: spawn graph, thread index, mail
//! queue, approval log, session tree, bad files; one module each, with the fixtures they share
//! here. Fixtures write rows the one way the store is written: log lines applied to a
//! session's state, then committed.

mod approvals;
mod files;
mod graph;
mod mail;
mod tree;

use arbor_agent_graph::{SessionState, Store};
use arbor_protocol::{
    AgentPath, AgentStatus, ROLLOUT_FORMAT_VERSION, RolloutItem, RolloutLine, SessionMeta,
    StatusChanged, ThreadId, Timestamp, UserTarget,
};

/// A thread id whose text sorts like `n`.
pub(crate) fn tid(n: u64) -> ThreadId {
    ThreadId::parse(&format!("00000000-0000-7000-8000-{n:012}")).expect("crafted id")
}

fn path(text: &str) -> AgentPath {
    AgentPath::parse(text).expect("valid path")
}

/// The lines of one session, applied to its state as they are written.
pub(crate) struct Seed {
    state: SessionState,
}

impl Seed {
    pub(crate) fn new(session: u64) -> Self {
        Self {
            state: SessionState::new(tid(session)),
        }
    }

    /// Appends a line of thread `n`.
    pub(crate) fn line(&mut self, n: u64, item: RolloutItem) -> &mut Self {
        let seq = self.state.applied.seq + 1;
        let line = RolloutLine {
            seq: Some(seq),
            thread: Some(tid(n)),
            timestamp: Timestamp::from_millis(1_000_000 + seq as i64),
            item,
        };
        let end = self.state.applied.offset + 100;
        self.state.apply(&line, end);
        self
    }

    /// Spawns thread `n` at `at` below `parent` (a root when `None`); `edit` changes its header.
    pub(crate) fn spawn_with(
        &mut self,
        n: u64,
        parent: Option<u64>,
        at: &str,
        edit: impl FnOnce(&mut SessionMeta),
    ) -> &mut Self {
        let p = path(at);
        let mut meta = SessionMeta {
            thread_id: tid(n),
            session_id: self.state.session_id().unwrap_or(tid(n)),
            parent_id: parent.map(tid),
            depth: p.depth() as u32,
            path: p,
            nickname: None,
            role: "default".into(),
            model: "scripted".into(),
            provider: None,
            effort: None,
            sandbox: "workspace-write".into(),
            cwd: "/work".into(),
            format_version: ROLLOUT_FORMAT_VERSION,
            repository: None,
            handle: None,
        };
        edit(&mut meta);
        self.line(n, RolloutItem::SessionMeta(Box::new(meta)))
    }

    pub(crate) fn spawn(&mut self, n: u64, parent: Option<u64>, at: &str) -> &mut Self {
        self.spawn_with(n, parent, at, |_| {})
    }

    /// Closes thread `n` from outside the tree.
    pub(crate) fn close(&mut self, n: u64) -> &mut Self {
        self.line(n, RolloutItem::UserClose(UserTarget { target_id: tid(n) }))
    }

    pub(crate) fn status(&mut self, n: u64, status: AgentStatus) -> &mut Self {
        self.line(n, RolloutItem::Status(StatusChanged { status }))
    }

    pub(crate) fn commit(&mut self, store: &Store) -> &mut Self {
        store.commit(&mut self.state).expect("commit");
        self
    }

    pub(crate) fn state(&self) -> &SessionState {
        &self.state
    }
}

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open store");
    (dir, store)
}

fn ids(ns: &[u64]) -> Vec<ThreadId> {
    ns.iter().copied().map(tid).collect()
}

/// R=20 → 22 open, 21 open; 21 → 24 open; 22 → 23 closed; R → 25 closed; 25 → 26 closed.
fn descendant_fixture() -> (tempfile::TempDir, Store) {
    let (dir, store) = open_store();
    descendant_seed().commit(&store);
    (dir, store)
}

fn descendant_seed() -> Seed {
    let mut seed = Seed::new(20);
    seed.spawn(20, None, "/root")
        .spawn(21, Some(20), "/root/t21")
        .spawn(22, Some(20), "/root/t22")
        .spawn(23, Some(22), "/root/t22/t23")
        .spawn(24, Some(21), "/root/t21/t24")
        .spawn(25, Some(20), "/root/t25")
        .spawn(26, Some(25), "/root/t25/t26")
        .close(23)
        .close(25)
        .close(26);
    seed
}
