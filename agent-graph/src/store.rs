//! The [`Store`] handle: opening the file, handing writes to the writer thread and running
//! reads on a small pool of read-only connections.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::StoreError;
use crate::error::OpResult;
use crate::inbox::Inbox;
use crate::inline::{self, Counters, Shared};
use crate::schema;
use crate::writer::{self, Job, Ticket, Write};

/// The file name of the store inside `ARBOR_HOME`.
pub const STATE_FILE_NAME: &str = "state.sqlite";

/// Read-only connections kept open between reads; more are opened when needed.
const MAX_IDLE_READERS: usize = 8;

/// arbor's SQLite store. Cheap to clone and share between threads.
///
/// Writes go to one writer thread and return a [`Ticket`] that resolves after the commit has
/// reached the disk. Reads are plain blocking calls on read-only connections: async callers run
/// them under `tokio::task::spawn_blocking`.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: Arc<Path>,
    inbox: Arc<Inbox>,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Mutex<Vec<Connection>>,
    counters: Arc<Counters>,
    /// The writer's connection, which an independent write may use on its caller's thread.
    conn: Shared,
    /// Whether it may (tests turn it off to exercise the writer's side).
    inline: AtomicBool,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating when absent) `home/state.sqlite`, creating `home` too.
    pub fn open(home: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(home).map_err(|source| StoreError::CreateDir {
            path: home.to_path_buf(),
            source,
        })?;
        Self::open_file(&home.join(STATE_FILE_NAME))
    }

    /// Opens (creating when absent) the store at `path`, migrating it to the current schema.
    ///
    /// A file that is not an arbor store, or one from a newer arbor, is refused with an error
    /// naming the file; it is never modified.
    pub fn open_file(path: &Path) -> Result<Self, StoreError> {
        let conn: Shared = Arc::new(Mutex::new(Some(schema::open_writer(path)?)));
        let path: Arc<Path> = Arc::from(path);
        let (inbox, queue) = Inbox::new();
        let inbox = Arc::new(inbox);
        let thread_inbox = Arc::clone(&inbox);
        let thread_path = Arc::clone(&path);
        let thread_conn = Arc::clone(&conn);
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let handle = std::thread::Builder::new()
            .name("arbor-store-writer".into())
            .spawn(move || {
                writer::run(
                    thread_conn,
                    thread_path,
                    thread_inbox,
                    queue,
                    thread_counters,
                )
            })
            .map_err(|source| StoreError::Spawn {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                inbox,
                writer: Mutex::new(Some(handle)),
                readers: Mutex::new(Vec::new()),
                counters,
                conn,
                inline: AtomicBool::new(true),
            }),
        })
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many synced transactions this store has committed (each one sync of the WAL;
    /// projections committed without one are not counted), for benchmarks and diagnostics.
    pub fn commits(&self) -> u64 {
        self.inner.counters.synced.load(Ordering::Relaxed)
    }

    /// How many of [`Self::commits`] ran on their caller's thread instead of the writer's (an
    /// independent write while the writer had nothing queued).
    pub fn inline_commits(&self) -> u64 {
        self.inner.counters.inline.load(Ordering::Relaxed)
    }

    /// Finishes every write queued so far, then stops the writer thread. Later writes (from any
    /// clone) fail with [`StoreError::Closed`]; reads keep working. Dropping the last clone
    /// closes the store too.
    pub fn close(&self) {
        self.inner.stop();
    }

    /// Queues a write. `op` runs on the writer thread inside its own savepoint.
    pub(crate) fn submit<T, F>(&self, op_name: &'static str, op: F) -> Ticket<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> OpResult<T> + Send + 'static,
    {
        self.queue(op_name, op, Inbox::send)
    }

    /// Like [`Self::submit`], for a write that no waiting projection has to precede (a mail
    /// enqueue): it may commit before projections submitted earlier, which follow right after.
    /// With `in_place`, when the writer has nothing else to do, the write commits right here,
    /// on the calling thread, and the ticket returned is already resolved (see `inline`).
    pub(crate) fn submit_independent<T, F>(
        &self,
        op_name: &'static str,
        in_place: bool,
        op: F,
    ) -> Ticket<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> OpResult<T> + Send + 'static,
    {
        self.queue(op_name, op, |inbox, job| {
            let inner = &self.inner;
            let job = if in_place && inner.inline.load(Ordering::Relaxed) {
                match inline::try_commit(&inner.conn, inbox, &inner.path, &inner.counters, job) {
                    Ok(()) => return,
                    Err(job) => job,
                }
            } else {
                job
            };
            inbox.send_independent(job);
        })
    }

    /// Holds the writer's connection, as the writer does while it commits.
    #[cfg(test)]
    pub(crate) fn hold_connection(&self) -> MutexGuard<'_, Option<Connection>> {
        lock(&self.inner.conn)
    }

    /// Sends every write to the writer thread, so tests can exercise its handling of
    /// independent writes.
    #[cfg(test)]
    pub(crate) fn queue_every_write(&self) {
        self.inner.inline.store(false, Ordering::Relaxed);
    }

    /// Queues a projection (a status, a consumed mark: a copy of what a rollout holds). It
    /// waits up to the writer's lazy window for company, may commit after mail writes
    /// (independent or deferred) submitted later, never after any other write, and its ticket
    /// resolves only once it is synced.
    pub(crate) fn submit_lazy<T, F>(&self, op_name: &'static str, op: F) -> Ticket<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> OpResult<T> + Send + 'static,
    {
        self.queue(op_name, op, Inbox::send_lazy)
    }

    /// Queues a write that may wait up to `window` for other writes to share its commit.
    pub(crate) fn submit_within<T, F>(
        &self,
        op_name: &'static str,
        window: std::time::Duration,
        op: F,
    ) -> Ticket<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> OpResult<T> + Send + 'static,
    {
        self.queue(op_name, op, |inbox, job| inbox.send_within(job, window))
    }

    /// Wraps `op` in a job, hands it to the inbox with `send` and returns its ticket. When the
    /// writer is gone the job (and its reply sender) is dropped: the ticket then resolves to
    /// `Closed`.
    fn queue<T, F>(
        &self,
        op_name: &'static str,
        op: F,
        send: impl FnOnce(&Inbox, Box<dyn Job>),
    ) -> Ticket<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> OpResult<T> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        send(&self.inner.inbox, Box::new(Write::new(op_name, op, reply)));
        Ticket::new(rx, Arc::clone(&self.inner.path))
    }

    /// Runs `op` on a read-only connection inside one read transaction, so it sees a single
    /// committed snapshot.
    pub(crate) fn read<T>(
        &self,
        op_name: &'static str,
        op: impl FnOnce(&Connection) -> OpResult<T>,
    ) -> Result<T, StoreError> {
        let conn = match pop(&self.inner.readers) {
            Some(conn) => conn,
            None => schema::open_reader(&self.inner.path)?,
        };
        let result = (|| {
            conn.prepare_cached("BEGIN")?.execute([])?;
            let result = op(&conn);
            conn.prepare_cached("COMMIT")?.execute([])?;
            result
        })();
        if conn.is_autocommit() {
            let mut idle = lock(&self.inner.readers);
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
        }
        // A connection left inside a transaction is dropped, which rolls it back.
        result.map_err(|fail| fail.into_store(&self.inner.path, op_name))
    }
}

