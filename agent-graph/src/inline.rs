//! Committing an independent write (a mail enqueue) on its caller's thread.
//!
//! A sender that waits on its mail's commit pays two thread hand-offs when the writer thread
//! does the work: waking the writer, and being woken by it. When nothing is queued for the
//! writer, there is nothing for the mail to share its sync with either, so the caller may as
//! well commit it itself, through the writer's own connection: same transaction, same sync,
//! no hand-off.
//!
//! It does so only when it cannot reorder or delay anything:
//! - no ordered write (anything but a projection) is queued, waiting or being committed (the
//!   inbox counts them from submission to answer), so the mail overtakes at most projections,
//!   which an independent write may overtake anyway;
//! - the writer is not using the connection (`try_lock`), so the caller never waits on it;
//! - SQLite's write lock is free right now (no busy wait): another process holding it sends the
//!   mail to the writer, which waits on its behalf, instead of blocking the caller;
//! - the store is open: once the writer has stopped, the connection is gone.
//!
//! Otherwise the write goes to the writer as before. The connection always runs with
//! `synchronous = FULL` when it is free: the writer relaxes it only while it holds the mutex.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};

use rusqlite::Connection;

use crate::inbox::Inbox;
use crate::schema::BUSY_TIMEOUT;
use crate::writer::Job;

/// The writer's read-write connection, shared with callers that commit on their own thread.
/// `None` once the writer has stopped.
pub(crate) type Shared = Arc<Mutex<Option<Connection>>>;

/// What a store counts of its commits.
#[derive(Default)]
pub(crate) struct Counters {
    /// Synced commits, wherever they ran.
    pub synced: AtomicU64,
    /// Those of them that ran on a caller's thread.
    pub inline: AtomicU64,
}

/// Commits `job` in a synced transaction of its own on the calling thread, then answers it.
/// Gives the job back, untouched, when it has to go to the writer instead (see the module
/// comment).
pub(crate) fn try_commit(
    shared: &Shared,
    inbox: &Inbox,
    path: &Path,
    counters: &Counters,
    mut job: Box<dyn Job>,
) -> Result<(), Box<dyn Job>> {
    if !inbox.quiet() {
        return Err(job);
    }
    let guard = match shared.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::WouldBlock) => return Err(job),
        // The connection stays valid whatever panicked while it was held.
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
    };
    let Some(conn) = guard.as_ref() else {
        return Err(job);
    };
    if !begin_now(conn) {
        return Err(job);
    }
    // The writer's own transaction body: a failing job is rolled back and answers with its
    // own error; a failed commit answers with the commit's.
    let commit = crate::writer::commit_begun(conn, std::slice::from_mut(&mut job));
    if commit.is_ok() {
        counters.synced.fetch_add(1, Ordering::Relaxed);
        counters.inline.fetch_add(1, Ordering::Relaxed);
    }
    drop(guard);
    job.finish(path, commit.err().as_deref());
    Ok(())
}

/// Opens a write transaction if SQLite's write lock is free at once; false (with no
/// transaction open) when it is not, or when anything else went wrong: the writer, which
/// waits for the lock and reports errors, takes the job then.
fn begin_now(conn: &Connection) -> bool {
    if conn.busy_timeout(std::time::Duration::ZERO).is_err() {
        return false;
    }
    let began = conn
        .prepare_cached("BEGIN IMMEDIATE")
        .and_then(|mut stmt| stmt.execute([]))
        .is_ok();
    let restored = conn.busy_timeout(BUSY_TIMEOUT).is_ok();
    if began && !restored {
        rollback(conn);
        return false;
    }
    began
}

