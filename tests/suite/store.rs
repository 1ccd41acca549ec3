//! The SQLite store: spawn graph, thread index, durable mail, approval log, bad files.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use arbor_agent_graph::{
    AgentGraphStore, ApprovalDecision, ApprovalOutcome, ApprovalRecord, DecidedBy, EdgeStatus,
    SCHEMA_VERSION, STATE_FILE_NAME, SessionTree, Store, StoreError, ThreadRecord,
};
use arbor_protocol::{AgentPath, AgentStatus, Mail, MailId, MailKind, ThreadId, Timestamp};

/// Set in the environment of the child process of the SIGKILL test: the store's home.
const CRASH_ENV: &str = "ARBOR_CRASH_CHILD_HOME";
/// Acknowledged mails the parent waits for before it kills the child.
const CRASH_ACKS: usize = 50;

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

#[test]
fn children_are_ordered_by_id_and_filtered_by_status() {
    let (_dir, store) = open_store();
    seed_threads(
        &store,
        1,
        &[
            (1, None, "/root"),
            (2, Some(1), "/root/c2"),
            (3, Some(1), "/root/c3"),
        ],
    );
    seed_edges(
        &store,
        &[(1, 3, EdgeStatus::Closed), (1, 2, EdgeStatus::Open)],
    );
    let check = |filter, want: &[u64]| {
        assert_eq!(
            store.children(tid(1), filter).expect("children"),
            ids(want),
            "{filter:?}"
        );
    };
    check(None, &[2, 3]);
    check(Some(EdgeStatus::Open), &[2]);
    check(Some(EdgeStatus::Closed), &[3]);

    // A missing edge: a no-op, not an error.
    assert!(
        !store
            .set_edge_status(tid(99), EdgeStatus::Closed)
            .wait()
            .expect("no-op")
    );
    // Upsert overwrites (last writer wins), and so does set_edge_status.
    seed_edges(&store, &[(1, 3, EdgeStatus::Open)]);
    check(Some(EdgeStatus::Open), &[2, 3]);
    assert!(
        store
            .set_edge_status(tid(2), EdgeStatus::Closed)
            .wait()
            .expect("close")
    );
    check(Some(EdgeStatus::Open), &[3]);
    assert_eq!(
        store.edge(tid(2)).expect("edge"),
        Some((tid(1), EdgeStatus::Closed))
    );
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

#[test]
fn descendants_are_breadth_first_and_filtered_on_every_edge() {
    let (_dir, store) = descendant_fixture();
    let graph: &dyn AgentGraphStore = &store;
    let check = |filter, want: &[u64]| {
        assert_eq!(
            graph.descendants(tid(20), filter).expect("bfs"),
            ids(want),
            "{filter:?}"
        );
    };
    check(None, &[21, 22, 25, 23, 24, 26]);
    check(Some(EdgeStatus::Open), &[21, 22, 24]);
    check(Some(EdgeStatus::Closed), &[25, 26]);
    assert_eq!(store.descendants(tid(24), None).expect("leaf"), ids(&[]));
}

#[test]
fn paths_resolve_to_children_and_descendants_through_matching_edges() {
    let (_dir, store) = descendant_fixture();
    let open = Some(EdgeStatus::Open);
    let closed = Some(EdgeStatus::Closed);
    let child = |at: &str, filter| {
        store
            .find_child_by_path(tid(20), &path(at), filter)
            .expect("child")
    };
    let below = |at: &str, filter| {
        store
            .find_descendant_by_path(tid(20), &path(at), filter)
            .expect("descendant")
    };
    assert_eq!(child("/root/t22", open), Some(tid(22)));
    assert_eq!(child("/root/t25", open), None);
    assert_eq!(
        child("/root/t21/t24", None),
        None,
        "a grandchild is not a child"
    );
    assert_eq!(below("/root/t21/t24", open), Some(tid(24)));
    assert_eq!(
        below("/root/t22/t23", open),
        None,
        "the edge into 23 is closed"
    );
    assert_eq!(below("/root/t22/t23", None), Some(tid(23)));
    assert_eq!(below("/root/t25/t26", open), None);
    assert_eq!(below("/root/t25/t26", closed), Some(tid(26)));
    assert_eq!(
        below("/root", None),
        None,
        "the root is not its own descendant"
    );

    // A closed agent's path reused by a new spawn resolves to the open agent.
    seed_threads(&store, 20, &[(27, Some(20), "/root/t25")]);
    seed_edges(&store, &[(20, 27, EdgeStatus::Open)]);
    assert_eq!(child("/root/t25", None), Some(tid(27)));
    assert_eq!(child("/root/t25", closed), Some(tid(25)));
    assert_eq!(below("/root/t25", open), Some(tid(27)));
}

#[test]
fn edges_refuse_cycles_and_unknown_threads() {
    let (_dir, store) = descendant_fixture();
    let err = store
        .upsert_edge(tid(24), tid(20), EdgeStatus::Open)
        .wait()
        .expect_err("cycle");
    assert!(matches!(err, StoreError::Cycle { .. }), "{err}");
    let err = store
        .upsert_edge(tid(20), tid(98), EdgeStatus::Open)
        .wait()
        .expect_err("unknown child");
    assert!(
        matches!(err, StoreError::UnknownThread(id) if id == tid(98)),
        "{err}"
    );
    seed_threads(&store, 30, &[(30, None, "/root")]);
    let err = store
        .upsert_edge(tid(20), tid(30), EdgeStatus::Open)
        .wait()
        .expect_err("another session");
    assert!(err.to_string().contains("different sessions"), "{err}");
    // The failed writes left the graph as it was.
    assert_eq!(store.descendants(tid(20), None).expect("bfs").len(), 6);
}

#[test]
fn thread_index_keeps_records_statuses_and_sessions() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/w")]);
    seed_threads(&store, 3, &[(3, None, "/root")]);
    let mut want = record(2, 1, Some(1), "/root/w");
    want.nickname = Some("Plato".into());
    want.effort = Some("high".into());
    store.upsert_thread(want.clone()).wait().expect("update");
    assert_eq!(store.thread(tid(2)).expect("read"), Some(want.clone()));

    let done = AgentStatus::Completed(Some("all done".into()));
    store
        .set_thread_status(tid(2), &done)
        .wait()
        .expect("status");
    let got = store.thread(tid(2)).expect("read").expect("present");
    assert_eq!(got.status, done);
    assert!(got.updated_at > want.updated_at);
    let err = store
        .set_thread_status(tid(77), &AgentStatus::Running)
        .wait()
        .expect_err("unknown");
    assert!(matches!(err, StoreError::UnknownThread(_)), "{err}");

    let in_session: Vec<_> = store.threads_in_session(tid(1)).expect("list");
    assert_eq!(
        in_session.iter().map(|r| r.id).collect::<Vec<_>>(),
        ids(&[1, 2])
    );
    let sessions = store.sessions().expect("sessions");
    assert_eq!(
        sessions.iter().map(|r| r.id).collect::<Vec<_>>(),
        ids(&[3, 1])
    );

    assert_eq!(
        store
            .find_session_by_prefix(&tid(3).to_string())
            .expect("full id")
            .id,
        tid(3)
    );
    let err = store
        .find_session_by_prefix("00000000")
        .expect_err("ambiguous");
    assert!(err.to_string().contains("ambiguous"), "{err}");
    let err = store.find_session_by_prefix("ffffffff").expect_err("none");
    assert!(err.to_string().contains("no session matches"), "{err}");
    let err = store.find_session_by_prefix("0000").expect_err("short");
    assert!(matches!(err, StoreError::PrefixTooShort(_)), "{err}");
}

