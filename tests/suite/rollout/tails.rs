//! Torn tails on read and when a rollout is brought up to the log, a missing header.

use std::fs;

use arbor_protocol::ThreadId;
use arbor_rollout::{RolloutError, RolloutProjector, read_rollout};

use super::{file_lines, said, turn, written};

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
fn a_torn_rollout_line_is_cut_off_before_the_next_lines_are_projected() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let batches = super::logged(
        home.path(),
        id,
        true,
        &[turn(1), said("one"), said("two"), said("three"), turn(2)],
    );
    let lines: Vec<_> = batches.into_iter().flat_map(|b| b.lines).collect();
    // The first projection stopped after three lines, the fourth cut short by a crash.
    let mut first = RolloutProjector::new(home.path());
    first.project(&lines[..4]).expect("project");
    let path = first.path_of(id).expect("known").to_path_buf();
    let torn = &lines[4].bytes()[..lines[4].bytes().len() / 2];
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, torn))
        .expect("tear");
    assert_eq!(read_rollout(&path).expect("read").torn_tail, 1);
    // The next projector (a new process bringing the rollout up to the log) cuts the torn
    // bytes off and appends what the file lacks, once.
    let mut next = RolloutProjector::new(home.path());
    next.register(id, &path);
    next.project(&lines).expect("project");
    next.project(&lines).expect("again: nothing to add");
    let read = read_rollout(&path).expect("read");
    assert_eq!((read.torn_tail, read.notices.len()), (0, 0));
    assert_eq!(
        read.items().skip(1).cloned().collect::<Vec<_>>(),
        [turn(1), said("one"), said("two"), said("three"), turn(2)]
    );
    let seqs: Vec<Option<u64>> = read.lines.iter().map(|(_, l)| l.seq).collect();
    assert_eq!(seqs, (1..=6).map(Some).collect::<Vec<_>>());
}

#[test]
fn reading_refuses_a_file_without_a_header() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("torn-header.jsonl");
    let torn = br#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_me"#;
    fs::write(&path, torn).expect("write");
    let err = read_rollout(&path).expect_err("no header");
    assert!(matches!(err, RolloutError::MissingMeta { .. }), "{err:?}");
    assert_eq!(fs::read(&path).expect("read"), torn, "left untouched");
}
