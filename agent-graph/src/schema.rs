//! Opening the state file: connection settings, recognising an arbor store, and the numbered
//! schema migrations.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::StoreError;

/// `PRAGMA application_id` of an arbor store: the bytes `ARBR`.
pub const APPLICATION_ID: i32 = 0x4152_4252;

/// How long a connection waits for another writer's lock before failing with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Page cache per connection, in KiB (SQLite's negative `cache_size` form).
const CACHE_KIB: i64 = -16 * 1024;

/// How much of the file connections read through a memory map.
const MMAP_BYTES: i64 = 256 * 1024 * 1024;

/// The schema version this build writes: the number of migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Migration `i` (0-based) takes the schema from version `i` to `i + 1`. Append only: a shipped
/// script is never edited.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE threads (
    id            TEXT PRIMARY KEY NOT NULL,
    session_id    TEXT NOT NULL REFERENCES threads(id),
    parent_id     TEXT REFERENCES threads(id),
    path          TEXT NOT NULL CHECK (path = '/root' OR path LIKE '/root/%'),
    depth         INTEGER NOT NULL CHECK (depth >= 0),
    nickname      TEXT,
    role          TEXT NOT NULL,
    model         TEXT NOT NULL,
    effort        TEXT,
    sandbox       TEXT NOT NULL,
    cwd           TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending_init', 'queued', 'running',
                      'waiting', 'awaiting_approval', 'completed', 'interrupted', 'errored',
                      'closed', 'not_found')),
    status_reason TEXT,
    rollout_path  TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    CHECK ((parent_id IS NULL) = (depth = 0)),
    CHECK (parent_id IS NOT NULL OR session_id = id),
    CHECK (parent_id IS NULL OR parent_id <> id)
);
CREATE INDEX threads_by_session_path ON threads (session_id, path);
CREATE INDEX threads_roots ON threads (created_at) WHERE parent_id IS NULL;

CREATE TABLE edges (
    child      TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    parent     TEXT NOT NULL REFERENCES threads(id),
    session_id TEXT NOT NULL REFERENCES threads(id),
    status     TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CHECK (child <> parent)
) WITHOUT ROWID;
CREATE INDEX edges_by_parent ON edges (parent, child, status);
CREATE INDEX edges_by_session ON edges (session_id, parent, child, status);

-- Edges per session, kept by trigger (edges are never deleted, and an upsert that updates
-- does not fire AFTER INSERT): lets a descendant walk choose between seeks and one scan.
CREATE TABLE session_stats (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    edges      INTEGER NOT NULL CHECK (edges >= 0)
) WITHOUT ROWID;
CREATE TRIGGER edges_count_session AFTER INSERT ON edges BEGIN
    INSERT INTO session_stats (session_id, edges) VALUES (NEW.session_id, 1)
    ON CONFLICT (session_id) DO UPDATE SET edges = edges + 1;
END;

CREATE TABLE mail (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES threads(id),
    recipient_id TEXT NOT NULL REFERENCES threads(id),
    author       TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('spawn', 'message', 'followup', 'result')),
    trigger_turn INTEGER NOT NULL CHECK (trigger_turn IN (0, 1)),
    content      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    consumed_at  INTEGER
);
CREATE INDEX mail_unconsumed_by_recipient ON mail (recipient_id, seq) WHERE consumed_at IS NULL;
CREATE INDEX mail_unconsumed_by_session ON mail (session_id, seq) WHERE consumed_at IS NULL;

CREATE TABLE approvals (
    id            TEXT PRIMARY KEY NOT NULL,
    session_id    TEXT NOT NULL REFERENCES threads(id),
    requester_id  TEXT NOT NULL REFERENCES threads(id),
    requester     TEXT NOT NULL,
    action        TEXT NOT NULL CHECK (json_valid(action)),
    justification TEXT,
    outcome       TEXT NOT NULL CHECK (outcome IN ('pending', 'allow', 'deny',
                      'review_unavailable', 'no_approver')),
    decided_by    TEXT CHECK (decided_by IS NULL OR decided_by IN ('user', 'guardian', 'policy')),
    risk_level    TEXT,
    rationale     TEXT,
    tokens        INTEGER CHECK (tokens IS NULL OR tokens >= 0),
    requested_at  INTEGER NOT NULL,
    decided_at    INTEGER,
    CHECK ((outcome = 'pending') = (decided_at IS NULL))
);
CREATE INDEX approvals_by_session ON approvals (session_id);
CREATE INDEX approvals_pending ON approvals (session_id) WHERE outcome = 'pending';
"#,
    r#"
