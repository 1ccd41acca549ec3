//! The session log on real files: numbering, group commit, lines of other processes, torn
//! tails, bad lines, and a disk that refuses writes.

use std::io::Write;

use arbor_protocol::{RolloutItem, ThreadId, TurnStarted};

use super::writer::{POLL, SOON_WINDOW};
use super::*;

fn turn(n: u64) -> RolloutItem {
    RolloutItem::TurnStarted(TurnStarted { turn: n })
}

fn started(path: &Path) -> (SessionLog, Outlets) {
    let tail = open_tail(path, true).expect("tail");
    SessionLog::start(
        path,
        Start {
            end: tail.end,
            last_seq: tail.last_seq,
        },
    )
    .expect("start")
}

fn seqs(path: &Path) -> Vec<u64> {
    read_log(path, 0)
        .expect("read")
        .lines
        .iter()
        .filter_map(|(line, _)| line.seq)
        .collect()
}

#[test]
fn appends_are_numbered_in_order_and_one_sync_covers_them_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let (log, outlets) = started(&path);
    let a = ThreadId::new();
    let b = ThreadId::new();
    for n in 0..50 {
        log.append(if n % 2 == 0 { a } else { b }, [turn(n)])
            .expect("append");
    }
    let last = log.append(a, [turn(50), turn(51)]).expect("append");
    assert_eq!(last, 52);
    log.wait_durable(last, Urgency::Now).expect("durable");
    assert_eq!(log.syncs(), 1, "one sync for everything appended before it");
    assert_eq!(seqs(&path), (1..=52).collect::<Vec<_>>());
    let synced = outlets.synced.recv().expect("synced");
    assert_eq!(synced.lines.len(), 52);
    assert_eq!(synced.lsn, 52);
    assert_eq!(synced.lines[1].line.thread, Some(b));
    // The bytes handed on are the bytes of the file.
    let text = std::fs::read(&path).expect("read");
    let joined: Vec<u8> = synced
        .lines
        .iter()
        .flat_map(|l| l.bytes().to_vec())
        .collect();
    assert_eq!(joined, text);
    log.close().expect("close");
    assert!(log.append(a, [turn(99)]).is_err(), "closed");
}

#[test]
fn a_reopened_log_numbers_on_and_a_torn_tail_is_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let (log, _outlets) = started(&path);
    let lsn = log
        .append(ThreadId::new(), [turn(1), turn(2)])
        .expect("append");
    log.wait_durable(lsn, Urgency::Now).expect("durable");
    log.close().expect("close");
    let good = std::fs::metadata(&path).expect("meta").len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(b"{\"seq\":3,\"thread\":\"0"))
        .expect("tear");
    let tail = peek_tail(&path).expect("peek");
    assert_eq!((tail.end, tail.last_seq), (good, 2));
    assert!(tail.torn() > 0);
    let (log, _outlets) = started(&path);
    assert_eq!(std::fs::metadata(&path).expect("meta").len(), good, "cut");
    let lsn = log.append(ThreadId::new(), [turn(3)]).expect("append");
    log.wait_durable(lsn, Urgency::Now).expect("durable");
    assert_eq!(seqs(&path), [1, 2, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn lines_of_another_process_are_read_back_and_numbered_around() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let (log, mut outlets) = started(&path);
    let own = ThreadId::new();
    let lsn = log.append(own, [turn(1)]).expect("append");
    log.durable(lsn, Urgency::Now).await.expect("durable");
    // Appended but not yet written when the other process comes.
    let pending = log.append(own, [turn(2)]).expect("append");
    let other = ThreadId::new();
    let at = path.clone();
    let seq = tokio::task::spawn_blocking(move || append_external(&at, other, &[turn(7)]))
        .await
        .expect("join")
        .expect("external");
    assert_eq!(seq, 2, "numbered after the lines in the file");
    let seen = outlets.external.recv().await.expect("external line");
    assert_eq!((seen.seq, seen.thread), (Some(2), Some(other)));
    log.durable(pending, Urgency::Now).await.expect("durable");
    let lines = read_log(&path, 0).expect("read").lines;
    let threads: Vec<_> = lines.iter().map(|(l, _)| (l.seq, l.thread)).collect();
    assert_eq!(
        threads,
        [
            (Some(1), Some(own)),
            (Some(2), Some(other)),
            (Some(3), Some(own))
        ]
    );
    log.close().expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn output_waits_share_syncs_and_blocking_waits_do_not_wait_for_the_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let (log, _outlets) = started(&path);
    let thread = ThreadId::new();
    let mut waits = Vec::new();
    for n in 0..20 {
        let lsn = log.append(thread, [turn(n)]).expect("append");
        let log = log.clone();
        waits.push(tokio::spawn(async move {
            log.durable(lsn, Urgency::Soon).await
        }));
    }
    for wait in waits {
        wait.await.expect("join").expect("durable");
    }
    assert!(log.syncs() <= 2, "{} syncs for one burst", log.syncs());
    let lsn = log.append(thread, [turn(99)]).expect("append");
    let before = std::time::Instant::now();
    log.durable(lsn, Urgency::Now).await.expect("durable");
    assert!(log.durable_lsn() >= lsn);
    // Not a timing assertion on the disk: only that an urgent wait does not sit out the
    // output window plus the poll interval.
    assert!(before.elapsed() < SOON_WINDOW + POLL + std::time::Duration::from_secs(5));
    log.close().expect("close");
}

#[test]
fn a_failed_write_fails_every_waiter_and_every_later_append() {
    // Writes to /dev/full fail with ENOSPC, as on a full disk.
    let path = Path::new("/dev/full");
    let (log, _outlets) = SessionLog::start(path, Start::default()).expect("start");
    let lsn = log.append(ThreadId::new(), [turn(1)]).expect("append");
    let err = log.wait_durable(lsn, Urgency::Now).expect_err("full");
    assert_eq!(err.op, "write");
    assert!(
        err.to_string()
            .starts_with("cannot write the session log /dev/full: no space left on device"),
        "{err}"
    );
    assert_eq!(log.append(ThreadId::new(), [turn(2)]), Err(err.clone()));
    assert_eq!(log.close(), Err(err));
}

#[test]
fn bad_lines_are_skipped_with_a_notice_naming_the_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let thread = ThreadId::new();
    append_external_new(&path, thread, 1);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(b"not json\n"))
        .expect("damage");
    append_external_new(&path, thread, 2);
    let read = read_log(&path, 0).expect("read");
    assert_eq!(read.lines.len(), 2);
    assert_eq!(read.notices.len(), 1, "{:?}", read.notices);
    assert!(
        read.notices[0].contains("skipped the line at byte"),
        "{:?}",
        read.notices
    );
    assert_eq!(read.lines[1].0.seq, Some(2), "a bad line carries no number");
    // Reading on from the first line's end finds the rest.
    let rest = read_log(&path, read.lines[0].1).expect("read");
    assert_eq!(rest.lines.len(), 1);
}

