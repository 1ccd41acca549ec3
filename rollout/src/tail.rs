//! The status of a thread read from the end of its rollout only, for resuming large trees
//! without reading every history: the last turn boundary decides.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use arbor_protocol::{AgentStatus, RolloutItem, RolloutLine};

use crate::{PROCESS_EXIT, RolloutError};

const CHUNK: u64 = 8 * 1024;

/// The status the last turn boundary of a rollout supports: `pending_init` when no turn ever
/// started, `interrupted: process_exit` when the last turn never ended.
pub fn tail_status(path: &Path) -> Result<AgentStatus, RolloutError> {
    Ok(match last_boundary(path)? {
        Some(RolloutItem::TurnCompleted(done)) => AgentStatus::Completed(done.last_message),
        Some(RolloutItem::TurnAborted(aborted)) => aborted.status(),
        Some(_) => AgentStatus::Interrupted(PROCESS_EXIT.to_string()),
        None => AgentStatus::PendingInit,
    })
}

/// Whether the last turn boundary of a rollout is a turn that started and has not ended.
pub fn tail_turn_open(path: &Path) -> Result<bool, RolloutError> {
    Ok(matches!(
        last_boundary(path)?,
        Some(RolloutItem::TurnStarted(_))
    ))
}

/// The last turn boundary line of a rollout (started, completed or aborted), read from its end.
fn last_boundary(path: &Path) -> Result<Option<RolloutItem>, RolloutError> {
    let io = |op: &'static str| {
        move |source| RolloutError::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let mut file = File::open(path).map_err(io("open"))?;
    let len = file.metadata().map_err(io("stat"))?.len();
    let mut end = len;
    // Bytes after the last newline seen so far (a line split across chunks).
    let mut carry: Vec<u8> = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start)).map_err(io("seek"))?;
        file.read_exact(&mut chunk).map_err(io("read"))?;
        chunk.extend_from_slice(&carry);
        let mut lines: Vec<&[u8]> = chunk.split(|b| *b == b'\n').collect();
        // The first piece may be the tail of an earlier line: keep it for the next round,
        // unless this chunk starts the file.
        let first = if start > 0 {
            lines.remove(0).to_vec()
        } else {
            Vec::new()
        };
        for line in lines.iter().rev() {
            if let Some(item) = boundary(line) {
                return Ok(Some(item));
            }
        }
        carry = first;
        end = start;
    }
    Ok(None)
}

/// A turn-boundary line's item; `None` for any other line (torn or unknown lines included).
fn boundary(line: &[u8]) -> Option<RolloutItem> {
    let text = std::str::from_utf8(line).ok()?;
    if !text.contains("\"type\":\"turn_") {
        return None;
    }
    match serde_json::from_str::<RolloutLine>(text).ok()?.item {
        item @ (RolloutItem::TurnStarted(_)
        | RolloutItem::TurnCompleted(_)
        | RolloutItem::TurnAborted(_)) => Some(item),
        _ => None,
    }
}
