//! Writing: every item round trips through the log and into its rollout, the path layout,
//! `find`, and projecting twice changes nothing.

use std::fs;

use arbor_protocol::{
    AbortKind, AgentClosed, AgentPath, AgentStatus, ApprovalDecided, ApprovalOverride,
    ApprovalRequested, Mail, MailConsumed, MailKind, OverrideUsed, ResponseItem, RolloutItem,
    SessionMeta, StatusChanged, ThreadId, Timestamp, TurnAborted, TurnCompleted, Usage, UserAnswer,
    UserMail, UserTarget,
};
use arbor_rollout::log::{SessionLog, Start, Urgency};
use arbor_rollout::{RolloutProjector, find_rollout, list_rollouts, read_rollout, rollout_path};

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
        RolloutItem::SessionMeta(Box::new(SessionMeta {
            parent_id: Some(ThreadId::new()),
            path: child.clone(),
            depth: 1,
            nickname: Some("Plato the 2nd".into()),
            effort: Some("high".into()),
            provider: Some("claude".into()),
            ..meta(child_id)
        })),
        turn(1),
        RolloutItem::ResponseItem(ResponseItem::Message {
            role: "user".into(),
            content: "hello\r\n{\"not\": \"a line\"}\n".into(),
        }),
        RolloutItem::ResponseItem(ResponseItem::Reasoning {
            summary: vec!["think".into(), "again".into()],
            encrypted_content: Some("gAAAA==".into()),
            thinking: None,
        }),
        RolloutItem::ResponseItem(ResponseItem::Reasoning {
            summary: Vec::new(),
            encrypted_content: None,
            thinking: None,
        }),
        RolloutItem::ResponseItem(ResponseItem::Reasoning {
            summary: vec!["signed".into()],
            encrypted_content: None,
            thinking: Some(Box::new(arbor_protocol::Thinking::Thinking {
                signature: "EqQBCgIYAhIM".into(),
            })),
        }),
        RolloutItem::ResponseItem(ResponseItem::Reasoning {
            summary: Vec::new(),
            encrypted_content: None,
            thinking: Some(Box::new(arbor_protocol::Thinking::RedactedThinking {
                data: "EmwKAhgB".into(),
            })),
        }),
        RolloutItem::ResponseItem(ResponseItem::FunctionCall {
            call_id: "call_1".into(),
            name: "spawn_agent".into(),
            arguments: r#"{"task_name":"worker_a","message":"go"}"#.into(),
        }),
        RolloutItem::MailSent(Box::new(mail.clone())),
        RolloutItem::ResponseItem(ResponseItem::FunctionCallOutput {
            call_id: "call_1".into(),
            output: r#"{"task_name":"/root/worker_a","nickname":"Plato"}"#.into(),
        }),
        RolloutItem::MailConsumed(Box::new(MailConsumed { mail })),
        RolloutItem::ApprovalRequested(ApprovalRequested {
            request_id: "req_1".into(),
            action: serde_json::json!({"cmd": ["rm", "-rf", "build"], "cwd": "/w", "n": 1.5}),
            justification: Some("clean the build".into()),
        }),
        RolloutItem::ApprovalDecided(Box::new(ApprovalDecided {
            request_id: "req_1".into(),
            outcome: "deny".into(),
            decided_by: Some("guardian".into()),
            risk_level: Some("high".into()),
            rationale: None,
            tokens: Some(321),
        })),
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
        RolloutItem::Usage(
            Usage {
                input_tokens: u64::MAX,
                cached_input_tokens: 7,
                output_tokens: 0,
                compaction_tokens: 3,
                cache_write_tokens: 0,
            }
            .into(),
        ),
        RolloutItem::Usage(arbor_protocol::UsageLine {
            usage: Usage {
                input_tokens: 100,
                cached_input_tokens: 40,
                cache_write_tokens: 20,
                output_tokens: 5,
                compaction_tokens: 0,
            },
            served_by: Some(Box::new(arbor_protocol::ServedBy {
                provider: "claude".into(),
                model: "claude-sonnet-4-5".into(),
            })),
        }),
        RolloutItem::Compacted(Box::new(arbor_protocol::Compacted {
            summary: "what happened".into(),
            window: vec![ResponseItem::Message {
                role: "user".into(),
                content: "summary".into(),
            }],
            trigger: arbor_protocol::CompactionTrigger::Auto,
            tokens_before: 9000,
            turn: 1,
            turn_end: None,
            last_message: None,
            usage: Usage::default(),
        })),
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
        RolloutItem::Status(StatusChanged {
            status: AgentStatus::Queued,
        }),
        RolloutItem::UserMail(Box::new(UserMail {
            recipient_id: child_id,
            mail: Mail::new(root.clone(), root.clone(), MailKind::Message, "hi".into()),
        })),
        RolloutItem::UserClose(UserTarget {
            target_id: child_id,
        }),
        RolloutItem::UserInterrupt(UserTarget {
            target_id: child_id,
        }),
        RolloutItem::UserAnswer(UserAnswer {
            request_id: "req_1".into(),
            approve: true,
            for_session: false,
        }),
        RolloutItem::ApprovalOverride(ApprovalOverride {
            request_id: "req_1".into(),
            command: "rm -rf build".into(),
            cwd: "/w".into(),
            escalated: false,
        }),
        RolloutItem::OverrideUsed(OverrideUsed {
            request_id: "req_1".into(),
            used_by: "req_2".into(),
        }),
        RolloutItem::Worktree(Box::new(arbor_protocol::WorktreeFact::Created(
            arbor_protocol::WorktreeCreated {
                path: "worktrees/s/a".into(),
                branch: "arbor/s/a".into(),
                base: "0123456789abcdef0123456789abcdef01234567".into(),
                source: "/w".into(),
                prefix: "sub".into(),
            },
        ))),
        RolloutItem::Worktree(Box::new(arbor_protocol::WorktreeFact::Merged(
            arbor_protocol::WorktreeMerged {
                commit: "c".into(),
                into: "/w".into(),
                files: vec!["a.txt".into()],
            },
        ))),
        RolloutItem::Worktree(Box::new(arbor_protocol::WorktreeFact::Removed)),
        RolloutItem::ModelFallback(Box::new(arbor_protocol::ModelFallback {
            from: "claude/opus".into(),
            to: "gpt/gpt-5".into(),
            reason: "transport error: http 529: Overloaded".into(),
            note: Some("1 reasoning item of the history left out".into()),
        })),
    ]
}

