//! Opening one SQLite connection to the state file, and telling a file that is not a database
//! from one that cannot be opened.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::StoreError;

/// How long a connection waits for another writer's lock before failing with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to `path` opened with `flags`, waiting [`BUSY_TIMEOUT`] for locks.
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
