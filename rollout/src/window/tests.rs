//! The last window of a rollout: found past lines that only nest the tag, across chunk
//! boundaries, and replayed to the same thread as the whole file.

use std::io::Write;

use arbor_protocol::{
    AgentPath, AgentStatus, ApprovalRequested, Compacted, CompactionTrigger,
    ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem, RolloutLine, SessionMeta, ThreadId,
    Timestamp, TurnCompleted, TurnStarted, Usage,
};

use super::{last_window_offset, read_last_window, rfind};
use crate::{Replay, read_rollout};

fn meta() -> SessionMeta {
    let id = ThreadId::new();
    SessionMeta {
        thread_id: id,
        session_id: id,
        parent_id: None,
        path: AgentPath::root(),
        depth: 0,
        nickname: None,
        role: "default".into(),
        model: "m".into(),
        provider: None,
        effort: None,
        sandbox: "read-only".into(),
        cwd: "/w".into(),
        format_version: ROLLOUT_FORMAT_VERSION,
        repository: None,
        handle: None,
    }
}

fn say(role: &str, text: &str) -> RolloutItem {
    RolloutItem::ResponseItem(ResponseItem::Message {
        role: role.into(),
        content: text.into(),
    })
}

fn usage(tokens: u64) -> RolloutItem {
    RolloutItem::Usage(
        Usage {
            input_tokens: tokens,
            output_tokens: 1,
            ..Usage::default()
        }
        .into(),
    )
}

fn compacted(summary: &str, turn: u64, usage: Usage) -> RolloutItem {
    RolloutItem::Compacted(Box::new(Compacted {
        summary: summary.into(),
        window: vec![ResponseItem::Message {
            role: "user".into(),
            content: format!("summary: {summary}"),
        }],
        trigger: CompactionTrigger::Auto,
        tokens_before: 100,
        turn,
        turn_end: None,
        last_message: Some("answer 1".into()),
        usage,
    }))
}

fn write(items: &[RolloutItem]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("file");
    for (n, item) in std::iter::once(RolloutItem::SessionMeta(Box::new(meta())))
        .chain(items.iter().cloned())
        .enumerate()
    {
        let line = RolloutLine {
            seq: Some(n as u64 + 1),
            thread: None,
            timestamp: Timestamp::from_millis(0),
            item,
        };
        writeln!(file, "{}", serde_json::to_string(&line).expect("json")).expect("write");
    }
    file.flush().expect("flush");
    file
}

/// Turns of talk, a compaction inside turn `at`, more talk; a long filler makes the file
/// span several chunks of the backward scan.
fn history(at: u64, filler: usize) -> Vec<RolloutItem> {
    let mut items = Vec::new();
    let mut total = Usage::default();
    for turn in 1..=3 {
        items.push(RolloutItem::TurnStarted(TurnStarted { turn }));
        items.push(say("user", &format!("task {turn} {}", "x".repeat(filler))));
        if turn == at {
            items.push(usage(50));
            total.add(Usage {
                input_tokens: 50,
                output_tokens: 1,
                ..Usage::default()
            });
            items.push(compacted("so far", turn, total));
        }
        items.push(say("assistant", &format!("answer {turn}")));
        items.push(usage(10));
        total.add(Usage {
            input_tokens: 10,
            output_tokens: 1,
            ..Usage::default()
        });
        // A payload that nests the tag as a key: not a window.
        items.push(RolloutItem::ApprovalRequested(ApprovalRequested {
            request_id: format!("r{turn}"),
            action: serde_json::json!({"type": "compacted", "payload": {"x": 1}}),
            justification: None,
        }));
        items.push(RolloutItem::TurnCompleted(TurnCompleted {
            turn,
            last_message: Some(format!("answer {turn}")),
        }));
    }
    items
}

#[test]
fn the_window_replays_to_the_same_thread_as_the_whole_file() {
    for filler in [10, 300_000] {
        let file = write(&history(2, filler));
        let whole = Replay::from_read(&read_rollout(file.path()).expect("read"));
        let window = read_last_window(file.path()).expect("window");
        assert!(window.lines.len() < read_rollout(file.path()).expect("read").lines.len());
        assert!(matches!(window.lines[1].1.item, RolloutItem::Compacted(_)));
        let from_window = Replay::from_read(&window);
        assert_eq!(from_window, whole, "filler {filler}");
        assert_eq!(whole.history.len(), 4, "{:?}", whole.history);
        assert_eq!(whole.turns.len(), 2);
        assert_eq!(whole.turns[0].number, 2);
        assert_eq!(
            whole.status,
            AgentStatus::Completed(Some("answer 3".into()))
        );
        assert_eq!(whole.usage.input_tokens, 10 + 50 + 10 + 10);
    }
}

#[test]
fn a_file_without_a_window_is_read_whole() {
    let file = write(&history(0, 10));
    assert_eq!(last_window_offset(file.path()).expect("scan"), None);
    assert_eq!(
        read_last_window(file.path()).expect("window"),
        read_rollout(file.path()).expect("read")
    );
}

#[test]
fn the_last_of_several_windows_is_the_one() {
    let mut items = history(1, 10);
    items.extend(history(3, 10));
    let file = write(&items);
    let window = read_last_window(file.path()).expect("window");
    let RolloutItem::Compacted(first) = &window.lines[1].1.item else {
        panic!("a window starts with its compacted line");
    };
    assert_eq!(first.turn, 3);
    assert_eq!(
        Replay::from_read(&window),
        Replay::from_read(&read_rollout(file.path()).expect("read"))
    );
}

#[test]
fn rfind_finds_the_last_occurrence() {
    assert_eq!(rfind(b"abcabc", b"bc"), Some(4));
    assert_eq!(rfind(b"abcabc", b"abc"), Some(3));
    assert_eq!(rfind(b"abcabc", b"cb"), None);
    assert_eq!(rfind(b"ab", b"abc"), None);
    assert_eq!(rfind(b"xab", b"ab"), Some(1));
}
