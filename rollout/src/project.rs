//! Rollouts written from the session log: each synced line that belongs in a rollout is
//! appended, byte for byte, to its agent's file (no sync of their own: the log is what is
//! synced). A rollout holds a prefix of its agent's log lines, so the projector skips lines a
//! file already has (found from the number of its last line the first time it touches it):
//! projecting the same lines twice, after a crash or at open, leaves every file as it was.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{IoSlice, Write};
use std::path::{Path, PathBuf};

use arbor_protocol::{RolloutItem, ThreadId, rollout_relative_path};

use crate::RolloutError;
use crate::log::SyncedLine;

/// Rollout files kept open between batches; others are reopened when written again.
const OPEN_FILES: usize = 128;

#[derive(Debug)]
struct Known {
    path: PathBuf,
    /// The number of the last line the file holds; `None` until read.
    written: Option<u64>,
}

/// Appends synced log lines to the agents' rollouts.
#[derive(Debug)]
pub struct RolloutProjector {
    home: PathBuf,
    threads: HashMap<ThreadId, Known>,
    open: HashMap<ThreadId, File>,
    order: VecDeque<ThreadId>,
    /// Lines written, for benchmarks and tests.
    lines: u64,
}

impl RolloutProjector {
    pub fn new(home: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
            threads: HashMap::new(),
            open: HashMap::new(),
            order: VecDeque::new(),
            lines: 0,
        }
    }

    /// Tells the projector where the rollout of `thread` is (relative to the home, or
    /// absolute), for agents created before this process started.
    pub fn register(&mut self, thread: ThreadId, path: &Path) {
        let path = self.home.join(path);
        self.threads.entry(thread).or_insert(Known {
            path,
            written: None,
        });
    }

    /// Where the rollout of `thread` is, if the projector knows it.
    pub fn path_of(&self, thread: ThreadId) -> Option<&Path> {
        self.threads.get(&thread).map(|known| known.path.as_path())
    }

    /// Lines appended to rollouts so far.
    pub fn lines_written(&self) -> u64 {
        self.lines
    }

    /// Appends every line of `lines` that belongs in a rollout and is not there yet, one write
    /// per rollout (of the lines' bytes where they are, not copied).
    pub fn project(&mut self, lines: &[SyncedLine]) -> Result<(), RolloutError> {
        let mut batches: Vec<(ThreadId, Vec<IoSlice<'_>>, u64)> = Vec::new();
        let mut slot: HashMap<ThreadId, usize> = HashMap::new();
        for synced in lines {
            let line = &synced.line;
            let (Some(seq), Some(thread)) = (line.seq, line.thread) else {
                continue;
            };
            if !line.item.in_rollout() {
                continue;
            }
            if let RolloutItem::SessionMeta(meta) = &line.item {
                let relative = rollout_relative_path(line.timestamp, meta.thread_id);
                self.register(thread, Path::new(&relative));
            }
            let written = self.written(thread)?;
            if seq <= written {
                continue;
            }
            let at = *slot.entry(thread).or_insert_with(|| {
                batches.push((thread, Vec::new(), written));
                batches.len() - 1
            });
            let batch = &mut batches[at];
            batch.1.push(IoSlice::new(synced.bytes()));
            batch.2 = seq;
        }
        for (thread, mut slices, last) in batches {
            self.append(thread, &mut slices)?;
            if let Some(known) = self.threads.get_mut(&thread) {
                known.written = Some(last);
            }
        }
        Ok(())
    }

    /// The number of the last line the rollout of `thread` holds, reading its end the first
    /// time (a file made now holds none).
    fn written(&mut self, thread: ThreadId) -> Result<u64, RolloutError> {
        let known = self.threads.get(&thread).ok_or_else(|| RolloutError::Io {
            path: self.home.clone(),
            op: "project",
            source: std::io::Error::other(format!("no rollout known for thread {thread}")),
        })?;
        if let Some(written) = known.written {
            return Ok(written);
        }
        let path = known.path.clone();
        let file = self.file(thread, &path)?;
        // A line a crash cut short was never acknowledged: cut it off before appending.
        let tail = crate::log::file_tail(file, &path)?;
        if tail.torn() > 0 {
            file.set_len(tail.end)
                .map_err(|err| RolloutError::io(&path, "repair", err))?;
        }
        if let Some(known) = self.threads.get_mut(&thread) {
            known.written = Some(tail.last_seq);
        }
        Ok(tail.last_seq)
    }

    /// The open rollout of `thread`, opened the first time, and kept among the
    /// [`OPEN_FILES`] most recently written.
    fn file(&mut self, thread: ThreadId, path: &Path) -> Result<&mut File, RolloutError> {
        if let Some(at) = self.order.iter().position(|id| *id == thread) {
            self.order.remove(at);
        } else if self.open.len() >= OPEN_FILES
            && let Some(oldest) = self.order.pop_front()
        {
            self.open.remove(&oldest);
        }
        let file = match self.open.entry(thread) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(slot) => slot.insert(open_rollout(path)?),
        };
        self.order.push_back(thread);
        Ok(file)
    }

    fn append(&mut self, thread: ThreadId, lines: &mut [IoSlice<'_>]) -> Result<(), RolloutError> {
        let path = match self.threads.get(&thread) {
            Some(known) => known.path.clone(),
            None => return Ok(()),
        };
        let count = lines.len() as u64;
        let file = self.file(thread, &path)?;
        if let Err(err) = write_all_slices(file, lines) {
            // The file may hold part of the batch: read its end again before the next one.
            self.open.remove(&thread);
            if let Some(known) = self.threads.get_mut(&thread) {
                known.written = None;
            }
            return Err(RolloutError::io(&path, "append", err));
        }
        self.lines += count;
        Ok(())
    }
}

