//! Retention (`docs/retention.md`): `arbor gc [--older-than DURATION] [--keep-last N]
//! [--dry-run] [--json]`, and `retention = "30d"` in config, which runs the same at the start
//! of every `exec`. Whole sessions go: their log, every agent's rollout, their lease and every
//! row of theirs in the store. A session some process drives is never touched: gc takes each
//! session's lease before it deletes anything of it.
//!
//! Files go first, the store's rows last (one transaction for all): a gc killed part-way
//! leaves sessions the store still lists, which the next gc finishes; never files nobody
//! lists.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use arbor_agent_graph::{Store, ThreadRecord};
use arbor_orchestrator::open::log_path_of;
use arbor_orchestrator::{Lease, LeaseError};
use arbor_protocol::{ThreadId, Timestamp};
use serde_json::{Value, json};

use crate::args::GcArgs;
use crate::error::CliError;
use crate::output::out;

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
    fn to_json(&self) -> Value {
        json!({
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
    pub freed: u64,
}

/// `arbor gc`.
pub fn gc(home: &Path, args: &GcArgs) -> Result<u8, CliError> {
    let older_than = args
        .older_than
        .as_deref()
        .map(|text| {
            parse_duration(text).map_err(|err| CliError::usage(format!("--older-than: {err}")))
        })
        .transpose()?;
    if older_than.is_none() && args.keep_last.is_none() {
        return Err(CliError::usage(
            "say which sessions to delete: --older-than DURATION (such as 30d), --keep-last N, or both",
        ));
    }
    let rules = Rules {
        older_than,
        keep_last: args.keep_last,
    };
    let store = crate::read::open_store(home)?;
    drop(store);
    let store = Store::open(home)?;
    let outcome = run(home, &store, rules, args.dry_run)?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let line = json!({
            "dry_run": args.dry_run,
            "deleted": outcome.deleted.iter().map(Found::to_json).collect::<Vec<_>>(),
            "driven": outcome.driven.iter().map(|(id, pid)| json!({"id": id, "pid": pid})).collect::<Vec<_>>(),
            "freed_bytes": outcome.freed,
        });
        return out(writeln!(stdout, "{line}")).map(|()| 0);
    }
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    for found in &outcome.deleted {
        out(writeln!(
            stdout,
            "{verb} {}  created {}  last active {}  {} agents  {}",
            found.id,
            found.created_at,
            found.last_active,
            found.agents,
            human_bytes(found.bytes)
        ))?;
    }
    for (id, pid) in &outcome.driven {
        let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
        eprintln!("kept {id}: a process drives it{by}");
    }
    let freed = if args.dry_run { "would free" } else { "freed" };
    eprintln!(
        "{freed} {} in {} sessions",
        human_bytes(outcome.freed),
        outcome.deleted.len()
    );
    Ok(0)
}

/// Applies `rules` to every session of the store; with `dry`, deletes nothing.
pub fn run(home: &Path, store: &Store, rules: Rules, dry: bool) -> Result<Outcome, CliError> {
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
            Err(LeaseError::Held { pid, .. }) => {
                outcome.driven.push((found.id, pid.parse().ok()));
            }
            Err(err) => return Err(CliError::failed(err.to_string())),
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
pub fn look(home: &Path, store: &Store, root: &ThreadRecord) -> Result<Found, CliError> {
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

fn remove(path: &Path) -> Result<(), CliError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(CliError::failed(format!(
            "cannot delete {}: {err}",
            path.display()
        ))),
    }
}

/// `30d`, `12h`, `90m`, `45s`, `2w`: a whole number and one unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` has no unit; use s, m, h, d or w (such as 30d)"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a whole number (such as 30d)"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}`; use s, m, h, d or w (such as 30d)"
            ));
        }
    };
    Ok(Duration::from_secs(number.saturating_mul(seconds)))
}

/// `1.5 MB`-style sizes.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KB", "MB", "GB", "TB"];
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_one_number_and_one_unit() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3_600)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(90 * 60)));
        assert_eq!(parse_duration("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("d").unwrap_err().contains("whole number"));
        assert!(
            parse_duration("3y")
                .unwrap_err()
                .contains("unknown unit `y`")
        );
        assert!(
            parse_duration("1.5d")
                .unwrap_err()
                .contains("unknown unit `.5d`")
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MB");
    }
}
