//! Opening the state file: connection settings, recognising an arbor store, and running the
//! numbered schema migrations (`migrations.rs`).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::StoreError;
use crate::connection::{classify, open};
use crate::migrations::{MIGRATIONS, SCHEMA_VERSION};

/// `PRAGMA application_id` of an arbor store: the bytes `ARBR`.
pub const APPLICATION_ID: i32 = 0x4152_4252;

/// Page cache per connection, in KiB (SQLite's negative `cache_size` form).
const CACHE_KIB: i64 = -16 * 1024;

/// How much of the file connections read through a memory map.
const MMAP_BYTES: i64 = 256 * 1024 * 1024;

/// Opens the read-write connection, checks the file is an arbor store (or new), migrates it to
/// [`SCHEMA_VERSION`] and applies the connection settings.
pub(crate) fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = open(path, flags)?;
    let version = check_identity(&conn, path)?;
    // WAL is switched on only once the file is known to be ours: the switch rewrites the header.
    configure(&conn, path)?;
    migrate(&conn, path, version)?;
    if version < 4 {
        relativize_paths(&conn, path)?;
    }
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Stores before version 4 kept absolute rollout paths: those under the home become relative
/// to it, so the home can be moved.
fn relativize_paths(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let Some(home) = path.parent().and_then(|home| home.to_str()) else {
        return Ok(());
    };
    let home = home.trim_end_matches('/');
    conn.execute(
        "UPDATE threads SET rollout_path = substr(rollout_path, length(?1) + 2)
         WHERE substr(rollout_path, 1, length(?1) + 1) = ?1 || '/'",
        [home],
    )
    .map(|_| ())
    .map_err(|source| StoreError::Migration {
        path: path.to_path_buf(),
        version: 4,
        source,
    })
}

/// Whether the store at `path` exists and is older than this build's schema (a reader must
/// then migrate it first). A missing file is refused like any store that cannot be opened.
pub(crate) fn needs_migration(path: &Path) -> Result<bool, StoreError> {
    let conn = crate::readonly::open(path)?;
    let version = check_identity(&conn, path)?;
    Ok(version < SCHEMA_VERSION)
}

/// Opens one more read-only connection to a store the writer has already checked.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = crate::readonly::open(path)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .and_then(|()| tune(&conn))
        .map_err(|err| classify(path, err))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

fn configure(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(|err| classify(path, err))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Setup {
            path: path.to_path_buf(),
            reason: format!("journal mode stayed `{mode}` instead of `wal`"),
        });
    }
    // The store is a projection of the session log, which is what is synced: commits need
    // not wait for the disk (a crash may lose the last ones; open brings the store up to the
    // log again). The WAL is still synced at checkpoints, so the file stays consistent.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .and_then(|()| conn.pragma_update(None, "foreign_keys", "ON"))
        .and_then(|()| tune(conn))
        .map_err(|err| classify(path, err))
}

/// Speed settings that do not touch durability: savepoint journals in memory, reads through
/// a shared memory map, a larger page cache.
fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", CACHE_KIB)?;
    let _: i64 = conn.query_row(&format!("PRAGMA mmap_size = {MMAP_BYTES}"), [], |row| {
        row.get(0)
    })?;
    Ok(())
}

