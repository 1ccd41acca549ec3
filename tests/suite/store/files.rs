//! The store file: junk, foreign and newer files refused; a store reopens with its data.

use std::path::Path;

use arbor_agent_graph::{EdgeStatus, SCHEMA_VERSION, STATE_FILE_NAME, Store, StoreError};

use super::{descendant_fixture, ids, open_store, tid};

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
