//! The single writer thread: owns the only read-write connection (lending it, between its own
//! uses, to a mail committed on its caller's thread: see `inline`), drains queued jobs into one
//! transaction (group commit, one savepoint per job) and answers each job after the commit.
//!
//! Projections (statuses, consumed marks) stay out of an urgent write's transaction, so that
//! the write its caller waits on carries only what must come before it. Right after that
//! commit, while the caller goes on, the writer commits the waiting projections without a sync
//! of their own (with checkpoints held off, so nothing unsynced is ever copied into the
//! database) and answers them once a later sync covers them: the next group's, or its own
//! after [`LAZY_WINDOW`].

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::StoreError;
use crate::error::OpResult;
use crate::inbox::{Inbox, Msg};
use crate::inline::{Counters, Shared};
use crate::store::lock;

/// The longest a lazy write (a projection nobody waits on) waits for company before it
/// commits on its own.
pub(crate) const LAZY_WINDOW: Duration = Duration::from_millis(20);

/// The longest a deferred write (awaited, but not urgent: a turn's result mail, whose agent
/// has moved on) waits for company before it commits on its own.
pub(crate) const DEFER_WINDOW: Duration = Duration::from_millis(1);

/// Most jobs one group transaction takes, so a flood of writers still sees steady commits.
const MAX_GROUP: usize = 4096;

/// The answer to one write, available once its transaction is committed and synced.
///
/// Sync code calls [`Ticket::wait`]; async code `.await`s the ticket, which never blocks a
/// runtime worker. Dropping a ticket does not cancel the write.
#[derive(Debug)]
#[must_use = "a write is only known durable once its ticket resolves"]
pub struct Ticket<T> {
    rx: oneshot::Receiver<Result<T, StoreError>>,
    path: Arc<Path>,
}

impl<T> Ticket<T> {
    pub(crate) fn new(rx: oneshot::Receiver<Result<T, StoreError>>, path: Arc<Path>) -> Self {
        Self { rx, path }
    }

    /// A ticket that is already answered: for other [`crate::AgentGraphStore`] implementations
    /// and for writes refused before they reach the writer.
    pub fn ready(result: Result<T, StoreError>) -> Self {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(result);
        Self {
            rx,
            path: Arc::from(Path::new("")),
        }
    }

    /// Blocks the calling thread until the write is committed (or failed).
    ///
    /// Panics when called from inside an async runtime's context: there, `.await` the ticket.
    pub fn wait(self) -> Result<T, StoreError> {
        let path = self.path;
        self.rx.blocking_recv().unwrap_or_else(|_| {
            Err(StoreError::Closed {
                path: path.to_path_buf(),
            })
        })
    }
}

impl<T> Future for Ticket<T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok(result)) => Poll::Ready(result),
            Poll::Ready(Err(_)) => Poll::Ready(Err(StoreError::Closed {
                path: self.path.to_path_buf(),
            })),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// One queued write.
pub(crate) trait Job: Send {
    /// Runs the write inside its savepoint; true when it succeeded.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller once the group's fate is known (`commit` holds the commit error).
    fn finish(self: Box<Self>, path: &Path, commit: Option<&str>);
}

/// A write operation and the channel its answer goes to.
pub(crate) struct Write<T, F> {
    op_name: &'static str,
    op: Option<F>,
    outcome: Option<OpResult<T>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Write<T, F> {
    pub(crate) fn new(
        op_name: &'static str,
        op: F,
        reply: oneshot::Sender<Result<T, StoreError>>,
    ) -> Self {
        Self {
            op_name,
            op: Some(op),
            outcome: None,
            reply,
        }
    }
}

impl<T, F> Job for Write<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> OpResult<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(op) = self.op.take() else {
            return false;
        };
        let outcome = op(conn);
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, path: &Path, commit: Option<&str>) {
        let result = match (self.outcome, commit) {
            (Some(Err(fail)), _) => Err(fail.into_store(path, self.op_name)),
            (Some(Ok(_)) | None, Some(_)) | (None, None) => Err(StoreError::Commit {
                path: path.to_path_buf(),
                op: self.op_name,
                message: commit.unwrap_or("the write never ran").to_string(),
            }),
            (Some(Ok(value)), None) => Ok(value),
        };
        // A caller that dropped its ticket does not want the answer; the write stands.
        let _ = self.reply.send(result);
    }
}

