//! Rollout files: round trips, torn tails, bad lines.

use std::fs;
use std::path::{Path, PathBuf};

use arbor_protocol::{
    AbortKind, AgentClosed, AgentPath, AgentStatus, ApprovalDecided, ApprovalRequested, Mail,
    MailConsumed, MailKind, ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem, SessionMeta,
    ThreadId, Timestamp, TurnAborted, TurnCompleted, TurnStarted, Usage,
};
use arbor_rollout::{
    Entry, RolloutError, RolloutReader, RolloutWriter, TailRepair, find_rollout, list_rollouts,
    read_rollout, rollout_path,
};

fn meta(thread_id: ThreadId) -> SessionMeta {
    SessionMeta {
        thread_id,
        session_id: thread_id,
        parent_id: None,
        path: AgentPath::root(),
        depth: 0,
        nickname: None,
        role: "default".into(),
        model: "scripted".into(),
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/work/project".into(),
        format_version: ROLLOUT_FORMAT_VERSION,
    }
}

fn turn(turn: u64) -> RolloutItem {
    RolloutItem::TurnStarted(TurnStarted { turn })
}

fn said(text: &str) -> RolloutItem {
    RolloutItem::ResponseItem(ResponseItem::Message {
        role: "assistant".into(),
        content: text.into(),
    })
}

/// One item of every variant (and every `ResponseItem` shape), with awkward text in it.
fn every_item() -> Vec<RolloutItem> {
    let root = AgentPath::root();
    let child = root.join("worker_a").expect("join");
    let child_id = ThreadId::new();
    let mail = Mail::new(
        root.clone(),
        child.clone(),
        MailKind::Spawn,
        "fix \"the\" bug\nline two — ünïcode ✓ \u{2028} tab\t".into(),
    );
    vec![
        RolloutItem::SessionMeta(SessionMeta {
            parent_id: Some(ThreadId::new()),
            path: child.clone(),
            depth: 1,
            nickname: Some("Plato the 2nd".into()),
            effort: Some("high".into()),
            ..meta(child_id)
        }),
        turn(1),
        RolloutItem::ResponseItem(ResponseItem::Message {
            role: "user".into(),
            content: "hello\r\n{\"not\": \"a line\"}\n".into(),
        }),
        RolloutItem::ResponseItem(ResponseItem::Reasoning {
            summary: vec!["think".into(), "again".into()],
            encrypted_content: Some("gAAAA==".into()),
        }),
        RolloutItem::ResponseItem(ResponseItem::Reasoning {
            summary: Vec::new(),
            encrypted_content: None,
        }),
        RolloutItem::ResponseItem(ResponseItem::FunctionCall {
            call_id: "call_1".into(),
            name: "spawn_agent".into(),
            arguments: r#"{"task_name":"worker_a","message":"go"}"#.into(),
        }),
        RolloutItem::MailSent(mail.clone()),
        RolloutItem::ResponseItem(ResponseItem::FunctionCallOutput {
            call_id: "call_1".into(),
            output: r#"{"task_name":"/root/worker_a","nickname":"Plato"}"#.into(),
        }),
        RolloutItem::MailConsumed(MailConsumed { mail }),
        RolloutItem::ApprovalRequested(ApprovalRequested {
            request_id: "req_1".into(),
            action: serde_json::json!({"cmd": ["rm", "-rf", "build"], "cwd": "/w", "n": 1.5}),
            justification: Some("clean the build".into()),
        }),
        RolloutItem::ApprovalDecided(ApprovalDecided {
            request_id: "req_1".into(),
            outcome: "deny".into(),
            decided_by: Some("guardian".into()),
            risk_level: Some("high".into()),
            rationale: None,
            tokens: Some(321),
        }),
        RolloutItem::AgentClosed(AgentClosed {
            target_id: child_id,
            target: child.clone(),
            previous_status: AgentStatus::Completed(None),
        }),
        RolloutItem::AgentClosed(AgentClosed {
            target_id: child_id,
            target: child,
            previous_status: AgentStatus::Errored("boom".into()),
        }),
        RolloutItem::Usage(Usage {
            input_tokens: u64::MAX,
            cached_input_tokens: 7,
            output_tokens: 0,
        }),
        RolloutItem::TurnCompleted(TurnCompleted {
            turn: 1,
            last_message: Some("done".into()),
        }),
        RolloutItem::TurnCompleted(TurnCompleted {
            turn: 2,
            last_message: None,
        }),
        RolloutItem::TurnAborted(TurnAborted {
            turn: 3,
            kind: AbortKind::Interrupted,
            reason: "process_exit".into(),
        }),
        RolloutItem::TurnAborted(TurnAborted {
            turn: 4,
            kind: AbortKind::Errored,
            reason: "turn response limit reached".into(),
        }),
    ]
}