fn mail(to: &str, content: &str) -> Mail {
    Mail::new(
        AgentPath::root(),
        path(to),
        MailKind::Message,
        content.into(),
    )
}

#[test]
fn mail_keeps_enqueue_order_until_consumed() {
    let (_dir, store) = open_store();
    seed_threads(
        &store,
        1,
        &[
            (1, None, "/root"),
            (2, Some(1), "/root/a"),
            (3, Some(1), "/root/b"),
        ],
    );
    let sent: Vec<Mail> = (0..5).map(|i| mail("/root/a", &format!("m{i}"))).collect();
    for m in &sent {
        store
            .enqueue_mail(tid(1), tid(2), m)
            .wait()
            .expect("enqueue");
    }
    store
        .enqueue_mail_batch(vec![(tid(1), tid(3), mail("/root/b", "other"))])
        .wait()
        .expect("batch");
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), sent);
    assert_eq!(store.unread_count(tid(2)).expect("count"), 5);

    assert!(
        store
            .mark_mail_consumed(sent[1].id)
            .wait()
            .expect("consume")
    );
    assert!(
        !store
            .mark_mail_consumed(sent[1].id)
            .wait()
            .expect("twice is fine")
    );
    assert!(
        !store
            .mark_mail_consumed(MailId::new())
            .wait()
            .expect("unknown is fine")
    );
    let left: Vec<_> = [0, 2, 3, 4].map(|i| sent[i].clone()).into();
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), left);
    assert_eq!(store.unread_count(tid(2)).expect("count"), 4);

    // Enqueueing a stored id again does not deliver it twice.
    store
        .enqueue_mail(tid(1), tid(2), &sent[1])
        .wait()
        .expect("again");
    store
        .enqueue_mail(tid(1), tid(2), &sent[0])
        .wait()
        .expect("again");
    assert_eq!(store.unconsumed_mail(tid(2)).expect("list"), left);

    let in_session = store.unconsumed_in_session(tid(1)).expect("session");
    assert_eq!(in_session.len(), 5);
    assert_eq!(in_session[4].recipient_id, tid(3));
    assert_eq!(in_session[4].mail.content, "other");
    let counts = store.unread_counts(tid(1)).expect("counts");
    assert_eq!((counts[&tid(2)], counts[&tid(3)]), (4, 1));
    assert_eq!(store.unconsumed_mail(tid(9)).expect("nobody"), []);
}

