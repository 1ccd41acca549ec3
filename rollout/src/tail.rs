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
            if let Some(status) = boundary(line) {
                return Ok(status);
            }
        }
        carry = first;
        end = start;
    }
    Ok(AgentStatus::PendingInit)
}

/// The status a turn-boundary line leaves the thread in; `None` for any other line (torn or
/// unknown lines included).
fn boundary(line: &[u8]) -> Option<AgentStatus> {
    let text = std::str::from_utf8(line).ok()?;
    if !text.contains("\"type\":\"turn_") {
        return None;
    }
    match serde_json::from_str::<RolloutLine>(text).ok()?.item {
        RolloutItem::TurnStarted(_) => Some(AgentStatus::Interrupted(PROCESS_EXIT.to_string())),
        RolloutItem::TurnCompleted(done) => Some(AgentStatus::Completed(done.last_message)),
        RolloutItem::TurnAborted(aborted) => Some(aborted.status()),
        _ => None,
    }
}
