//! Torn tails on read and on `open_append`, one writer at a time, a missing header.

use std::fs;

use arbor_rollout::{RolloutError, RolloutWriter, TailRepair, read_rollout};

use super::{file_lines, items_of, said, turn, written};

#[test]
fn torn_last_line_is_skipped_and_counted() {
    let (_home, path) = written(&[turn(1), said("one"), said("two"), said("three")]);
    let len = fs::metadata(&path).expect("stat").len();
    let last = file_lines(&path).pop().expect("last line").len() as u64;
    let kept = last / 2;
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_len(len - 1 - last + kept))
        .expect("cut the last line in half");

    let read = read_rollout(&path).expect("read");
    assert_eq!(read.torn_tail, 1);
    assert_eq!(
        read.items().skip(1).cloned().collect::<Vec<_>>(),
        [turn(1), said("one"), said("two")]
    );
    assert_eq!(
        read.notices,
        [format!(
            "rollout {}: skipped a torn last line (line 5, {kept} bytes)",
            path.display()
        )]
    );
}

#[test]
fn open_append_cuts_off_a_torn_line_and_appends_cleanly() {
    let (_home, path) = written(&[turn(1), said("one"), said("two")]);
    let good = fs::metadata(&path).expect("stat").len();
    let mut bytes = fs::read(&path).expect("read");
    bytes.extend_from_slice(br#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"respo"#);
    fs::write(&path, &bytes).expect("write torn line");

    let reopened = RolloutWriter::open_append(&path).expect("reopen");
    assert_eq!(
        reopened.repair,
        Some(TailRepair::TruncatedTornLine {
            path: path.clone(),
            offset: good,
            bytes: 53,
        })
    );
    assert_eq!(
        reopened.repair.as_ref().map(ToString::to_string),
        Some(format!(
            "rollout {}: cut off a torn last line (53 bytes at byte {good}) before appending",
            path.display()
        ))
    );
    let mut writer = reopened.writer;
    writer.append(&said("three")).expect("append");
    writer.append(&turn(2)).expect("append");
    writer.sync().expect("sync");
    drop(writer);

    let read = read_rollout(&path).expect("read");
    assert_eq!((read.torn_tail, read.notices.len()), (0, 0));
    assert_eq!(
        read.items().skip(1).cloned().collect::<Vec<_>>(),
        [turn(1), said("one"), said("two"), said("three"), turn(2)]
    );
    let numbers: Vec<usize> = read.lines.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn open_append_ends_a_complete_last_line() {
    let (_home, path) = written(&[turn(1), said("one")]);
    let bytes = fs::read(&path).expect("read");
    fs::write(&path, &bytes[..bytes.len() - 1]).expect("drop the final newline");
    assert_eq!(items_of(&path), [turn(1), said("one")]);

    let reopened = RolloutWriter::open_append(&path).expect("reopen");
    assert_eq!(
        reopened.repair,
        Some(TailRepair::AddedNewline { path: path.clone() })
    );
    let mut writer = reopened.writer;
    writer.append(&said("two")).expect("append");
    drop(writer);
    assert_eq!(items_of(&path), [turn(1), said("one"), said("two")]);
}

#[test]
fn open_append_of_a_clean_file_changes_nothing() {
    let (_home, path) = written(&[turn(1)]);
    let before = fs::read(&path).expect("read");
    let reopened = RolloutWriter::open_append(&path).expect("reopen");
    assert_eq!(reopened.repair, None);
    assert_eq!(reopened.meta, read_rollout(&path).expect("read").meta);
    assert_eq!(reopened.writer.stats().syncs, 0);
    drop(reopened);
    assert_eq!(fs::read(&path).expect("read"), before);
}

#[test]
fn a_rollout_has_one_writer_at_a_time() {
    let (_home, path) = written(&[turn(1)]);
    let first = RolloutWriter::open_append(&path).expect("first writer");
    let err = RolloutWriter::open_append(&path).expect_err("second writer");
    assert_eq!(
        err.to_string(),
        format!(
            "rollout {} is already open for appending by another writer",
            path.display()
        )
    );
    drop(first);
    RolloutWriter::open_append(&path).expect("free again");
}

#[test]
fn open_append_refuses_a_file_without_a_header() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("torn-header.jsonl");
    let torn = br#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_me"#;
    fs::write(&path, torn).expect("write");
    let err = RolloutWriter::open_append(&path).expect_err("no header");
    assert!(matches!(err, RolloutError::MissingMeta { .. }), "{err:?}");
    assert_eq!(fs::read(&path).expect("read"), torn, "left untouched");
}
