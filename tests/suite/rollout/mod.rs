//! Rollout files: round trips, torn tails, bad lines; one module each, with the fixtures they
//! share here.

mod lines;
mod tails;
mod writing;

use std::fs;
use std::path::{Path, PathBuf};

use arbor_protocol::{
    AgentPath, ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem, SessionMeta, ThreadId,
    TurnStarted,
};
use arbor_rollout::{RolloutError, RolloutWriter, read_rollout};

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
