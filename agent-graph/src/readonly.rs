//! Read-only connections, and reading on a full disk. SQLite reads a store in WAL mode through
//! its shared-memory file (`state.sqlite-shm`), which the first connection makes; on a full
//! disk it cannot, and every read fails with `disk I/O error`. A reader then opens the file as
//! immutable: the main file alone, without locks or the shared memory. It sees the store as of
//! its last checkpoint; the shared-memory file is missing only when no connection is open, and
//! the last one to close checkpointed the WAL into the file first, so nothing is missed (and a
//! store is a projection that may lag anyway: every read applies the log's later lines).

use std::path::Path;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::StoreError;

/// A read-only connection to the store at `path` that has read its header, through the
/// shared memory when it can, as immutable when the disk has no room for it.
pub(crate) fn open(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = crate::connection::open(path, flags)?;
    let err = match first_read(&conn) {
        Ok(()) => return Ok(conn),
        Err(err) => err,
    };
    let no_room = matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::SystemIoFailure | ErrorCode::DiskFull | ErrorCode::CannotOpen)
    );
    if no_room {
        drop(conn);
        let flags = flags | OpenFlags::SQLITE_OPEN_URI;
        if let Ok(immutable) = crate::connection::open(Path::new(&immutable_uri(path)), flags)
            && first_read(&immutable).is_ok()
        {
            return Ok(immutable);
        }
    }
    Err(crate::connection::classify(path, err))
}

/// The first read of a connection: the one that maps the shared memory.
fn first_read(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA application_id", [], |row| row.get::<_, i32>(0))
        .map(|_| ())
}

/// `path` as an SQLite URI with `immutable=1` (`%`, `?` and `#` escaped).
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3F"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uri_escapes_what_sqlite_would_read_as_its_own() {
        assert_eq!(
            immutable_uri(Path::new("/a b/100%/x?#y/state.sqlite")),
            "file:/a b/100%25/x%3F%23y/state.sqlite?immutable=1"
        );
    }
}