/// A fresh home with a created rollout holding `items` after its header; the writer is dropped.
fn written(items: &[RolloutItem]) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().expect("tempdir");
    let mut writer = RolloutWriter::create(home.path(), &meta(ThreadId::new())).expect("create");
    for item in items {
        writer.append(item).expect("append");
    }
    writer.sync().expect("sync");
    let path = writer.path().to_path_buf();
    (home, path)
}

fn items_of(path: &Path) -> Vec<RolloutItem> {
    let read = read_rollout(path).expect("read");
    read.items().skip(1).cloned().collect()
}

/// The file's lines, without newlines.
fn file_lines(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).expect("read file");
    text.lines().map(str::to_string).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    fs::write(path, lines.join("\n") + "\n").expect("write file");
}

fn bad_line(err: RolloutError) -> (PathBuf, usize, String) {
    let message = err.to_string();
    match err {
        RolloutError::BadLine { path, line, .. } => (path, line, message),
        other => panic!("expected a bad line, got {other:?}"),
    }
}

#[test]
fn every_item_variant_round_trips() {
    let items = every_item();
    let mut covered: Vec<&str> = items.iter().map(RolloutItem::type_name).collect();
    covered.sort_unstable();
    covered.dedup();
    let mut known = RolloutItem::KNOWN_TYPES.to_vec();
    known.sort_unstable();
    assert_eq!(covered, known, "every_item() must hold every variant");

    let home = tempfile::tempdir().expect("tempdir");
    let header = meta(ThreadId::new());
    let before = Timestamp::now();
    let mut writer = RolloutWriter::create(home.path(), &header).expect("create");
    let (single, batch) = items.split_at(items.len() / 2);
    for item in single {
        writer.append(item).expect("append");
    }
    writer.append_batch(batch).expect("append batch");
    writer.sync().expect("sync");
    let path = writer.path().to_path_buf();
    drop(writer);
    let after = Timestamp::now();

    let read = read_rollout(&path).expect("read");
    assert_eq!(read.meta, header);
    assert_eq!((read.torn_tail, read.unknown.len()), (0, 0));
    assert!(read.notices.is_empty(), "{:?}", read.notices);
    let mut expected = vec![RolloutItem::SessionMeta(header)];
    expected.extend(items);
    assert_eq!(read.items().cloned().collect::<Vec<_>>(), expected);
    let numbers: Vec<usize> = read.lines.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=expected.len()).collect::<Vec<_>>());
    let stamps: Vec<Timestamp> = read.lines.iter().map(|(_, l)| l.timestamp).collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    assert!(before <= stamps[0] && stamps[stamps.len() - 1] <= after);
}

#[test]
fn writer_counts_lines_bytes_and_syncs() {
    let home = tempfile::tempdir().expect("tempdir");
    let mut writer = RolloutWriter::create(home.path(), &meta(ThreadId::new())).expect("create");
    assert_eq!(writer.stats().lines_written, 1);
    assert_eq!(writer.stats().syncs, 1);
    writer.append(&turn(1)).expect("append");
    writer.append_batch(&[said("a"), said("b")]).expect("batch");
    writer.append_batch(&[]).expect("empty batch");
    writer.sync().expect("sync");
    writer.sync().expect("second sync has nothing to do");
    let stats = writer.stats();
    assert_eq!((stats.lines_written, stats.syncs), (4, 2));
    let on_disk = fs::metadata(writer.path()).expect("stat").len();
    assert_eq!(stats.bytes_written, on_disk);
}

