//! The writer's tail scan, a failed append that cannot be undone, and what a barrier covers.

use super::*;

fn scratch(content: &[u8]) -> (tempfile::TempDir, PathBuf, File) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.jsonl");
    fs::write(&path, content).expect("write");
    let file = File::open(&path).expect("open");
    (dir, path, file)
}

#[test]
fn last_line_start_scans_back_over_several_chunks() {
    let mut content = b"header\n".to_vec();
    content.extend(std::iter::repeat_n(b'x', 3 * TAIL_CHUNK_BYTES + 5));
    let (_dir, path, file) = scratch(&content);
    let len = content.len() as u64;
    assert_eq!(last_line_start(&file, len, &path).expect("scan"), 7);
    assert_eq!(last_line_start(&file, 7, &path).expect("scan"), 7);
    assert_eq!(last_line_start(&file, 6, &path).expect("scan"), 0);
    assert_eq!(last_line_start(&file, 0, &path).expect("scan"), 0);
}

#[test]
fn a_failed_append_that_cannot_be_undone_stops_the_writer() {
    // Writes to /dev/full fail with ENOSPC and it cannot be truncated.
    let Ok(file) = OpenOptions::new().append(true).open("/dev/full") else {
        return;
    };
    let mut writer = RolloutWriter::new(PathBuf::from("/dev/full"), file, 0);
    let item = RolloutItem::TurnStarted(arbor_protocol::TurnStarted { turn: 1 });
    let err = writer.append(&item).expect_err("disk full");
    assert!(
        matches!(err, RolloutError::Io { op: "append", .. }),
        "{err:?}"
    );
    let err = writer.append(&item).expect_err("poisoned");
    assert_eq!(
        err.to_string(),
        "rollout /dev/full: writer stopped after a failed append could not be undone"
    );
    assert!(matches!(writer.sync(), Err(RolloutError::Poisoned { .. })));
    assert!(matches!(
        writer.barrier(),
        Err(RolloutError::Poisoned { .. })
    ));
    assert_eq!(writer.stats(), WriterStats::default());
}

/// A barrier covers what was appended before it was taken; lines appended while it syncs
/// wait for the next one.
#[test]
fn a_barrier_covers_the_lines_before_it() {
    let (_dir, path, _) = scratch(b"");
    let file = OpenOptions::new().append(true).open(&path).expect("open");
    let mut writer = RolloutWriter::new(path, file, 0);
    assert!(
        writer.barrier().expect("barrier").is_none(),
        "nothing to sync"
    );
    let item = RolloutItem::TurnStarted(arbor_protocol::TurnStarted { turn: 1 });
    writer.append(&item).expect("append");
    let first = writer.barrier().expect("barrier").expect("lines to sync");
    writer
        .append(&item)
        .expect("append while the barrier syncs");
    let synced = first.sync();
    writer.barrier_done(&first, &synced);
    assert_eq!(writer.stats().syncs, 1);
    let second = writer.barrier().expect("barrier").expect("the later line");
    let synced = second.sync();
    writer.barrier_done(&second, &synced);
    assert!(writer.barrier().expect("barrier").is_none(), "all on disk");
    writer.sync().expect("a sync with nothing new is free");
    assert_eq!(writer.stats().syncs, 2);
}
