//! The session journal: an append-only JSONL file next to the root's rollout that records what
//! reaches a session from outside its tree (`arbor send`, `arbor followup`, `arbor close`,
//! `arbor interrupt`). Each entry is written under an exclusive `flock` and synced before the
//! store is touched, so the store can be rebuilt from rollouts plus the journal, and a live
//! driver learns of new entries by watching the file grow.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
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
        .read(true)
        .open(path)
        .map_err(io(path, "open"))?;
    // SAFETY: flock only reads the descriptor, which `file` keeps open until the end.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0;
    if !locked {
        return Err(io(path, "lock")(std::io::Error::last_os_error()));
    }
    // A writer killed mid-line left a torn tail: end it, so that it stays one bad line that
    // readers skip instead of swallowing this entry.
    let len = file.metadata().map_err(io(path, "stat"))?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1)
            .map_err(io(path, "read"))?;
        if last[0] != b'\n' {
            line.insert(0, b'\n');
        }
    }
    file.write_all(&line).map_err(io(path, "append"))?;
    file.sync_data().map_err(io(path, "sync"))?;
    Ok(())
}

/// What [`read_journal`] found from its offset on.
#[derive(Debug, Default)]
pub struct JournalRead {
    /// Each entry with the offset just after it.
    pub entries: Vec<(JournalEntry, u64)>,
    /// The offset after the last whole line: where the next read starts.
    pub next: u64,
    /// One sentence per line skipped because it is not an entry, naming the file and the
    /// line's byte offset.
    pub notices: Vec<String>,
}

/// Reads entries starting at byte `offset`. A torn last line is left for a later read (its
/// writer may still be at it); a whole line that is not an entry (corrupt, or from a newer
/// arbor) is skipped with a notice, so one bad line never hides the entries after it.
pub fn read_journal(path: &Path, offset: u64) -> Result<JournalRead, RolloutError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(JournalRead {
                next: offset,
                ..JournalRead::default()
            });
        }
        Err(err) => return Err(io(path, "open")(err)),
    };
    file.seek(SeekFrom::Start(offset))
        .map_err(io(path, "seek"))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io(path, "read"))?;
    let mut read = JournalRead::default();
    let mut consumed = 0u64;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if !line.ends_with(b"\n") {
            break;
        }
        let start = offset + consumed;
        consumed += line.len() as u64;
        let text = &line[..line.len() - 1];
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice(text) {
            Ok(entry) => read.entries.push((entry, offset + consumed)),
            Err(err) => read.notices.push(format!(
                "{}: skipped the line at byte {start}, which is not a journal entry ({err})",
                path.display()
            )),
        }
    }
    read.next = offset + consumed;
    Ok(read)
}

/// The journal's current length: entries before it are already known.
pub fn journal_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |meta| meta.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::{AgentPath, MailKind};

    fn mail_entry(content: &str) -> JournalEntry {
        JournalEntry::Mail {
            recipient_id: ThreadId::new(),
            mail: Mail::new(
                AgentPath::root(),
                AgentPath::root().join("w").expect("path"),
                MailKind::Message,
                content.to_string(),
            ),
        }
    }

    fn contents(read: &JournalRead) -> Vec<String> {
        read.entries
            .iter()
            .map(|(entry, _)| match entry {
                JournalEntry::Mail { mail, .. } => mail.content.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    /// A corrupt line is skipped with a notice and the entries after it are read; a torn tail
    /// left by a killed writer is ended by the next append instead of swallowing it.
    #[test]
    fn bad_lines_are_skipped_and_a_torn_tail_does_not_swallow_the_next_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal.jsonl");
        append_journal(&path, &mail_entry("one")).expect("append");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"{not json}\n{\"type\":\"mail\",\"recip"))
            .expect("damage");
        let torn = read_journal(&path, 0).expect("read");
        assert_eq!(contents(&torn), ["one"]);
        assert_eq!(torn.notices.len(), 1, "{:?}", torn.notices);
        assert!(
            torn.notices[0].contains("not a journal entry"),
            "{:?}",
            torn.notices
        );
        append_journal(&path, &mail_entry("two")).expect("append");
        let read = read_journal(&path, 0).expect("read");
        assert_eq!(contents(&read), ["one", "two"]);
        assert_eq!(
            read.notices.len(),
            2,
            "the torn line is skipped too: {:?}",
            read.notices
        );
        assert_eq!(read.next, journal_len(&path));
        // Reading on from where the first read stopped finds the rest.
        let rest = read_journal(&path, torn.next).expect("read");
        assert_eq!(contents(&rest), ["two"]);
    }
}