impl Inner {
    fn stop(&self) {
        let handle = lock(&self.writer).take();
        if let Some(handle) = handle {
            self.inbox.stop();
            // A panic on the writer thread already answered its callers with `Closed`.
            let _ = handle.join();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

fn pop(pool: &Mutex<Vec<Connection>>) -> Option<Connection> {
    lock(pool).pop()
}

/// Locks a mutex, ignoring poisoning: the guarded data (a connection list, a join handle, the
/// writer's connection) stays valid whatever panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs a query and maps every row with `map`, in the order SQLite returns them.
pub(crate) fn collect<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    mut map: impl FnMut(&rusqlite::Row<'_>) -> OpResult<T>,
) -> OpResult<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn store_is_send_and_sync() {
        assert_send_sync::<Store>();
    }

    #[test]
    fn a_write_after_close_fails_with_closed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let ok = store.submit("probe", |conn| {
            Ok(conn.query_row("SELECT 1", [], |row| row.get::<_, i64>(0))?)
        });
        assert_eq!(ok.wait().expect("write"), 1);
        store.close();
        let late = store.submit("probe", |_| Ok(()));
        let err = late.wait().expect_err("closed");
        assert!(matches!(err, StoreError::Closed { .. }), "{err}");
        assert!(err.to_string().contains("state.sqlite"), "{err}");
    }

    #[test]
    fn one_failing_job_in_a_group_does_not_undo_the_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let setup = store.submit("setup", |conn| {
            conn.execute_batch("CREATE TEMP TABLE IF NOT EXISTS t (x INTEGER UNIQUE)")?;
            Ok(())
        });
        setup.wait().expect("setup");
        let tickets: Vec<_> = [1, 2, 2, 3]
            .into_iter()
            .map(|x| {
                store.submit("insert", move |conn| {
                    conn.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
                    Ok(x)
                })
            })
            .collect();
        let results: Vec<_> = tickets.into_iter().map(|t| t.wait().is_ok()).collect();
        assert_eq!(results, [true, true, false, true]);
        let count = store.submit("count", |conn| {
            Ok(conn.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))?)
        });
        assert_eq!(count.wait().expect("count"), 3);
        assert!(store.commits() >= 3, "{}", store.commits());
    }
}