/// Writes every slice, in order, in as few `write` calls as the file takes.
fn write_all_slices(file: &mut File, mut slices: &mut [IoSlice<'_>]) -> std::io::Result<()> {
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut slices, written),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Opens a rollout to read its end and append, making it (and its folder) when missing.
fn open_rollout(path: &Path) -> Result<File, RolloutError> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
    };
    match open() {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|err| RolloutError::io(dir, "create folder", err))?;
            }
            open()
        }
        opened => opened,
    }
    .map_err(|err| RolloutError::io(path, "open", err))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use arbor_protocol::{
        AgentPath, ROLLOUT_FORMAT_VERSION, SessionMeta, StatusChanged, TurnStarted,
    };

    use super::*;
    use crate::log::{SessionLog, Start, Urgency};
    use crate::read_rollout;

    fn meta(id: ThreadId) -> SessionMeta {
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

    /// The lines `items` of `id` make once appended to a session log in `dir` and synced.
    fn logged(
        dir: &std::path::Path,
        id: ThreadId,
        items: impl IntoIterator<Item = RolloutItem>,
    ) -> Vec<SyncedLine> {
        let log_path = dir.join("log.jsonl");
        let (log, outlets) = SessionLog::start(&log_path, Start::default()).expect("start");
        let lsn = log.append(id, items).expect("append");
        log.wait_durable(lsn, Urgency::Now).expect("durable");
        log.close().expect("close");
        outlets.synced.iter().flat_map(|s| s.lines).collect()
    }

    #[test]
    fn synced_lines_reach_their_rollouts_once_and_session_facts_stay_in_the_log() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = ThreadId::new();
        let items = vec![
            RolloutItem::SessionMeta(Box::new(meta(id))),
            RolloutItem::TurnStarted(TurnStarted { turn: 1 }),
            RolloutItem::Status(StatusChanged {
                status: arbor_protocol::AgentStatus::Running,
            }),
        ];
        let synced = logged(home.path(), id, items);
        let mut projector = RolloutProjector::new(home.path());
        projector.project(&synced).expect("project");
        let path = projector.path_of(id).expect("known").to_path_buf();
        let read = read_rollout(&path).expect("rollout");
        let types: Vec<_> = read.items().map(RolloutItem::type_name).collect();
        assert_eq!(types, ["session_meta", "turn_started"]);
        // Again, from a projector that has to read the file's end first: nothing is added.
        let mut again = RolloutProjector::new(home.path());
        again.project(&synced).expect("project");
        assert_eq!(read_rollout(&path).expect("rollout").lines.len(), 2);
        // A torn last line is cut off before the next append.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"{\"seq\":9"))
            .expect("tear");
        let mut third = RolloutProjector::new(home.path());
        third.register(id, &path);
        let mut late = synced[1].clone();
        late.line.seq = Some(10);
        third.project(&[late]).expect("project");
        let read = read_rollout(&path).expect("rollout");
        assert_eq!(read.torn_tail, 0);
        assert_eq!(read.lines.len(), 3);
    }

    #[test]
    fn a_batch_of_more_lines_than_one_write_takes_reaches_the_rollout_whole() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = ThreadId::new();
        // More lines than a vectored write passes at once (1 024 on Linux).
        let items = std::iter::once(RolloutItem::SessionMeta(Box::new(meta(id))))
            .chain((1..=3000).map(|turn| RolloutItem::TurnStarted(TurnStarted { turn })));
        let synced = logged(home.path(), id, items);
        let mut projector = RolloutProjector::new(home.path());
        projector.project(&synced).expect("project");
        let path = projector.path_of(id).expect("known").to_path_buf();
        let expected: Vec<u8> = synced.iter().flat_map(|l| l.bytes().to_vec()).collect();
        assert_eq!(std::fs::read(&path).expect("rollout"), expected);
        assert_eq!(projector.lines_written(), 3001);
    }
}
