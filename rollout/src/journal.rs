//! The session journal: an append-only JSONL file next to the root's rollout that records what
//! reaches a session from outside its tree (`arbor send`, `arbor followup`, `arbor close`,
//! `arbor interrupt`). Each entry is written under an exclusive `flock` and synced before the
//! store is touched, so the store can be rebuilt from rollouts plus the journal, and a live
//! driver learns of new entries by watching the file grow.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use arbor_protocol::{Mail, ThreadId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::RolloutError;

/// One thing that happened to a session from outside its tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JournalEntry {
    /// Mail from the user, addressed to `recipient_id`.
    Mail { recipient_id: ThreadId, mail: Mail },
    /// The user closed an agent.
    Close { target_id: ThreadId, at: Timestamp },
    /// The user interrupted an agent's running turn.
    Interrupt { target_id: ThreadId, at: Timestamp },
}

/// The journal of the session whose root rollout is `root_rollout`.
pub fn journal_path(root_rollout: &Path, session: ThreadId) -> PathBuf {
    root_rollout
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(format!("journal-{session}.jsonl"))
}

fn io(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> RolloutError {
    let path = path.to_path_buf();
    move |source| RolloutError::Io { path, op, source }
}

/// Appends one entry under an exclusive lock and syncs it.
pub fn append_journal(path: &Path, entry: &JournalEntry) -> Result<(), RolloutError> {
    let mut line = serde_json::to_vec(entry).map_err(|err| RolloutError::Io {
        path: path.to_path_buf(),
        op: "encode",
        source: std::io::Error::other(err),
    })?;
    line.push(b'\n');
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io(path, "open"))?;
    // SAFETY: flock only reads the descriptor, which `file` keeps open until the end.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0;
    if !locked {
        return Err(io(path, "lock")(std::io::Error::last_os_error()));
    }
    file.write_all(&line).map_err(io(path, "append"))?;
    file.sync_data().map_err(io(path, "sync"))?;
    Ok(())
}

/// Reads entries starting at byte `offset`; returns each with the offset just after it, and
/// the offset after the last whole line. A torn last line is left for a later read; a bad line
/// in the middle is an error.
pub fn read_journal(
    path: &Path,
    offset: u64,
) -> Result<(Vec<(JournalEntry, u64)>, u64), RolloutError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), offset)),
        Err(err) => return Err(io(path, "open")(err)),
    };
    file.seek(SeekFrom::Start(offset))
        .map_err(io(path, "seek"))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io(path, "read"))?;
    let mut entries = Vec::new();
    let mut consumed = 0usize;
    for (index, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        if !line.ends_with(b"\n") {
            break;
        }
        consumed += line.len();
        let text = &line[..line.len() - 1];
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry = serde_json::from_slice(text).map_err(|err| RolloutError::BadLine {
            path: path.to_path_buf(),
            line: index + 1,
            reason: err.to_string(),
        })?;
        entries.push((entry, offset + consumed as u64));
    }
    Ok((entries, offset + consumed as u64))
}

/// The journal's current length: entries before it are already known.
pub fn journal_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |meta| meta.len())
}
