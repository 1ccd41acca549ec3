//! Retention (`docs/retention.md`): deleting whole sessions that no process drives, chosen by
//! how long they have been idle (the last write to their log) and how many of the newest to
//! keep. A session's log, every agent's rollout, its lease and every row of theirs in the store
//! go; a session some process drives is never touched: its lease is taken before anything of
//! it is deleted, and one held elsewhere keeps it.
//!
//! Files go first, the store's rows last (one transaction for all): a deletion killed part-way
//! leaves sessions the store still lists, which the next one finishes; never files nobody
//! lists. Then the deleted sessions' worktrees go the way `doctor`'s orphans would: what each
//! holds is committed on its branch first, and a branch with unmerged work stays, so no work
//! is lost with the session.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use arbor_agent_graph::{Store, ThreadRecord};
use arbor_protocol::{ThreadId, Timestamp};

use crate::error::OrchestratorError;
use crate::lease::Lease;
use crate::open::log_path_of;

/// Which sessions may go.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules {
    /// Idle at least this long (by the last write to its log).
    pub older_than: Option<Duration>,
    /// The newest N sessions stay whatever their age.
    pub keep_last: Option<usize>,
}

/// One session gc looked at.
#[derive(Debug, Clone)]
pub struct Found {
    pub id: ThreadId,
    pub created_at: Timestamp,
    pub last_active: Timestamp,
    pub agents: usize,
    pub files: Vec<PathBuf>,
    pub bytes: u64,
}

impl Found {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "created_at": self.created_at,
            "last_active": self.last_active,
            "agents": self.agents,
            "size_bytes": self.bytes,
        })
    }
}

/// What a gc did (or, dry, would do).
#[derive(Debug, Default)]
pub struct Outcome {
    pub deleted: Vec<Found>,
    /// Sessions the rules chose that a process drives: never touched. (id, pid)
    pub driven: Vec<(ThreadId, Option<u32>)>,
    /// What became of the deleted sessions' worktrees, one sentence each.
    pub worktrees: Vec<String>,
    pub freed: u64,
}

/// Applies `rules` to every session of the store; with `dry`, deletes nothing.
pub fn collect(
    home: &Path,
    store: &Store,
    rules: Rules,
    dry: bool,
) -> Result<Outcome, OrchestratorError> {
    let now = SystemTime::now();
    let roots = store.sessions()?;
    let mut chosen = Vec::new();
    for (rank, root) in roots.iter().enumerate() {
        if rules.keep_last.is_some_and(|keep| rank < keep) {
            continue;
        }
        let found = look(home, store, root)?;
        let idle = now
            .duration_since(SystemTime::UNIX_EPOCH + millis(found.last_active))
            .unwrap_or_default();
        if rules.older_than.is_some_and(|cut| idle < cut) {
            continue;
        }
        chosen.push(found);
    }
    let mut outcome = Outcome::default();
    let mut leases = Vec::new();
    for found in chosen {
        if dry {
            match Lease::holder(home, found.id) {
                Some(pid) => outcome.driven.push((found.id, Some(pid))),
                None => outcome.deleted.push(found),
            }
            continue;
        }
        match Lease::acquire(home, found.id) {
            Ok(lease) => {
                leases.push(lease);
                outcome.deleted.push(found);
            }
            Err(OrchestratorError::Held { pid, .. }) => {
                outcome.driven.push((found.id, pid.parse().ok()));
            }
            Err(err) => return Err(err),
        }
    }
    outcome.freed = outcome.deleted.iter().map(|found| found.bytes).sum();
    if dry || outcome.deleted.is_empty() {
        return Ok(outcome);
    }
    let mut dirs = Vec::new();
    for found in &outcome.deleted {
        for file in &found.files {
            remove(file)?;
            if let Some(dir) = file.parent() {
                dirs.push(dir.to_path_buf());
            }
        }
    }
    let ids: Vec<ThreadId> = outcome.deleted.iter().map(|found| found.id).collect();
    store.delete_sessions(&ids)?;
    outcome.worktrees = crate::worktrees::orphans::remove_sessions_worktrees(home, &ids);
    for lease in leases {
        let path = lease.path().to_path_buf();
        drop(lease);
        remove(&path)?;
    }
    // Date folders left empty go too (a folder still holding files stays).
    dirs.sort();
    dirs.dedup();
    let sessions = arbor_rollout::sessions_dir(home);
    for dir in dirs.iter().rev() {
        let mut at = dir.as_path();
        while at.starts_with(&sessions) && at != sessions && std::fs::remove_dir(at).is_ok() {
            at = match at.parent() {
                Some(parent) => parent,
                None => break,
            };
        }
    }
    Ok(outcome)
}

/// A session's files, size, agent count and last activity (its log's last write).
pub fn look(home: &Path, store: &Store, root: &ThreadRecord) -> Result<Found, OrchestratorError> {
    let threads = store.threads_in_session(root.id())?;
    let log = log_path_of(home, root);
    let journal = log.with_file_name(format!("journal-{}.jsonl", root.id()));
    let mut files: Vec<PathBuf> = threads
        .iter()
        .map(|thread| home.join(&thread.rollout_path))
        .collect();
    files.push(log.clone());
    files.push(journal);
    files.retain(|file| file.exists());
    files.sort();
    files.dedup();
    let bytes = files
        .iter()
        .filter_map(|file| std::fs::metadata(file).ok())
        .map(|meta| meta.len())
        .sum();
    let last_active = std::fs::metadata(&log)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|at| at.duration_since(SystemTime::UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_millis()).ok())
        .map_or(root.updated_at.max(root.created_at), Timestamp::from_millis);
    Ok(Found {
        id: root.id(),
        created_at: root.created_at,
        last_active,
        agents: threads.len(),
        files,
        bytes,
    })
}

fn millis(at: Timestamp) -> Duration {
    Duration::from_millis(u64::try_from(at.as_millis()).unwrap_or(0))
}

fn remove(path: &Path) -> Result<(), OrchestratorError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(OrchestratorError::Files(format!(
            "cannot delete {}: {err}",
            path.display()
        ))),
    }
}