fn rollback(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use rusqlite::Connection;

    use crate::error::{Fail, OpResult};
    use crate::schema::BUSY_TIMEOUT;
    use crate::{Store, StoreError};

    /// A store with a table `t (x)` to write to.
    fn store_with_table(dir: &Path) -> Store {
        let store = Store::open(dir).expect("open");
        store
            .submit("table", |conn| {
                conn.execute_batch("CREATE TABLE t (x INTEGER PRIMARY KEY)")?;
                Ok(())
            })
            .wait()
            .expect("table");
        store
    }

    fn insert(x: i64) -> impl FnOnce(&Connection) -> OpResult<i64> + Send + 'static {
        move |conn| {
            conn.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
            Ok(x)
        }
    }

    fn rows(store: &Store) -> Vec<i64> {
        store
            .read("rows", |conn| {
                crate::store::collect(conn, "SELECT x FROM t ORDER BY rowid", [], |row| {
                    Ok(row.get(0)?)
                })
            })
            .expect("rows")
    }

    #[test]
    fn an_independent_write_commits_on_the_callers_thread_when_the_writer_is_idle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        let (commits, inline) = (store.commits(), store.inline_commits());
        let caller = std::thread::current().id();
        let ran_on = store.submit_independent("insert", true, move |conn| {
            conn.execute("INSERT INTO t (x) VALUES (1)", [])?;
            Ok(std::thread::current().id())
        });
        assert_eq!(ran_on.wait().expect("insert"), caller);
        assert_eq!(store.commits(), commits + 1);
        assert_eq!(store.inline_commits(), inline + 1);
        // Committed, and through the synced connection: a reader sees it.
        assert_eq!(rows(&store), [1]);
        store.close();
        // Reopened, it is still there.
        assert_eq!(rows(&Store::open(dir.path()).expect("reopen")), [1]);
    }

    /// An ordered write still waiting (here, a deferred one with a long window) is never
    /// overtaken: the independent write goes to the writer, which commits both in order.
    #[test]
    fn an_independent_write_never_overtakes_a_waiting_ordered_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        let inline = store.inline_commits();
        let waiting = store.submit_within("deferred", Duration::from_secs(3600), insert(1));
        let independent = store.submit_independent("independent", true, insert(2));
        // An ordinary write after both: once it is answered, both are committed.
        store.submit("after", insert(3)).wait().expect("after");
        assert_eq!(rows(&store), [1, 2, 3]);
        assert_eq!(waiting.wait().expect("deferred"), 1);
        assert_eq!(independent.wait().expect("independent"), 2);
        assert_eq!(store.inline_commits(), inline, "went to the writer");
        // Once nothing waits, the next one commits in place again.
        store
            .submit_independent("again", true, insert(4))
            .wait()
            .expect("again");
        assert_eq!(store.inline_commits(), inline + 1);
    }

    /// While the writer holds the connection, the caller does not wait for it: the write is
    /// queued, and commits once the writer is free.
    #[test]
    fn a_busy_writer_gets_the_write_instead_of_blocking_the_caller() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        let held = store.hold_connection();
        let ticket = store.submit_independent("insert", true, insert(1));
        drop(held);
        assert_eq!(ticket.wait().expect("insert"), 1);
        assert_eq!(store.inline_commits(), 0);
        assert_eq!(rows(&store), [1]);
    }

    /// Another process holding SQLite's write lock does not block the caller for the busy
    /// timeout: the writer waits for the lock on its behalf.
    #[test]
    fn a_write_lock_held_elsewhere_sends_the_write_to_the_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        let other = Connection::open(store.path()).expect("other connection");
        other.execute_batch("BEGIN IMMEDIATE").expect("lock");
        let ran = Arc::new(Mutex::new(false));
        let seen = Arc::clone(&ran);
        let started = std::time::Instant::now();
        let ticket = store.submit_independent("insert", true, move |conn| {
            *seen.lock().expect("ran") = true;
            insert(1)(conn)
        });
        // The call returned with the lock still held elsewhere, without sitting out SQLite's
        // busy timeout, and the write has not run.
        assert!(
            started.elapsed() < BUSY_TIMEOUT,
            "the caller waited for the lock"
        );
        assert!(!*ran.lock().expect("ran"));
        other.execute_batch("COMMIT").expect("unlock");
        assert_eq!(ticket.wait().expect("insert"), 1);
        assert_eq!(store.inline_commits(), 0);
        assert_eq!(rows(&store), [1]);
    }

    #[test]
    fn a_failing_write_in_place_leaves_nothing_and_answers_its_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        let failing = store.submit_independent("half", true, |conn| -> OpResult<()> {
            conn.execute("INSERT INTO t (x) VALUES (1)", [])?;
            Err(Fail::Corrupt {
                what: "probe",
                value: "refused".into(),
            })
        });
        let err = failing.wait().expect_err("the job's error");
        assert!(err.to_string().contains("refused"), "{err}");
        assert!(err.to_string().contains("half"), "{err}");
        // No transaction was left open: the next write commits in place too, and alone.
        store
            .submit_independent("next", true, insert(2))
            .wait()
            .expect("next");
        assert_eq!(rows(&store), [2]);
        assert_eq!(store.inline_commits(), 2);
    }

    /// A write its caller asks to share (others are sending) always goes to the writer.
    #[test]
    fn a_shared_write_goes_to_the_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        let ticket = store.submit_independent("shared", false, insert(1));
        assert_eq!(ticket.wait().expect("shared"), 1);
        assert_eq!(store.inline_commits(), 0);
        assert_eq!(rows(&store), [1]);
    }

    #[test]
    fn an_independent_write_after_close_fails_with_closed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_table(dir.path());
        store.close();
        let err = store
            .submit_independent("late", true, insert(1))
            .wait()
            .expect_err("closed");
        assert!(matches!(err, StoreError::Closed { .. }), "{err}");
    }
}
