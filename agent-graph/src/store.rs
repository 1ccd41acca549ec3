//! The [`Store`] handle: opening the file, the one write connection, and reads on a small
//! pool of read-only connections.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use crate::StoreError;
use crate::error::OpResult;
use crate::schema;

/// The file name of the store inside `ARBOR_HOME`.
pub const STATE_FILE_NAME: &str = "state.sqlite";

/// Read-only connections kept open between reads; more are opened when needed.
const MAX_IDLE_READERS: usize = 8;

/// arbor's SQLite store. Cheap to clone and share between threads.
///
/// Rows are written only by [`Store::commit`], one transaction per call, on the one write
/// connection (used by one thread at a time). Reads are plain blocking calls on read-only
/// connections: async callers run them under `tokio::task::spawn_blocking`.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// `None` for a store opened to read only.
    writer: Mutex<Option<Connection>>,
    readers: Mutex<Vec<Connection>>,
    commits: AtomicU64,
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
        let conn = schema::open_writer(path)?;
        Ok(Self::assemble(path, Some(conn)))
    }

    /// Opens an existing store to read only: nothing is written (not even a migration, unless
    /// the file is from an older arbor and must be migrated to be read).
    pub fn open_read_only(home: &Path) -> Result<Self, StoreError> {
        let path = home.join(STATE_FILE_NAME);
        if schema::needs_migration(&path)? {
            let store = Self::open_file(&path)?;
            store.close();
            return Ok(store);
        }
        Ok(Self::assemble(&path, None))
    }

    fn assemble(path: &Path, writer: Option<Connection>) -> Self {
        Self {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                commits: AtomicU64::new(0),
            }),
        }
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many transactions this handle has committed, for benchmarks and diagnostics.
    pub fn commits(&self) -> u64 {
        self.inner.commits.load(Ordering::Relaxed)
    }

    /// Closes the write connection (checkpointing the WAL). Later commits fail with
    /// [`StoreError::Closed`]; reads keep working.
    pub fn close(&self) {
        if let Some(conn) = lock(&self.inner.writer).take() {
            let _ = conn.close();
        }
    }

    /// Runs `op` on the write connection inside one `IMMEDIATE` transaction and commits it.
    pub(crate) fn write<T>(
        &self,
        op_name: &'static str,
        op: impl FnOnce(&Connection) -> OpResult<T>,
    ) -> Result<T, StoreError> {
        let guard = lock(&self.inner.writer);
        let Some(conn) = guard.as_ref() else {
            return Err(StoreError::Closed {
                path: self.inner.path.clone(),
            });
        };
        let result = (|| {
            conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
            let value = op(conn)?;
            conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(value)
        })();
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        if result.is_ok() {
            self.inner.commits.fetch_add(1, Ordering::Relaxed);
        }
        result.map_err(|fail: crate::error::Fail| fail.into_store(&self.inner.path, op_name))
    }

    /// Runs `op` on a read-only connection inside one read transaction, so it sees a single
    /// committed snapshot.
    pub(crate) fn read<T>(
        &self,
        op_name: &'static str,
        op: impl FnOnce(&Connection) -> OpResult<T>,
    ) -> Result<T, StoreError> {
        let conn = match lock(&self.inner.readers).pop() {
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

/// Locks a mutex, ignoring poisoning: the guarded data (a connection, a connection list) stays
/// valid whatever panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    fn a_write_after_close_fails_with_closed_and_reads_go_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let one = store
            .write("probe", |conn| {
                Ok(conn.query_row("SELECT 1", [], |row| row.get::<_, i64>(0))?)
            })
            .expect("write");
        assert_eq!(one, 1);
        store.close();
        let err = store.write("probe", |_| Ok(())).expect_err("closed");
        assert!(matches!(err, StoreError::Closed { .. }), "{err}");
        assert!(err.to_string().contains("state.sqlite"), "{err}");
        assert!(store.sessions().expect("read").is_empty());
    }

    #[test]
    fn a_failing_write_is_rolled_back_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        store
            .write("setup", |conn| {
                conn.execute_batch("CREATE TABLE t (x INTEGER UNIQUE)")?;
                Ok(())
            })
            .expect("setup");
        let failed = store.write("insert", |conn| {
            conn.execute("INSERT INTO t (x) VALUES (1)", [])?;
            conn.execute("INSERT INTO t (x) VALUES (1)", [])?;
            Ok(())
        });
        assert!(failed.is_err());
        let count = store
            .write("count", |conn| {
                Ok(conn.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))?)
            })
            .expect("count");
        assert_eq!(count, 0);
    }
}
