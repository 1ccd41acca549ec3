//! The driving process's handle on the session log and its writer thread.
//!
//! [`SessionLog::append`] queues items in memory and returns at once with their position in
//! this process's append order (an lsn). The writer thread takes the queue (every [`POLL`], or
//! once [`WRITE_BATCH`] lines are queued), numbers the lines after whatever is in the file
//! (lines other processes appended are read back and handed to [`Outlets::external`]), writes
//! them with one `write` under the file's lock, and syncs when
//! someone waits: at once for a waiter that blocks on it ([`Urgency::Now`]), within
//! [`SOON_WINDOW`] for one that only must not show anything early ([`Urgency::Soon`]: output),
//! at least every [`MAX_UNSYNCED_AGE`] while lines are unsynced, and once [`MAX_UNSYNCED_BYTES`]
//! are written and unsynced (what is not synced is held in memory). One sync covers every line
//! written before it. Synced lines go to [`Outlets::synced`] in file order.
//!
//! A failed write or sync fails the log for good: every waiter and every later append gets
//! the error, and nothing after the last synced line is acknowledged.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbor_protocol::{RolloutItem, RolloutLine, ThreadId, Timestamp};
use tokio::sync::{mpsc, watch};

use super::LogError;
use thread::Writer;

mod thread;
use super::file::open_rw;

/// How often the writer writes queued lines and looks for lines of other processes.
pub const POLL: Duration = Duration::from_millis(25);
/// The longest an output waiter ([`Urgency::Soon`]) waits for a sync to be started for it.
pub const SOON_WINDOW: Duration = Duration::from_millis(20);
/// The longest a written line stays unsynced when nobody waits for it.
pub const MAX_UNSYNCED_AGE: Duration = Duration::from_secs(1);
/// Unsynced bytes past which the writer syncs without waiting for a waiter.
const MAX_UNSYNCED_BYTES: usize = 1 << 20;
/// Queued lines past which the writer writes them without waiting for its next round.
const WRITE_BATCH: usize = 1024;

/// How soon a waiter needs its sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// Something blocks on it: a command about to touch the workspace, a prompt, an exit.
    Now,
    /// Output that must not be shown before it is durable; nothing waits on it.
    Soon,
}

/// Where an opened log stands: the end of its complete lines and the number of the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Start {
    pub end: u64,
    pub last_seq: u64,
}

