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
use arbor_rollout::log::{SessionLog, Start, Synced, Urgency};
use arbor_rollout::{RolloutError, RolloutProjector};

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
        provider: None,
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/work/project".into(),
        format_version: ROLLOUT_FORMAT_VERSION,
        repository: None,
        handle: None,
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

/// Appends `items` of `thread` (a header first when `header` is set) to a session log at
/// `home/log.jsonl`, syncs and closes it; returns its synced batches.
fn logged(home: &Path, thread: ThreadId, header: bool, items: &[RolloutItem]) -> Vec<Synced> {
    let (log, outlets) = SessionLog::start(&home.join("log.jsonl"), Start::default()).expect("log");
    let mut all = Vec::new();
    if header {
        all.push(RolloutItem::SessionMeta(Box::new(meta(thread))));
    }
    all.extend(items.iter().cloned());
    let lsn = log.append(thread, all).expect("append");
    log.wait_durable(lsn, Urgency::Now).expect("durable");
    log.close().expect("close");
    outlets.synced.iter().collect()
}

/// A fresh home with a rollout holding `items` after its header, written the way every rollout
/// is: lines of the session log, projected once synced.
fn written(items: &[RolloutItem]) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().expect("tempdir");
    let id = ThreadId::new();
    let mut projector = RolloutProjector::new(home.path());
    for batch in logged(home.path(), id, true, items) {
        projector.project(&batch.lines).expect("project");
    }
    let path = projector.path_of(id).expect("known").to_path_buf();
    (home, path)
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