#[test]
fn concurrent_enqueuers_are_all_acknowledged_and_kept_in_order() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/a")]);
    let per_thread = 40;
    let sent: Vec<Vec<Mail>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let store = store.clone();
                scope.spawn(move || {
                    (0..per_thread)
                        .map(|i| {
                            let m = mail("/root/a", &format!("w{w} m{i}"));
                            store
                                .enqueue_mail(tid(1), tid(2), &m)
                                .wait()
                                .expect("enqueue");
                            m
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let stored = store.unconsumed_mail(tid(2)).expect("list");
    assert_eq!(stored.len(), 4 * per_thread);
    for mine in sent {
        let order: Vec<_> = stored
            .iter()
            .filter(|m| mine.contains(m))
            .cloned()
            .collect();
        assert_eq!(order, mine, "each sender's mail stays in send order");
    }
}

/// Not a test on its own: the child process of `acknowledged_mail_survives_sigkill`. Without
/// [`CRASH_ENV`] it returns at once.
#[test]
fn crash_child_writer() {
    let Some(home) = std::env::var_os(CRASH_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&home)).expect("child opens the store");
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        let m = mail("/root/a", &format!("crash {i}"));
        store
            .enqueue_mail(tid(1), tid(2), &m)
            .wait()
            .expect("enqueue");
        writeln!(out, "acked {}", m.id).expect("write ack");
        out.flush().expect("flush ack");
    }
}

/// Kills the child process if a test fails before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn acknowledged_mail_survives_sigkill() {
    use std::os::unix::process::ExitStatusExt;

    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/a")]);
    store.close();
    drop(store);

    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "store::crash_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_ENV, dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn child"),
    );
    let stdout = child.0.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = Vec::new();
    while acked.len() < CRASH_ACKS {
        let Some(line) = lines.next() else {
            panic!("child stopped after {} acks", acked.len());
        };
        let line = line.expect("read child output");
        // libtest's `test store::crash_child_writer ... ` may share the first line.
        if let Some((_, id)) = line.split_once("acked ") {
            acked.push(MailId::parse(id).expect("mail id"));
        }
    }
    let pid = libc::pid_t::try_from(child.0.id()).expect("pid");
    // SAFETY: `kill` has no memory-safety preconditions; `pid` is our own unreaped child.
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill failed");
    let status = child.0.wait().expect("reap child");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    drop(lines);

    let store = Store::open(dir.path()).expect("reopen after the kill");
    let stored: Vec<MailId> = store
        .unconsumed_mail(tid(2))
        .expect("list")
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert!(
        stored.starts_with(&acked),
        "acked {} mails, found {} stored, acked ones missing or out of order",
        acked.len(),
        stored.len()
    );
}