/// Before an unsynced commit: no sync, and no checkpoint that could copy unsynced pages into
/// the database. (Each runs as a cached statement: this is on every mail's path.)
const RELAX: [&str; 2] = ["PRAGMA synchronous = OFF", "PRAGMA wal_autocheckpoint = 0"];

/// After it: synced commits again, and SQLite's default checkpoint threshold (WAL pages).
const RESTORE: [&str; 2] = [
    "PRAGMA synchronous = FULL",
    "PRAGMA wal_autocheckpoint = 1000",
];

/// The writer thread's body: runs until a stop request or until every sender is gone. Counts
/// synced commits in `counters`.
pub(crate) fn run(
    shared: Shared,
    path: Arc<Path>,
    inbox: Arc<Inbox>,
    jobs: Receiver<Msg>,
    counters: Arc<Counters>,
) {
    let mut group: Vec<Box<dyn Job>> = Vec::new();
    // Projections committed without a sync, and when they must be synced at the latest.
    let mut held: Vec<Box<dyn Job>> = Vec::new();
    let mut held_due: Option<Instant> = None;
    // When waiting writes want their commit.
    let mut due: Option<Instant> = None;
    loop {
        let next = match earliest(due, held_due) {
            Some(at) => jobs.recv_deadline(at).map_err(|err| err.is_disconnected()),
            None => jobs.recv().map_err(|_| true),
        };
        let mut stop = false;
        let mut independent = false;
        match next {
            Ok(Msg::Job(job)) => group.push(job),
            Ok(Msg::Independent(job)) => {
                group.push(job);
                independent = true;
            }
            Ok(Msg::Waited(job)) => {
                // The urgent job that moved it is right behind.
                group.push(job);
                continue;
            }
            Ok(Msg::Due(at)) => {
                due = earliest(due, Some(at));
                continue;
            }
            Ok(Msg::Stop) | Err(true) => stop = true,
            // A deadline passed: commit what waits.
            Err(false) => {}
        }
        // An independent write leaves the projections for right after its commit.
        let drained = inbox.drain(&jobs, &mut group, MAX_GROUP, !independent);
        stop |= drained.stop;
        due = if drained.more {
            Some(Instant::now())
        } else {
            drained.lazy_due
        };
        // The connection is locked only while it is used, never while the writer answers or
        // waits: a caller woken by an answer may commit in place at once. It leaves the mutex
        // only once this loop has ended, so `else { break }` never runs.
        if !group.is_empty() {
            let Some(commit) = using(&shared, |conn| commit_group(conn, &mut group)) else {
                break;
            };
            if commit.is_ok() {
                counters.synced.fetch_add(1, Ordering::Relaxed);
            }
            answer(&path, &mut group, commit.as_ref().err().map(String::as_str));
            if commit.is_ok() {
                // Its sync covered the projections committed before it.
                answer(&path, &mut held, None);
                held_due = None;
            }
        }
        if !held.is_empty() && held_due.is_some_and(|at| at <= Instant::now()) {
            let Some(synced) = using(&shared, |conn| crate::walvfs::sync_wal(conn).err()) else {
                break;
            };
            answer(&path, &mut held, synced.as_deref());
            held_due = None;
        }
        if stop {
            break;
        }
        if independent && inbox.drain_lazy(&jobs, &mut group) {
            let restored = using(&shared, |conn| {
                run_unsynced(conn, &path, &mut group, &mut held)
            });
            if restored != Some(true) {
                break;
            }
            held_due = held_due.or_else(|| Some(Instant::now() + LAZY_WINDOW));
        }
    }
    // From here on no caller commits on its own thread either: the connection leaves.
    let Some(conn) = lock(&shared).take() else {
        return;
    };
    // Whatever way the loop ended, what is held is synced before the connection closes.
    if !held.is_empty() {
        let synced = crate::walvfs::sync_wal(&conn).err();
        answer(&path, &mut held, synced.as_deref());
    }
    // Jobs still queued after a stop are dropped; their tickets resolve to `Closed`.
    drop(jobs);
    let _ = conn.close();
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Answers jobs whose transaction committed; `failure` names what went wrong after that.
fn answer(path: &Path, jobs: &mut Vec<Box<dyn Job>>, failure: Option<&str>) {
    for job in jobs.drain(..) {
        job.finish(path, failure);
    }
}

/// Commits projections without a sync and without a checkpoint, keeping them in `held`
/// (failures are answered at once). False when the connection could not be put back to synced
/// commits: the writer must stop rather than commit anything else unsynced.
fn run_unsynced(
    conn: &Connection,
    path: &Path,
    group: &mut Vec<Box<dyn Job>>,
    held: &mut Vec<Box<dyn Job>>,
) -> bool {
    let relaxed = RELAX.iter().try_for_each(|sql| pragma(conn, sql));
    let commit = match relaxed {
        Ok(()) => commit_group(conn, group),
        Err(err) => Err(format!("cannot relax the sync for projections: {err}")),
    };
    let restored = RESTORE.iter().try_for_each(|sql| pragma(conn, sql));
    match commit {
        Ok(()) => held.append(group),
        Err(message) => answer(path, group, Some(&message)),
    }
    restored.is_ok()
}

/// Runs `f` with the writer's connection locked; `None` once the connection has left (the
/// writer stopped).
fn using<T>(shared: &Shared, f: impl FnOnce(&Connection) -> T) -> Option<T> {
    lock(shared).as_ref().map(f)
}

/// Runs `group` in one transaction, each job in its own savepoint, and commits it.
fn commit_group(conn: &Connection, group: &mut [Box<dyn Job>]) -> Result<(), String> {
    if let Err(err) = exec(conn, "BEGIN IMMEDIATE") {
        return Err(format!("cannot begin the write transaction: {err}"));
    }
    commit_begun(conn, group)
}

/// Runs `group` inside the write transaction already open on `conn`, each job in its own
/// savepoint (a failing job is rolled back alone), then commits; rolls back on any other
/// failure.
pub(crate) fn commit_begun(conn: &Connection, group: &mut [Box<dyn Job>]) -> Result<(), String> {
    let mut broken: Option<String> = None;
    for job in group.iter_mut() {
        if let Err(err) = exec(conn, "SAVEPOINT job") {
            broken = Some(format!("cannot open a savepoint: {err}"));
            break;
        }
        let ok = job.run(conn);
        let close = if ok {
            exec(conn, "RELEASE job")
        } else {
            exec(conn, "ROLLBACK TO job").and_then(|()| exec(conn, "RELEASE job"))
        };
        if let Err(err) = close {
            // A failed job's changes might survive: give up the whole group instead.
            broken = Some(format!("cannot close a savepoint: {err}"));
            break;
        }
    }
    let commit = match broken {
        Some(message) => Err(message),
        // SQLite rolls a transaction back on its own after some errors (I/O, disk full).
        None if conn.is_autocommit() => Err("the transaction was rolled back by sqlite".into()),
        None => exec(conn, "COMMIT").map_err(|err| err.to_string()),
    };
    if commit.is_err() && !conn.is_autocommit() {
        let _ = exec(conn, "ROLLBACK");
    }
    commit
}

fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs a setting statement, which may answer with a row (ignored).
fn pragma(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.query([])?.next().map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    use super::*;
    use crate::Store;

    /// Wakes a parked thread: enough of an executor to poll a ticket as a future.
    struct Unpark(std::thread::Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
                return value;
            }
            std::thread::park();
        }
    }

    /// Projections committed after an independent write run with the sync and automatic
    /// checkpoints off; the next write runs with both back on.
    #[test]
    fn projections_commit_unsynced_and_the_settings_come_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        store.queue_every_write();
        let settings = |conn: &Connection| -> crate::error::OpResult<(i64, i64)> {
            let sync = conn.query_row("PRAGMA synchronous", [], |row| row.get(0))?;
            let checkpoint = conn.query_row("PRAGMA wal_autocheckpoint", [], |row| row.get(0))?;
            Ok((sync, checkpoint))
        };
        let projection = store.submit_lazy("projection", settings);
        store
            .submit_independent("urgent", true, |_| Ok(()))
            .wait()
            .expect("urgent");
        assert_eq!(
            projection.wait().expect("projection"),
            (0, 0),
            "OFF, no checkpoints"
        );
        let after = store.submit("after", settings).wait().expect("after");
        assert_eq!(after, (2, 1000), "FULL, the default threshold");
    }

    #[test]
    fn a_ticket_is_a_future_that_resolves_after_the_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let ticket = store.submit("probe", |conn| {
            Ok(conn.query_row("SELECT 40 + 2", [], |row| row.get::<_, i64>(0))?)
        });
        assert_eq!(block_on(ticket).expect("write"), 42);
        assert_eq!(block_on(Ticket::ready(Ok(7))).expect("ready"), 7);
        store.close();
        let err = block_on(store.submit("late", |_| Ok(()))).expect_err("closed");
        assert!(matches!(err, StoreError::Closed { .. }), "{err}");
    }
}