/// Reads the header fields and decides whether the file is ours. Returns its schema version.
fn check_identity(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let header = || -> rusqlite::Result<(i32, i64, Vec<String>)> {
        let app: i32 = conn.query_row("PRAGMA application_id", [], |row| row.get(0))?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        let mut stmt = conn.prepare(
            "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 5",
        )?;
        let names = stmt
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok((app, version, names))
    };
    let (app, version, names) = header().map_err(|err| classify(path, err))?;
    let not_ours = |reason: String| StoreError::NotArborStore {
        path: path.to_path_buf(),
        reason,
    };
    if app == 0 {
        if !names.is_empty() {
            return Err(not_ours(format!(
                "it holds another application's tables ({})",
                names.join(", ")
            )));
        }
        if version != 0 {
            return Err(not_ours(format!(
                "it has user_version {version} but no arbor application id"
            )));
        }
        return Ok(0);
    }
    if app != APPLICATION_ID {
        return Err(not_ours(format!(
            "its application id is {:#010x}, not arbor's {APPLICATION_ID:#010x}",
            app as u32
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 0 {
        return Err(not_ours(format!(
            "its schema version {version} is negative"
        )));
    }
    Ok(version)
}

/// Applies every migration past `version`, each in its own `IMMEDIATE` transaction that first
/// re-reads the version, so two processes opening a new file at once do not both migrate it.
fn migrate(conn: &Connection, path: &Path, mut version: i64) -> Result<(), StoreError> {
    while version < SCHEMA_VERSION {
        let target = version + 1;
        let step = || -> rusqlite::Result<i64> {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let result = (|| {
                let current: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
                if current != version {
                    return Ok(current);
                }
                let script = MIGRATIONS
                    .get(current as usize)
                    .copied()
                    .unwrap_or_default();
                conn.execute_batch(script)?;
                conn.pragma_update(None, "application_id", APPLICATION_ID)?;
                conn.pragma_update(None, "user_version", target)?;
                Ok(target)
            })();
            match result {
                Ok(now) => {
                    conn.execute_batch("COMMIT")?;
                    Ok(now)
                }
                Err(err) => {
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    Err(err)
                }
            }
        };
        let now = step().map_err(|source| StoreError::Migration {
            path: path.to_path_buf(),
            version: target,
            source,
        })?;
        if now > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: now,
                supported: SCHEMA_VERSION,
            });
        }
        version = now;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_migrates_to_the_current_version_and_reopens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.sqlite");
        let conn = open_writer(&path).expect("first open");
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .expect("version");
        assert_eq!(version, SCHEMA_VERSION);
        let app: i32 = conn
            .query_row("PRAGMA application_id", [], |row| row.get(0))
            .expect("app id");
        assert_eq!(app, APPLICATION_ID);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .expect("sync");
        assert_eq!(sync, 1, "synchronous = NORMAL");
        let fks: i64 = conn
            .query_row("PRAGMA foreign_keys", [], |row| row.get(0))
            .expect("fks");
        assert_eq!(fks, 1);
        drop(conn);
        open_writer(&path).expect("second open");
        open_reader(&path).expect("reader");
    }

    /// A store at version 2 with mail moves to the mail table without AUTOINCREMENT: every row
    /// kept with its `seq`, and new mail numbered after the old.
    #[test]
    fn version_three_keeps_mail_and_its_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.sqlite");
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(MIGRATIONS[0]).expect("v1");
        conn.execute_batch(MIGRATIONS[1]).expect("v2");
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .expect("app id");
        conn.pragma_update(None, "user_version", 2)
            .expect("version");
        conn.execute_batch(
            "INSERT INTO threads VALUES ('r', 'r', NULL, '/root', 0, NULL, 'default', 'm', NULL,
                 'read-only', '/', 'running', NULL, 'x', 0, 0);
             INSERT INTO mail (id, session_id, recipient_id, author, recipient, kind,
                 trigger_turn, content, created_at, consumed_at)
             VALUES ('a', 'r', 'r', '/root', '/root', 'message', 0, 'one', 1, NULL),
                    ('b', 'r', 'r', '/root', '/root', 'message', 0, 'two', 2, 5),
                    ('c', 'r', 'r', '/root', '/root', 'message', 0, 'three', 3, NULL);
             DELETE FROM mail WHERE id = 'c';",
        )
        .expect("v2 rows");
        drop(conn);
        let conn = open_writer(&path).expect("migrate");
        let rows: Vec<(i64, String, Option<i64>)> = conn
            .prepare("SELECT seq, id, consumed_at FROM mail ORDER BY seq")
            .expect("select")
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(rows, [(1, "a".into(), None), (2, "b".into(), Some(5))]);
        conn.execute(
            "INSERT INTO mail (id, session_id, recipient_id, author, recipient, kind,
                 trigger_turn, content, created_at)
             VALUES ('d', 'r', 'r', '/root', '/root', 'message', 0, 'four', 4)",
            [],
        )
        .expect("new mail");
        let seq: i64 = conn
            .query_row("SELECT seq FROM mail WHERE id = 'd'", [], |row| row.get(0))
            .expect("seq");
        assert!(seq > 2, "new mail numbered after the old: {seq}");
        let leftovers: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name IN ('mail_v3')",
                [],
                |row| row.get(0),
            )
            .expect("schema");
        assert_eq!(leftovers, 0);
    }
}
