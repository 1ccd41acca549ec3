//! Store benchmarks: open-descendant BFS and durable mail enqueue.
//!
//! The store lives in a temporary folder under `ARBOR_BENCH_DIR` (default: the system temp
//! folder); put it on the disk you care about, since sync latency decides the sequential figure.

use std::time::{Duration, Instant};

use arbor_agent_graph::{EdgeStatus, Store, ThreadRecord};
use arbor_protocol::{AgentPath, AgentStatus, Mail, MailKind, ThreadId, Timestamp};
use serde_json::json;

/// Edges in the BFS benchmark tree.
const TREE_EDGES: usize = 100_000;
/// Children per node; with 100 000 edges the tree is 6 levels deep.
const FANOUT: usize = 7;
/// Every n-th edge is closed, so the open filter has something to cut.
const CLOSED_EVERY: usize = 10;
/// Timed BFS queries per filter; the median is reported.
const BFS_RUNS: usize = 9;
/// Mails enqueued one at a time, each waited before the next.
const SEQUENTIAL_MAILS: usize = 2_000;
/// Concurrent enqueuers, each waiting for every acknowledgement before its next mail: what
/// group commit is for.
const ENQUEUERS: usize = 64;
const MAILS_PER_ENQUEUER: usize = 500;
/// Tokio tasks, each awaiting every acknowledgement before its next mail.
const TASKS: usize = 256;
const MAILS_PER_TASK: usize = 200;
/// Mails per `enqueue_mail_batch` call, and how many calls.
const BATCH_SIZE: usize = 1_000;
const BATCHES: usize = 100;

pub fn run() -> Result<(), String> {
    let dir = crate::bench_dir()?;
    let store = Store::open(dir.path()).map_err(|err| err.to_string())?;
    fsync_ceiling(dir.path())?;
    bfs(&store)?;
    mail(&store)?;
    store.close();
    Ok(())
}

fn record(
    id: ThreadId,
    session: ThreadId,
    parent: Option<ThreadId>,
    path: AgentPath,
) -> ThreadRecord {
    ThreadRecord {
        id,
        session_id: session,
        parent_id: parent,
        depth: path.depth() as u32,
        path,
        nickname: None,
        role: "worker".into(),
        model: "bench".into(),
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/bench".into(),
        status: AgentStatus::Running,
        rollout_path: String::new(),
        created_at: Timestamp::now(),
        updated_at: Timestamp::now(),
    }
}