#[test]
fn approvals_are_logged_with_their_decisions() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/w")]);
    let action = serde_json::json!({"type": "exec", "cmd": ["rm", "-rf", "build"]});
    let first = ApprovalRecord::pending(
        "req-1".into(),
        tid(1),
        tid(2),
        path("/root/w"),
        action.clone(),
        Some("clean the build".into()),
    );
    let second = ApprovalRecord::pending(
        "req-2".into(),
        tid(1),
        tid(1),
        AgentPath::root(),
        action,
        None,
    );
    store
        .record_approval_request(first.clone())
        .wait()
        .expect("request 1");
    store
        .record_approval_request(second.clone())
        .wait()
        .expect("request 2");
    assert_eq!(
        store.pending_approvals(tid(1)).expect("pending"),
        [first.clone(), second.clone()]
    );

    let decision = ApprovalDecision {
        outcome: ApprovalOutcome::Deny,
        decided_by: DecidedBy::Guardian,
        risk_level: Some("high".into()),
        rationale: Some("deletes files".into()),
        tokens: Some(1234),
    };
    store
        .decide_approval("req-1", decision)
        .wait()
        .expect("decide");
    let all = store.approvals(tid(1)).expect("list");
    assert_eq!(all.len(), 2);
    let decided = &all[0];
    assert_eq!(decided.id, "req-1");
    assert_eq!(decided.outcome, ApprovalOutcome::Deny);
    assert_eq!(decided.decided_by, Some(DecidedBy::Guardian));
    assert_eq!(decided.risk_level.as_deref(), Some("high"));
    assert_eq!(decided.rationale.as_deref(), Some("deletes files"));
    assert_eq!(decided.tokens, Some(1234));
    assert!(decided.decided_at.is_some_and(|t| t >= first.requested_at));
    assert_eq!(
        (&decided.action, &decided.justification),
        (&first.action, &first.justification)
    );
    assert_eq!(
        (decided.requester_id, &decided.requester),
        (tid(2), &first.requester)
    );
    assert_eq!(all[1], second);
    assert_eq!(store.pending_approvals(tid(1)).expect("pending"), [second]);

    let nobody = ApprovalDecision {
        outcome: ApprovalOutcome::Allow,
        decided_by: DecidedBy::User,
        risk_level: None,
        rationale: None,
        tokens: None,
    };
    let err = store
        .decide_approval("req-9", nobody)
        .wait()
        .expect_err("unknown");
    assert!(matches!(err, StoreError::UnknownApproval(_)), "{err}");
}

/// Root R=1 with children a=2 (open) and b=3 (closed), and a/c=4 (open) under a.
fn tree_fixture() -> (tempfile::TempDir, Store) {
    let (dir, store) = open_store();
    let mut root = record(1, 1, None, "/root");
    root.nickname = Some("Ada".into());
    let mut a = record(2, 1, Some(1), "/root/a");
    a.nickname = Some("Plato".into());
    a.role = "worker".into();
    a.status = AgentStatus::Completed(Some("done\nsecond line".into()));
    let mut b = record(3, 1, Some(1), "/root/b");
    b.nickname = Some("Hume \"the\" Scot".into());
    b.status = AgentStatus::Closed;
    let mut c = record(4, 1, Some(2), "/root/a/c");
    c.role = "explorer".into();
    c.status = AgentStatus::Errored("boom".into());
    for r in [root, a, b, c] {
        store.upsert_thread(r).wait().expect("thread");
    }
    seed_edges(
        &store,
        &[
            (1, 3, EdgeStatus::Closed),
            (1, 2, EdgeStatus::Open),
            (2, 4, EdgeStatus::Open),
        ],
    );
    (dir, store)
}

#[test]
fn tree_renders_as_text() {
    let (_dir, store) = tree_fixture();
    let open = SessionTree::load(&store, tid(1), false).expect("load");
    assert_eq!(
        open.to_text(),
        "/root (Ada, default) running\n\
         \x20 /root/a (Plato, worker) completed: done…\n\
         \x20   /root/a/c (explorer) errored: boom\n"
    );
    let all = SessionTree::load(&store, tid(1), true).expect("load");
    assert_eq!(
        all.to_text(),
        "/root (Ada, default) running\n\
         \x20 /root/a (Plato, worker) completed: done…\n\
         \x20   /root/a/c (explorer) errored: boom\n\
         \x20 /root/b (Hume \"the\" Scot, default) closed [closed]\n"
    );
    assert_eq!(all.len(), 4);

    let mut adjusted = SessionTree::load(&store, tid(1), false).expect("load");
    adjusted.adjust_records(|record| {
        if record.status == AgentStatus::Running {
            record.status = AgentStatus::Interrupted("process_exit".into());
        }
    });
    assert!(
        adjusted
            .to_text()
            .starts_with("/root (Ada, default) interrupted: process_exit\n"),
        "{}",
        adjusted.to_text()
    );
}