#[test]
fn the_tail_is_found_behind_lines_longer_than_a_read_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let thread = ThreadId::new();
    let big = RolloutItem::ResponseItem(arbor_protocol::ResponseItem::Message {
        role: "user".into(),
        content: "x".repeat(100_000),
    });
    std::fs::write(&path, b"").expect("create");
    for _ in 0..3 {
        append_external(&path, thread, std::slice::from_ref(&big)).expect("append");
    }
    let tail = peek_tail(&path).expect("tail");
    assert_eq!(tail.last_seq, 3);
    assert_eq!(tail.end, std::fs::metadata(&path).expect("meta").len());
}

fn append_external_new(path: &Path, thread: ThreadId, n: u64) {
    if !path.exists() {
        std::fs::write(path, b"").expect("create");
    }
    append_external(path, thread, &[turn(n)]).expect("append");
}

#[test]
fn a_burst_with_nobody_waiting_is_synced_once_a_mib_is_written() {
    // Until a line is synced it is held in memory for the projections: a burst nobody waits
    // on is synced once a MiB of it is written, not at the once-a-second sync (taken out of
    // the way here, so that only the size rule can sync).
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let tail = open_tail(&path, true).expect("tail");
    let start = Start {
        end: tail.end,
        last_seq: tail.last_seq,
    };
    let (log, outlets) =
        SessionLog::start_aged(&path, start, std::time::Duration::from_secs(86_400))
            .expect("start");
    let thread = ThreadId::new();
    let text = "x".repeat(1000);
    // 1 100 lines of about 1.1 KB: past the write batch and past a MiB, in appends of 10.
    for _ in 0..110 {
        let lines = (0..10).map(|_| {
            RolloutItem::ResponseItem(arbor_protocol::ResponseItem::Message {
                role: "assistant".into(),
                content: text.clone(),
            })
        });
        log.append(thread, lines).expect("append");
    }
    let first = outlets
        .synced
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("synced with nobody waiting");
    let bytes: usize = first.lines.iter().map(|l| l.bytes().len()).sum();
    assert!(
        bytes >= 1 << 20,
        "synced before a MiB was written: {bytes} bytes"
    );
    assert_eq!(log.syncs(), 1);
    log.close().expect("close");
}