#[test]
fn path_layout_is_sessions_date_folders_and_stamped_name() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let stamp = Timestamp::parse("2026-11-30T09:32:03.123Z").expect("timestamp");
    let expected = home.path().join(format!(
        "sessions/2026/11/30/rollout-2026-11-30T09-32-03-{id}.jsonl"
    ));
    assert_eq!(rollout_path(home.path(), stamp, id), expected);
    let writer = RolloutWriter::create_at(home.path(), &meta(id), stamp).expect("create");
    assert_eq!(writer.path(), expected);
    drop(writer);
    let read = read_rollout(&expected).expect("read");
    assert_eq!(read.lines[0].1.timestamp, stamp);
    assert_eq!(find_rollout(home.path(), id).expect("find"), expected);

    // `create` files under today's UTC date.
    let now_id = ThreadId::new();
    let (year, month, day) = Timestamp::now().date();
    let writer = RolloutWriter::create(home.path(), &meta(now_id)).expect("create");
    let relative = writer.path().strip_prefix(home.path()).expect("under home");
    let parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        parts[..4],
        [
            "sessions".to_string(),
            format!("{year:04}"),
            format!("{month:02}"),
            format!("{day:02}")
        ]
    );
    assert!(parts[4].starts_with(&format!("rollout-{year:04}-{month:02}-{day:02}T")));
    assert!(parts[4].ends_with(&format!("-{now_id}.jsonl")));
    assert_eq!(
        find_rollout(home.path(), now_id).expect("find"),
        writer.path()
    );
    assert_eq!(list_rollouts(home.path()).expect("list").len(), 2);
}

#[test]
fn find_names_the_missing_thread() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let err = find_rollout(home.path(), id).expect_err("nothing there");
    let sessions = home.path().join("sessions");
    assert_eq!(
        err.to_string(),
        format!("no rollout for thread {id} under {}", sessions.display())
    );
}

#[test]
fn create_refuses_to_overwrite() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let stamp = Timestamp::now();
    let mut writer = RolloutWriter::create_at(home.path(), &meta(id), stamp).expect("create");
    writer.append(&turn(1)).expect("append");
    let path = writer.path().to_path_buf();
    drop(writer);
    let before = fs::read(&path).expect("read");
    let err = RolloutWriter::create_at(home.path(), &meta(id), stamp).expect_err("exists");
    assert!(matches!(err, RolloutError::AlreadyExists { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "rollout {} already exists; refusing to overwrite it",
            path.display()
        )
    );
    assert_eq!(fs::read(&path).expect("read"), before);
}

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