#[test]
fn tree_renders_as_dot_and_mermaid() {
    let (_dir, store) = tree_fixture();
    let all = SessionTree::load(&store, tid(1), true).expect("load");
    let (r, a, b, c) = (tid(1), tid(2), tid(3), tid(4));
    assert_eq!(
        all.to_dot(),
        format!(
            "digraph session {{\n  node [shape=box];\n\
             \x20 \"{r}\" [label=\"/root\\n(Ada, default)\\nrunning\"];\n\
             \x20 \"{a}\" [label=\"/root/a\\n(Plato, worker)\\ncompleted: done…\"];\n\
             \x20 \"{c}\" [label=\"/root/a/c\\n(explorer)\\nerrored: boom\"];\n\
             \x20 \"{b}\" [label=\"/root/b\\n(Hume \\\"the\\\" Scot, default)\\nclosed\"];\n\
             \x20 \"{r}\" -> \"{a}\";\n\
             \x20 \"{r}\" -> \"{b}\" [style=dashed, label=\"closed\"];\n\
             \x20 \"{a}\" -> \"{c}\";\n\
             }}\n"
        )
    );
    assert_eq!(
        all.to_mermaid(),
        "flowchart TD\n\
         \x20 n0[\"/root<br/>(Ada, default)<br/>running\"]\n\
         \x20 n1[\"/root/a<br/>(Plato, worker)<br/>completed: done…\"]\n\
         \x20 n3[\"/root/a/c<br/>(explorer)<br/>errored: boom\"]\n\
         \x20 n2[\"/root/b<br/>(Hume #quot;the#quot; Scot, default)<br/>closed\"]\n\
         \x20 n0 --> n1\n\
         \x20 n0 -. closed .-> n2\n\
         \x20 n1 --> n3\n"
    );
    let open = SessionTree::load(&store, tid(1), false).expect("load");
    assert!(!open.to_mermaid().contains("/root/b"));
    assert!(!open.to_dot().contains("/root/b"));
}

/// Asserts opening `home` fails, naming the file and saying `needle`.
fn assert_refused(home: &Path, needle: &str) -> StoreError {
    let err = Store::open(home).expect_err("bad file must be refused");
    let text = err.to_string();
    let file = home.join(STATE_FILE_NAME);
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains(needle), "{text}");
    err
}

#[test]
fn random_bytes_are_not_a_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(STATE_FILE_NAME);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&file, &bytes).expect("write junk");
    let err = assert_refused(dir.path(), "is not an arbor store: file is not a database");
    assert!(matches!(err, StoreError::NotArborStore { .. }), "{err:?}");
    assert_eq!(
        std::fs::read(&file).expect("reread"),
        bytes,
        "the file is left untouched"
    );
}

#[test]
fn another_applications_database_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(STATE_FILE_NAME);
    let conn = rusqlite::Connection::open(&file).expect("sqlite");
    conn.execute_batch("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup');")
        .expect("foreign schema");
    drop(conn);
    assert_refused(
        dir.path(),
        "is not an arbor store: it holds another application's tables (recipes)",
    );

    let other = tempfile::tempdir().expect("tempdir");
    let conn = rusqlite::Connection::open(other.path().join(STATE_FILE_NAME)).expect("sqlite");
    conn.pragma_update(None, "application_id", 0x1234_5678)
        .expect("app id");
    drop(conn);
    assert_refused(other.path(), "application id is 0x12345678");
}

#[test]
fn a_store_from_a_newer_arbor_is_refused() {
    let (dir, store) = open_store();
    store.close();
    drop(store);
    let conn = rusqlite::Connection::open(dir.path().join(STATE_FILE_NAME)).expect("sqlite");
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .expect("bump");
    drop(conn);
    let err = assert_refused(dir.path(), "newer than");
    assert!(matches!(err, StoreError::NewerSchema { .. }), "{err:?}");
}

#[test]
fn a_store_reopens_with_its_data() {
    let (dir, store) = descendant_fixture();
    store.close();
    drop(store);
    let again = Store::open(dir.path()).expect("reopen");
    assert_eq!(
        again
            .descendants(tid(20), Some(EdgeStatus::Open))
            .expect("bfs"),
        ids(&[21, 22, 24])
    );
}