/// One line as synced: the parsed line (with `seq` and `thread`) and its bytes, newline
/// included, as written to the log (a rollout gets the same bytes). The bytes are a range of
/// the buffer the line was written with (or read from), which the lines of that batch share:
/// a batch is one buffer, not one copy per line.
#[derive(Debug, Clone)]
pub struct SyncedLine {
    pub line: RolloutLine,
    buf: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl SyncedLine {
    /// The line `range` of `buf` holds, parsed as `line`.
    pub(crate) fn new(line: RolloutLine, buf: &Arc<Vec<u8>>, range: Range<usize>) -> Self {
        Self {
            line,
            buf: Arc::clone(buf),
            range,
        }
    }

    /// The line's bytes, newline included.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// Lines that reached the disk, in file order.
#[derive(Debug)]
pub struct Synced {
    pub lines: Vec<SyncedLine>,
    /// The offset just after the last of them.
    pub end: u64,
    /// Every append of this process up to this lsn is among the lines synced so far.
    pub lsn: u64,
}

/// What the writer hands out besides acknowledgements.
#[derive(Debug)]
pub struct Outlets {
    /// Lines other processes appended (already synced by them), in file order.
    pub external: mpsc::UnboundedReceiver<RolloutLine>,
    /// Every line once synced, in file order (this process's and other processes').
    pub synced: crossbeam_channel::Receiver<Synced>,
}

struct Entry {
    thread: ThreadId,
    timestamp: Timestamp,
    item: RolloutItem,
}

#[derive(Default)]
struct State {
    queue: Vec<Entry>,
    /// The queue the writer last emptied, kept with its capacity for the next round, so
    /// appends do not grow a fresh vector every round.
    spare: Vec<Entry>,
    /// The lsn of the last append (lsns count from 1).
    appended: u64,
    durable: u64,
    /// The highest lsn a [`Urgency::Now`] waiter waits for.
    want_now: u64,
    /// The highest lsn a [`Urgency::Soon`] waiter waits for, and since when one waits.
    want_soon: u64,
    soon_since: Option<Instant>,
    failed: Option<LogError>,
    stop: bool,
    syncs: u64,
    /// Rounds asked for by [`SessionLog::catch_up`].
    catch_ups: u64,
}

struct Shared {
    path: PathBuf,
    state: Mutex<State>,
    /// The writer waits on it; waiters that need it sooner notify it.
    wake: Condvar,
    /// Blocking waiters wait on it.
    done: Condvar,
    /// `(durable lsn, failed)`, for async waiters.
    progress: watch::Sender<(u64, bool)>,
    /// `(catch-up rounds done, lines of other processes handed out so far)`.
    caught_up: watch::Sender<(u64, u64)>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The driving process's handle on a session log. Cheap to clone.
#[derive(Clone)]
pub struct SessionLog {
    shared: Arc<Shared>,
    writer: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

impl SessionLog {
    /// Starts the writer of the log at `path`, whose complete lines end as `start` says (the
    /// caller has cut a torn tail off and brought the projections up to it).
    pub fn start(path: &Path, start: Start) -> Result<(Self, Outlets), LogError> {
        Self::start_aged(path, start, MAX_UNSYNCED_AGE)
    }

    /// Like [`Self::start`], with unsynced lines synced at the latest after `max_age` (the
    /// tests take the age rule out of the way to see the size rule).
    pub(crate) fn start_aged(
        path: &Path,
        start: Start,
        max_age: Duration,
    ) -> Result<(Self, Outlets), LogError> {
        let file = open_rw(path, true)?;
        let (progress, _) = watch::channel((0, false));
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            done: Condvar::new(),
            progress,
            caught_up: watch::Sender::new((0, 0)),
        });
        let (ext_tx, external) = mpsc::unbounded_channel();
        let (synced_tx, synced) = crossbeam_channel::unbounded();
        let writer = Writer::new(
            Arc::clone(&shared),
            file,
            &start,
            max_age,
            ext_tx,
            synced_tx,
        );
        let handle = std::thread::Builder::new()
            .name("arbor-log-writer".into())
            .spawn(move || writer.run())
            .map_err(|err| LogError::io(path, "open", &err))?;
        let log = Self {
            shared,
            writer: Arc::new(Mutex::new(Some(handle))),
        };
        Ok((log, Outlets { external, synced }))
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Appends items of `thread`, in order, stamped now. Visible to the session at once;
    /// durable once a sync covers the returned lsn.
    pub fn append(
        &self,
        thread: ThreadId,
        items: impl IntoIterator<Item = RolloutItem>,
    ) -> Result<u64, LogError> {
        self.append_at(thread, Timestamp::now(), items)
    }

    /// Like [`Self::append`], stamped `timestamp` (a new agent's header carries the stamp its
    /// rollout's file name is made of).
    pub fn append_at(
        &self,
        thread: ThreadId,
        timestamp: Timestamp,
        items: impl IntoIterator<Item = RolloutItem>,
    ) -> Result<u64, LogError> {
        self.append_lines(timestamp, items.into_iter().map(|item| (thread, item)))
    }

    /// Appends lines of several threads, in order, stamped `timestamp`, in one go: no other
    /// append comes between them and the writer writes them together (a spawn's header and
    /// the parent's task for it are one write).
    pub fn append_lines(
        &self,
        timestamp: Timestamp,
        lines: impl IntoIterator<Item = (ThreadId, RolloutItem)>,
    ) -> Result<u64, LogError> {
        let mut state = self.shared.lock();
        if let Some(failed) = &state.failed {
            return Err(failed.clone());
        }
        if state.stop {
            return Err(LogError::closed(&self.shared.path));
        }
        let queued = state.queue.len();
        for (thread, item) in lines {
            state.appended += 1;
            state.queue.push(Entry {
                thread,
                timestamp,
                item,
            });
        }
        if queued < WRITE_BATCH && state.queue.len() >= WRITE_BATCH {
            self.shared.wake.notify_one();
        }
        Ok(state.appended)
    }

    /// The lsn of the last append.
    pub fn appended(&self) -> u64 {
        self.shared.lock().appended
    }

    /// Every append up to this lsn is on disk.
    pub fn durable_lsn(&self) -> u64 {
        self.shared.lock().durable
    }

    /// Why the log failed, once it has.
    pub fn failure(&self) -> Option<LogError> {
        self.shared.lock().failed.clone()
    }

    /// Resolves once the log has failed, with why.
    pub async fn failed(&self) -> LogError {
        let mut progress = self.shared.progress.subscribe();
        loop {
            if progress.borrow_and_update().1
                && let Some(failed) = self.failure()
            {
                return failed;
            }
            if progress.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Has the writer look for lines of other processes now; resolves once it has, with the
    /// number of such lines it has handed to [`Outlets::external`] since it started.
    pub async fn catch_up(&self) -> Result<u64, LogError> {
        let wanted = {
            let mut state = self.shared.lock();
            if let Some(failed) = &state.failed {
                return Err(failed.clone());
            }
            state.catch_ups += 1;
            self.shared.wake.notify_one();
            state.catch_ups
        };
        let mut rounds = self.shared.caught_up.subscribe();
        loop {
            let (done, lines) = *rounds.borrow_and_update();
            if done >= wanted {
                return Ok(lines);
            }
            if let Some(failed) = self.failure() {
                return Err(failed);
            }
            if rounds.changed().await.is_err() {
                return Err(LogError::closed(self.path()));
            }
        }
    }

    /// How many syncs the writer has made.
    pub fn syncs(&self) -> u64 {
        self.shared.lock().syncs
    }

    /// Registers a waiter for `lsn`; `Ok(true)` when it is durable already.
    fn want(&self, lsn: u64, urgency: Urgency) -> Result<bool, LogError> {
        let mut state = self.shared.lock();
        if let Some(failed) = &state.failed {
            return Err(failed.clone());
        }
        if state.durable >= lsn {
            return Ok(true);
        }
        match urgency {
            Urgency::Now => {
                if lsn > state.want_now {
                    state.want_now = lsn;
                    self.shared.wake.notify_one();
                }
            }
            Urgency::Soon => {
                state.want_soon = state.want_soon.max(lsn);
                if state.soon_since.is_none() {
                    state.soon_since = Some(Instant::now());
                    self.shared.wake.notify_one();
                }
            }
        }
        Ok(false)
    }

    /// Waits until every append up to `lsn` is on disk.
    pub async fn durable(&self, lsn: u64, urgency: Urgency) -> Result<(), LogError> {
        if self.want(lsn, urgency)? {
            return Ok(());
        }
        let mut progress = self.shared.progress.subscribe();
        loop {
            let (durable, failed) = *progress.borrow_and_update();
            if durable >= lsn {
                return Ok(());
            }
            if failed {
                return Err(self
                    .failure()
                    .unwrap_or_else(|| LogError::closed(self.path())));
            }
            if progress.changed().await.is_err() {
                return Err(LogError::closed(self.path()));
            }
        }
    }

    /// Blocks until every append up to `lsn` is on disk (for threads outside the runtime).
    pub fn wait_durable(&self, lsn: u64, urgency: Urgency) -> Result<(), LogError> {
        if self.want(lsn, urgency)? {
            return Ok(());
        }
        let mut state = self.shared.lock();
        loop {
            if state.durable >= lsn {
                return Ok(());
            }
            if let Some(failed) = &state.failed {
                return Err(failed.clone());
            }
            if state.stop && state.queue.is_empty() && self.writer_gone() {
                return Err(LogError::closed(&self.shared.path));
            }
            state = self
                .shared
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn writer_gone(&self) -> bool {
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_none_or(JoinHandle::is_finished)
    }

    /// Writes and syncs everything appended, stops the writer and waits for it. Later appends
    /// fail. Returns the failure, if the log failed.
    pub fn close(&self) -> Result<(), LogError> {
        {
            let mut state = self.shared.lock();
            state.stop = true;
            self.shared.wake.notify_one();
        }
        let handle = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            // A panic of the writer leaves `failed` unset; report it as a closed log.
            if handle.join().is_err() {
                return Err(LogError::closed(&self.shared.path));
            }
        }
        match self.failure() {
            Some(failed) => Err(failed),
            None => Ok(()),
        }
    }
}