#[test]
fn a_bad_line_in_the_middle_names_file_and_line() {
    let (_home, path) = written(&[turn(1), said("one"), said("two")]);
    let mut lines = file_lines(&path);
    lines.insert(2, "this is not json".into());
    write_lines(&path, &lines);
    let (at, line, message) = bad_line(read_rollout(&path).expect_err("bad line"));
    assert_eq!((at, line), (path.clone(), 3));
    assert!(
        message.starts_with(&format!(
            "rollout {}: line 3: not valid json",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn a_known_type_with_a_malformed_payload_is_an_error() {
    let (_home, path) = written(&[turn(1), said("one")]);
    let mut lines = file_lines(&path);
    lines[1] = lines[1].replace(r#""turn":1"#, r#""turn":"first""#);
    write_lines(&path, &lines);
    let (_, line, message) = bad_line(read_rollout(&path).expect_err("malformed"));
    assert_eq!(line, 2);
    assert!(
        message.starts_with(&format!(
            "rollout {}: line 2: malformed `turn_started` line: invalid type",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn a_complete_bad_last_line_is_an_error_not_a_torn_tail() {
    let (_home, path) = written(&[turn(1)]);
    let mut bytes = fs::read(&path).expect("read");
    bytes.extend_from_slice(b"garbage\n");
    fs::write(&path, &bytes).expect("write");
    let (_, line, _) = bad_line(read_rollout(&path).expect_err("bad last line"));
    assert_eq!(line, 3);

    // JSON without its newline is a finished write, so a bad payload there is an error too.
    bytes.truncate(bytes.len() - b"garbage\n".len());
    bytes.extend_from_slice(
        br#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"usage","payload":{}}"#,
    );
    fs::write(&path, &bytes).expect("write");
    let (_, line, message) = bad_line(read_rollout(&path).expect_err("bad last line"));
    assert_eq!(line, 3);
    assert!(message.contains("malformed `usage` line"), "{message}");
}

#[test]
fn unknown_item_types_are_skipped_with_a_notice() {
    let (_home, path) = written(&[turn(1), said("one")]);
    let mut lines = file_lines(&path);
    lines.insert(
        2,
        r#"{"timestamp":"2027-01-01T00:00:00.000Z","type":"hologram","payload":{"x":[1]}}"#.into(),
    );
    lines.insert(3, "   ".into());
    write_lines(&path, &lines);
    let read = read_rollout(&path).expect("read");
    assert_eq!(read.unknown, [(3, "hologram".to_string())]);
    assert_eq!(
        read.notices,
        [format!(
            "rollout {}: skipped line 3 of unknown type `hologram` (written by a newer arbor?)",
            path.display()
        )]
    );
    let numbered: Vec<(usize, RolloutItem)> = read
        .lines
        .iter()
        .skip(1)
        .map(|(n, l)| (*n, l.item.clone()))
        .collect();
    assert_eq!(numbered, [(2, turn(1)), (5, said("one"))]);
}

#[test]
fn the_first_line_must_be_the_header() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("x.jsonl");
    let p = path.display().to_string();
    let check = |content: &str, expected: &str| {
        fs::write(&path, content).expect("write");
        let err = read_rollout(&path).expect_err("no header");
        assert_eq!(err.to_string(), expected.replace("{p}", &p), "{content:?}");
    };
    let ts = r#""timestamp":"2026-01-01T00:00:00.000Z""#;
    check(
        "",
        "rollout {p} has no session_meta first line: the file is empty",
    );
    check(
        "\n \n",
        "rollout {p} has no session_meta first line: the file holds only blank lines",
    );
    check(
        &format!(r#"{{{ts},"type":"session_me"#),
        "rollout {p} has no session_meta first line: its only line is torn (cut short while being written)",
    );
    check(
        &format!("{{{ts},\"type\":\"turn_started\",\"payload\":{{\"turn\":1}}}}\n"),
        "rollout {p}: line 1 is a `turn_started` item, expected the session_meta header",
    );
    check(
        &format!("{{{ts},\"type\":\"hologram\",\"payload\":{{}}}}\n"),
        "rollout {p}: line 1 is a `hologram` item, expected the session_meta header",
    );
    assert!(matches!(
        RolloutWriter::open_append(&home.path().join("absent.jsonl")),
        Err(RolloutError::Io { op: "open", .. })
    ));
}

#[test]
fn the_streaming_reader_yields_every_entry_in_order() {
    let (_home, path) = written(&[turn(1)]);
    let mut bytes = fs::read(&path).expect("read");
    bytes.extend_from_slice(
        b"{\"timestamp\":\"2027-01-01T00:00:00.000Z\",\"type\":\"hologram\",\"payload\":1}\n{\"ti",
    );
    fs::write(&path, &bytes).expect("write");
    let reader = RolloutReader::open(&path).expect("open");
    assert_eq!(reader.path(), path);
    let kinds: Vec<String> = reader
        .map(|entry| match entry.expect("entry") {
            Entry::Line(n, line) => format!("{n}:{}", line.item.type_name()),
            Entry::Unknown {
                line, type_name, ..
            } => format!("{line}:unknown {type_name}"),
            Entry::TornTail { line, bytes, .. } => format!("{line}:torn {bytes}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "1:session_meta",
            "2:turn_started",
            "3:unknown hologram",
            "4:torn 4"
        ]
    );
}
