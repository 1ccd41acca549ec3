//! Writing: every item round trips, the counters, the path layout, `find`, no overwrite.

use std::fs;

use arbor_protocol::{
    AbortKind, AgentClosed, AgentPath, AgentStatus, ApprovalDecided, ApprovalRequested, Mail,
    MailConsumed, MailKind, ResponseItem, RolloutItem, SessionMeta, ThreadId, Timestamp,
    TurnAborted, TurnCompleted, Usage,
};
use arbor_rollout::{
    RolloutError, RolloutWriter, find_rollout, list_rollouts, read_rollout, rollout_path,
};

use super::{meta, said, turn};

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