-- A human's approval of a request that no waiter ran: it lets the identical retry (same
-- requester, canonical command, cwd and escalation) through once.
CREATE TABLE approval_overrides (
    request_id TEXT PRIMARY KEY NOT NULL REFERENCES approvals(id),
    session_id TEXT NOT NULL REFERENCES threads(id),
    requester  TEXT NOT NULL,
    command    TEXT NOT NULL,
    cwd        TEXT NOT NULL,
    escalated  INTEGER NOT NULL CHECK (escalated IN (0, 1)),
    granted_at INTEGER NOT NULL,
    used_by    TEXT,
    used_at    INTEGER,
    CHECK ((used_by IS NULL) = (used_at IS NULL))
);
CREATE INDEX approval_overrides_unused ON approval_overrides (session_id, requester)
    WHERE used_by IS NULL;
"#,
    r#"
-- Mail without AUTOINCREMENT and without the per-session index: a mail's commit writes four
-- pages instead of six. `seq` stays the rowid; mail rows are never deleted, so a new rowid is
-- always past every earlier one. A session's unconsumed mail is found through its threads and
-- the per-recipient index.
CREATE TABLE mail_v3 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES threads(id),
    recipient_id TEXT NOT NULL REFERENCES threads(id),
    author       TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('spawn', 'message', 'followup', 'result')),
    trigger_turn INTEGER NOT NULL CHECK (trigger_turn IN (0, 1)),
    content      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    consumed_at  INTEGER
);
INSERT INTO mail_v3 (seq, id, session_id, recipient_id, author, recipient, kind, trigger_turn,
                     content, created_at, consumed_at)
    SELECT seq, id, session_id, recipient_id, author, recipient, kind, trigger_turn, content,
           created_at, consumed_at
    FROM mail ORDER BY seq;
DROP TABLE mail;
ALTER TABLE mail_v3 RENAME TO mail;
CREATE INDEX mail_unconsumed_by_recipient ON mail (recipient_id, seq) WHERE consumed_at IS NULL;
"#,
    r#"
-- The store as a projection of the session log: how far into each session's log it has come,
-- and per agent the facts its status is reported from (whether a turn is open, how the last
-- one ended), its token totals and the number of its last log line. A human's answer a driver
-- has yet to act on waits with its request. Rows are written in batches, so a session's
-- unconsumed mail is indexed again.
CREATE TABLE log_state (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    offset     INTEGER NOT NULL CHECK (offset >= 0)
) WITHOUT ROWID;
ALTER TABLE threads ADD COLUMN turn_open INTEGER NOT NULL DEFAULT 0 CHECK (turn_open IN (0, 1));
ALTER TABLE threads ADD COLUMN last_end TEXT;
ALTER TABLE threads ADD COLUMN last_end_reason TEXT;
ALTER TABLE threads ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN tokens_cached INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN answer INTEGER CHECK (answer IS NULL OR answer IN (0, 1));
CREATE INDEX mail_unconsumed_by_session ON mail (session_id, seq) WHERE consumed_at IS NULL;
"#,
    crate::worktrees::MIGRATION,
    r#"
-- Of each agent's tokens, those its compaction requests used.
ALTER TABLE threads ADD COLUMN tokens_compaction INTEGER NOT NULL DEFAULT 0;
"#,
    crate::threads::PROVIDER_MIGRATION,
    crate::mail::MIGRATION,
    crate::threads::HANDLE_MIGRATION,
];

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

pub(crate) fn open(path: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
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

/// Maps a failure while reading the header: "not a database" and friends become
/// [`StoreError::NotArborStore`], everything else an open error.
pub(crate) fn classify(path: &Path, err: rusqlite::Error) -> StoreError {
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::NotArborStore {
            path: path.to_path_buf(),
            reason: err.to_string(),
        },
        _ => StoreError::Open {
            path: path.to_path_buf(),
            source: err,
        },
    }
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