#[test]
fn every_item_variant_round_trips_through_the_log_and_the_rollout() {
    let items = every_item();
    let mut covered: Vec<&str> = items.iter().map(RolloutItem::type_name).collect();
    covered.sort_unstable();
    covered.dedup();
    let mut known = RolloutItem::KNOWN_TYPES.to_vec();
    known.sort_unstable();
    assert_eq!(covered, known, "every_item() must hold every variant");

    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let before = Timestamp::now();
    let batches = super::logged(home.path(), id, true, &items);
    let after = Timestamp::now();
    let lines: Vec<_> = batches.iter().flat_map(|b| b.lines.clone()).collect();
    // The log holds every item, numbered from 1, in order.
    let logged = arbor_rollout::log::read_log(&home.path().join("log.jsonl"), 0).expect("log");
    assert!(logged.notices.is_empty(), "{:?}", logged.notices);
    let mut expected = vec![RolloutItem::SessionMeta(Box::new(meta(id)))];
    expected.extend(items);
    assert_eq!(
        logged
            .lines
            .iter()
            .map(|(l, _)| l.item.clone())
            .collect::<Vec<_>>(),
        expected
    );
    let seqs: Vec<u64> = logged.lines.iter().filter_map(|(l, _)| l.seq).collect();
    assert_eq!(seqs, (1..=expected.len() as u64).collect::<Vec<_>>());
    // The rollout holds the agent's items, byte for byte as in the log; session facts stay
    // in the log.
    let mut projector = RolloutProjector::new(home.path());
    projector.project(&lines).expect("project");
    let path = projector.path_of(id).expect("known").to_path_buf();
    let read = read_rollout(&path).expect("read");
    assert_eq!((read.torn_tail, read.unknown.len()), (0, 0));
    let in_rollout: Vec<RolloutItem> = expected
        .iter()
        .filter(|i| i.in_rollout())
        .cloned()
        .collect();
    assert_eq!(read.items().cloned().collect::<Vec<_>>(), in_rollout);
    let bytes: Vec<u8> = lines
        .iter()
        .filter(|l| l.line.item.in_rollout())
        .flat_map(|l| l.bytes().to_vec())
        .collect();
    assert_eq!(fs::read(&path).expect("rollout bytes"), bytes);
    let stamps: Vec<Timestamp> = read.lines.iter().map(|(_, l)| l.timestamp).collect();
    assert!(before <= stamps[0] && stamps[stamps.len() - 1] <= after);
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
    // A header line names its rollout with its own stamp.
    let (log, outlets) =
        SessionLog::start(&home.path().join("log.jsonl"), Start::default()).expect("log");
    let lsn = log
        .append_at(id, stamp, [RolloutItem::SessionMeta(Box::new(meta(id)))])
        .expect("append");
    log.wait_durable(lsn, Urgency::Now).expect("durable");
    log.close().expect("close");
    let mut projector = RolloutProjector::new(home.path());
    for batch in outlets.synced.iter() {
        projector.project(&batch.lines).expect("project");
    }
    assert_eq!(projector.path_of(id), Some(expected.as_path()));
    let read = read_rollout(&expected).expect("read");
    assert_eq!(read.lines[0].1.timestamp, stamp);
    assert_eq!(find_rollout(home.path(), id).expect("find"), expected);
    assert_eq!(list_rollouts(home.path()).expect("list"), [expected]);
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
fn projecting_the_same_lines_again_changes_no_rollout() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let lines: Vec<_> = super::logged(home.path(), id, true, &[turn(1), said("a")])
        .into_iter()
        .flat_map(|b| b.lines)
        .collect();
    let mut projector = RolloutProjector::new(home.path());
    projector.project(&lines).expect("project");
    let path = projector.path_of(id).expect("known").to_path_buf();
    let before = fs::read(&path).expect("read");
    RolloutProjector::new(home.path())
        .project(&lines)
        .expect("again");
    assert_eq!(fs::read(&path).expect("read"), before);
}
