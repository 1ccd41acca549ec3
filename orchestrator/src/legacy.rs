//! Sessions an earlier arbor made have rollouts (lines without numbers) and a journal of what
//! came from outside the tree, but no session log. Taking one over writes its log first: every
//! agent's lines and the journal's entries merged in time order and numbered, each rollout
//! rewritten with its lines' numbers (a file of its own, renamed into place), the log itself
//! last, and the store's position set back to the start so that reconcile applies the whole
//! log over the rows it holds.

use std::io::Write;
use std::path::{Path, PathBuf};

use arbor_agent_graph::{LogPosition, SessionState, Store, ThreadRecord};
use arbor_protocol::{Mail, RolloutItem, RolloutLine, ThreadId, Timestamp, UserMail, UserTarget};
use arbor_rollout::read_rollout;
use serde_json::Value;

use crate::error::OrchestratorError;

fn fail(what: impl std::fmt::Display) -> OrchestratorError {
    OrchestratorError::Start(format!(
        "cannot convert a session of an earlier arbor: {what}"
    ))
}

/// Writes the log of the session whose root is `root` (it has none) at `log_path`.
pub fn convert(
    home: &Path,
    store: &Store,
    root: &ThreadRecord,
    log_path: &Path,
) -> Result<Vec<String>, OrchestratorError> {
    let mut notices = Vec::new();
    // (time, thread order, line order) keeps each agent's lines in their order.
    let mut lines: Vec<(Timestamp, usize, usize, ThreadId, RolloutItem)> = Vec::new();
    let threads = store.threads_in_session(root.id())?;
    let mut rollouts: Vec<(ThreadId, PathBuf)> = Vec::new();
    for (order, thread) in threads.iter().enumerate() {
        let path = home.join(&thread.rollout_path);
        let read = read_rollout(&path).map_err(fail)?;
        notices.extend(read.notices);
        for (n, (_, line)) in read.lines.into_iter().enumerate() {
            lines.push((line.timestamp, order, n, thread.id(), line.item));
        }
        rollouts.push((thread.id(), path));
    }
    let journal = home
        .join(&root.rollout_path)
        .with_file_name(format!("journal-{}.jsonl", root.id()));
    for (n, (at, thread, item)) in journal_items(&journal, &mut notices)
        .into_iter()
        .enumerate()
    {
        lines.push((at, usize::MAX, n, thread, item));
    }
    lines.sort_by_key(|(at, order, n, _, _)| (*at, *order, *n));
    let numbered: Vec<RolloutLine> = lines
        .into_iter()
        .enumerate()
        .map(|(i, (timestamp, _, _, thread, item))| RolloutLine {
            seq: Some(i as u64 + 1),
            thread: Some(thread),
            timestamp,
            item,
        })
        .collect();
    // The log is written last: its presence is what says the conversion is complete. A
    // conversion killed before it leaves rollouts already numbered, which the next one reads
    // back and numbers the same way.
    for (id, path) in rollouts {
        let own = numbered
            .iter()
            .filter(|line| line.thread == Some(id) && line.item.in_rollout());
        write_lines(&path, own)?;
    }
    write_lines(log_path, numbered.iter())?;
    // The rows the store holds stay; reconcile applies the whole log over them.
    let mut state: SessionState = store.load_session(root.id())?;
    state.applied = LogPosition::default();
    store.commit(&mut state)?;
    notices.push(format!(
        "session {} was made by an earlier arbor: wrote its session log {}",
        root.id(),
        log_path.display()
    ));
    Ok(notices)
}

/// The journal's entries as log items: mail from the user and closes (interrupts only ever
/// acted on a live session).
fn journal_items(
    path: &Path,
    notices: &mut Vec<String>,
) -> Vec<(Timestamp, ThreadId, RolloutItem)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            notices.push(format!("{}: line {} skipped", path.display(), n + 1));
            continue;
        };
        let id = |key: &str| entry[key].as_str().and_then(|t| ThreadId::parse(t).ok());
        match entry["type"].as_str() {
            Some("mail") => {
                let (Some(recipient), Ok(mut mail)) = (
                    id("recipient_id"),
                    serde_json::from_value::<Mail>(entry["mail"].clone()),
                ) else {
                    continue;
                };
                // The journals of earlier versions held the user's mail only.
                mail.from_user = true;
                let at = mail.created_at;
                items.push((
                    at,
                    recipient,
                    RolloutItem::UserMail(Box::new(UserMail {
                        recipient_id: recipient,
                        mail,
                    })),
                ));
            }
            Some("close") => {
                let Some(target) = id("target_id") else {
                    continue;
                };
                let at = entry["at"]
                    .as_str()
                    .and_then(|t| Timestamp::parse(t).ok())
                    .unwrap_or_default();
                items.push((
                    at,
                    target,
                    RolloutItem::UserClose(UserTarget { target_id: target }),
                ));
            }
            _ => {}
        }
    }
    items
}

/// Writes `lines` to `path` through a file of its own, synced, renamed into place (the folder
/// synced after).
fn write_lines<'a>(
    path: &Path,
    lines: impl Iterator<Item = &'a RolloutLine>,
) -> Result<(), OrchestratorError> {
    let temp = path.with_extension(format!("jsonl.convert-{}", std::process::id()));
    let mut file = std::fs::File::create(&temp).map_err(fail)?;
    let mut buf = Vec::new();
    for line in lines {
        serde_json::to_writer(&mut buf, line).map_err(fail)?;
        buf.push(b'\n');
    }
    file.write_all(&buf).map_err(fail)?;
    file.sync_data().map_err(fail)?;
    std::fs::rename(&temp, path).map_err(fail)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(fail)
}