/// Builds a breadth-first tree of [`TREE_EDGES`] edges and times `descendants` from its root.
fn bfs(store: &Store) -> Result<(), String> {
    let err = |e: arbor_agent_graph::StoreError| e.to_string();
    let root = ThreadId::new();
    let started = Instant::now();
    store
        .upsert_thread(record(root, root, None, AgentPath::root()))
        .wait()
        .map_err(err)?;
    let mut nodes = vec![(root, AgentPath::root())];
    let mut next_parent = 0;
    let mut thread_tickets = Vec::with_capacity(TREE_EDGES);
    let mut edges = Vec::with_capacity(TREE_EDGES);
    while edges.len() < TREE_EDGES {
        let (parent, parent_path) = nodes[next_parent].clone();
        next_parent += 1;
        for k in 0..FANOUT {
            if edges.len() == TREE_EDGES {
                break;
            }
            let id = ThreadId::new();
            let path = parent_path
                .join(&format!("t{k}"))
                .map_err(|e| e.to_string())?;
            thread_tickets.push(store.upsert_thread(record(id, root, Some(parent), path.clone())));
            let status = if edges.len() % CLOSED_EVERY == CLOSED_EVERY - 1 {
                EdgeStatus::Closed
            } else {
                EdgeStatus::Open
            };
            edges.push((parent, id, status));
            nodes.push((id, path));
        }
    }
    for ticket in thread_tickets {
        ticket.wait().map_err(err)?;
    }
    let edge_tickets: Vec<_> = edges
        .iter()
        .map(|(parent, child, status)| store.upsert_edge(*parent, *child, *status))
        .collect();
    for ticket in edge_tickets {
        ticket.wait().map_err(err)?;
    }
    let depth = nodes.last().map(|(_, path)| path.depth()).unwrap_or(0);
    crate::report(json!({
        "bench": "store.build_tree",
        "edges": TREE_EDGES,
        "depth": depth,
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

/// A session root and one recipient in `store`, for mail: (session id, recipient id, its path).
fn mailbox(store: &Store) -> Result<(ThreadId, ThreadId, AgentPath), String> {
    let err = |e: arbor_agent_graph::StoreError| e.to_string();
    let session = ThreadId::new();
    let recipient = ThreadId::new();
    let to = AgentPath::root().join("inbox").map_err(|e| e.to_string())?;
    store
        .upsert_thread(record(session, session, None, AgentPath::root()))
        .wait()
        .map_err(err)?;
    store
        .upsert_thread(record(recipient, session, Some(session), to.clone()))
        .wait()
        .map_err(err)?;
    Ok((session, recipient, to))
}

/// Mail commits made before [`mail_commit_us`] measures: enough for the WAL to pass its first
/// checkpoint and start over, so that the measured commits overwrite the log in place, as a
/// store does once it has been in use, instead of growing the file.
const WARM_COMMITS: usize = 400;

/// The median time, in microseconds, of one durable mail commit through a store in `dir`,
/// alone (`runs` in a row, after [`WARM_COMMITS`]): the store's share of anything that commits
/// mail one at a time.
pub fn mail_commit_us(dir: &std::path::Path, runs: usize) -> Result<f64, String> {
    let err = |e: arbor_agent_graph::StoreError| e.to_string();
    let store = Store::open(&dir.join("commit-probe")).map_err(err)?;
    let (session, recipient, to) = mailbox(&store)?;
    let mut samples = Vec::with_capacity(runs);
    for run in 0..WARM_COMMITS + runs {
        let mail = Mail::new(
            AgentPath::root(),
            to.clone(),
            MailKind::Message,
            "probe".into(),
        );
        let start = Instant::now();
        store
            .enqueue_mail(session, recipient, &mail)
            .wait()
            .map_err(err)?;
        if run >= WARM_COMMITS {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    store.close();
    std::fs::remove_dir_all(dir.join("commit-probe")).map_err(|e| e.to_string())?;
    Ok(crate::median(samples))
}

/// Times durable mail enqueue: one at a time, many concurrent enqueuers, and batches.
fn mail(store: &Store) -> Result<(), String> {
    let err = |e: arbor_agent_graph::StoreError| e.to_string();
    let (session, recipient, to) = mailbox(store)?;
    let mail = || {
        Mail::new(
            AgentPath::root(),
            to.clone(),
            MailKind::Message,
            "benchmark payload".into(),
        )
    };

    let commits = store.commits();
    let start = Instant::now();
    for _ in 0..SEQUENTIAL_MAILS {
        store
            .enqueue_mail(session, recipient, &mail())
            .wait()
            .map_err(err)?;
    }
    report_rate(
        "store.mail_enqueue_sequential",
        SEQUENTIAL_MAILS,
        start.elapsed(),
        2_000,
        store.commits() - commits,
    );

    let commits = store.commits();
    let start = Instant::now();
    std::thread::scope(|scope| -> Result<(), String> {
        let workers: Vec<_> = (0..ENQUEUERS)
            .map(|_| {
                let mail = &mail;
                scope.spawn(move || -> Result<(), String> {
                    for _ in 0..MAILS_PER_ENQUEUER {
                        store
                            .enqueue_mail(session, recipient, &mail())
                            .wait()
                            .map_err(err)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| "enqueuer panicked".to_string())??;
        }
        Ok(())
    })?;
    report_rate(
        "store.mail_enqueue_threads",
        ENQUEUERS * MAILS_PER_ENQUEUER,
        start.elapsed(),
        50_000,
        store.commits() - commits,
    );

    let commits = store.commits();
    let start = Instant::now();
    enqueue_from_tasks(store, session, recipient, &to)?;
    report_rate(
        "store.mail_enqueue_async_tasks",
        TASKS * MAILS_PER_TASK,
        start.elapsed(),
        50_000,
        store.commits() - commits,
    );

    let batches: Vec<Vec<_>> = (0..BATCHES)
        .map(|_| {
            (0..BATCH_SIZE)
                .map(|_| (session, recipient, mail()))
                .collect()
        })
        .collect();
    let commits = store.commits();
    let start = Instant::now();
    let tickets: Vec<_> = batches
        .into_iter()
        .map(|batch| store.enqueue_mail_batch(batch))
        .collect();
    for ticket in tickets {
        ticket.wait().map_err(err)?;
    }
    report_rate(
        "store.mail_enqueue_batch",
        BATCHES * BATCH_SIZE,
        start.elapsed(),
        50_000,
        store.commits() - commits,
    );
    Ok(())
}

/// [`TASKS`] tokio tasks each send [`MAILS_PER_TASK`] mails, awaiting every ticket before the
/// next send: how agents send mail in arbor.
fn enqueue_from_tasks(
    store: &Store,
    session: ThreadId,
    recipient: ThreadId,
    to: &AgentPath,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let store = store.clone();
                let to = to.clone();
                tokio::spawn(async move {
                    for _ in 0..MAILS_PER_TASK {
                        let mail = Mail::new(
                            AgentPath::root(),
                            to.clone(),
                            MailKind::Message,
                            "benchmark payload".into(),
                        );
                        store.enqueue_mail(session, recipient, &mail).await?;
                    }
                    Ok::<(), arbor_agent_graph::StoreError>(())
                })
            })
            .collect();
        for task in tasks {
            task.await
                .map_err(|e| format!("enqueue task failed: {e}"))?
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// Syncs one overwritten 4 KiB block repeatedly: the most one-at-a-time durable commits per
/// second this disk allows, to read the sequential enqueue figure against.
fn fsync_ceiling(dir: &std::path::Path) -> Result<(), String> {
    let median_us = crate::sync_cost_us(dir, SEQUENTIAL_MAILS / 4)?;
    crate::report(json!({
        "bench": "store.fsync_ceiling",
        "syncs": SEQUENTIAL_MAILS / 4,
        "median_us": (median_us * 10.0).round() / 10.0,
        "per_second": (1e6 / median_us).round(),
    }));
    Ok(())
}

fn report_rate(bench: &str, count: usize, elapsed: Duration, goal: u64, commits: u64) {
    crate::report(json!({
        "bench": bench,
        "mails": count,
        "commits": commits,
        "seconds": elapsed.as_secs_f64(),
        "per_second": (count as f64 / elapsed.as_secs_f64()).round(),
        "goal_per_second": goal,
    }));
}

fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e5).round() / 100.0
}
