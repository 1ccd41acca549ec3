//! The driving process's handle on the session log and its writer thread.
//!
//! [`SessionLog::append`] queues items in memory and returns at once with their position in
//! this process's append order (an lsn). The writer thread takes the queue, numbers the lines
//! after whatever is in the file (lines other processes appended are read back and handed to
//! [`Outlets::external`]), writes them with one `write` under the file's lock, and syncs when
//! someone waits: at once for a waiter that blocks on it ([`Urgency::Now`]), within
//! [`SOON_WINDOW`] for one that only must not show anything early ([`Urgency::Soon`]: output),
//! and at least every [`MAX_UNSYNCED_AGE`] while lines are unsynced. One sync covers every line
//! written before it. Synced lines go to [`Outlets::synced`] in file order.
//!
//! A failed write or sync fails the log for good: every waiter and every later append gets
//! the error, and nothing after the last synced line is acknowledged.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbor_protocol::{RolloutItem, RolloutLine, ThreadId, Timestamp};
use tokio::sync::{mpsc, watch};

use super::LogError;
use super::file::{Locked, cut_torn, encode_line, open_rw, parse_lines, read_range};

/// How often the writer writes queued lines and looks for lines of other processes.
pub const POLL: Duration = Duration::from_millis(25);
/// The longest an output waiter ([`Urgency::Soon`]) waits for a sync to be started for it.
pub const SOON_WINDOW: Duration = Duration::from_millis(20);
/// The longest a written line stays unsynced when nobody waits for it.
pub const MAX_UNSYNCED_AGE: Duration = Duration::from_secs(1);
/// Unsynced bytes past which the writer syncs without waiting for a waiter.
const MAX_UNSYNCED_BYTES: usize = 8 << 20;

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
/// included, as written to the log (a rollout gets the same bytes).
#[derive(Debug, Clone)]
pub struct SyncedLine {
    pub line: RolloutLine,
    pub bytes: Vec<u8>,
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
        let writer = Writer {
            shared: Arc::clone(&shared),
            file: Arc::new(file),
            end: start.end,
            last_seq: start.last_seq,
            written: 0,
            unsynced: Vec::new(),
            unsynced_bytes: 0,
            unsynced_since: None,
            external: ext_tx,
            externals: 0,
            catch_ups: 0,
            synced: synced_tx,
            buf: Vec::new(),
            scratch: Vec::new(),
        };
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
        let mut state = self.shared.lock();
        if let Some(failed) = &state.failed {
            return Err(failed.clone());
        }
        if state.stop {
            return Err(LogError::closed(&self.shared.path));
        }
        for item in items {
            state.appended += 1;
            state.queue.push(Entry {
                thread,
                timestamp,
                item,
            });
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

/// The writer thread's own state.
struct Writer {
    shared: Arc<Shared>,
    file: Arc<File>,
    /// The end of the complete lines of the file as this writer knows it.
    end: u64,
    last_seq: u64,
    /// The lsn of the last append written to the file.
    written: u64,
    /// Lines written (or read from other processes) and not yet synced, in file order.
    unsynced: Vec<SyncedLine>,
    unsynced_bytes: usize,
    unsynced_since: Option<Instant>,
    external: mpsc::UnboundedSender<RolloutLine>,
    /// Lines of other processes handed out.
    externals: u64,
    /// Catch-up rounds done.
    catch_ups: u64,
    synced: crossbeam_channel::Sender<Synced>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

/// What one round of the writer does.
struct Round {
    entries: Vec<Entry>,
    sync: bool,
    stop: bool,
    /// The catch-up rounds this round answers.
    catch_ups: u64,
}

impl Writer {
    fn run(mut self) {
        let mut next_poll = Instant::now() + POLL;
        loop {
            let round = self.wait_for_work(&mut next_poll);
            let result = self
                .write(round.entries)
                .and_then(|()| if round.sync { self.sync() } else { Ok(()) });
            if let Err(err) = result {
                self.fail(err);
                return;
            }
            if round.catch_ups > self.catch_ups {
                self.catch_ups = round.catch_ups;
                self.shared
                    .caught_up
                    .send_replace((self.catch_ups, self.externals));
            }
            if round.stop {
                let state = self.shared.lock();
                if state.queue.is_empty() {
                    return;
                }
            }
        }
    }

    /// Sleeps until there is something to do, then takes the queue.
    fn wait_for_work(&mut self, next_poll: &mut Instant) -> Round {
        let mut state = self.shared.lock();
        loop {
            let now = Instant::now();
            let sync = self.sync_due(&state, now);
            let poll = now >= *next_poll || state.catch_ups > self.catch_ups;
            if state.stop || sync || poll {
                if poll {
                    *next_poll = now + POLL;
                }
                let stop = state.stop;
                return Round {
                    entries: std::mem::take(&mut state.queue),
                    sync: sync || stop,
                    stop,
                    catch_ups: state.catch_ups,
                };
            }
            let mut until = *next_poll;
            if let Some(since) = state.soon_since {
                until = until.min(since + SOON_WINDOW);
            }
            let timeout = until.saturating_duration_since(now);
            state = self
                .shared
                .wake
                .wait_timeout(state, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Whether a sync is owed now.
    fn sync_due(&self, state: &State, now: Instant) -> bool {
        let pending = state.appended > state.durable || !self.unsynced.is_empty();
        if !pending {
            return false;
        }
        state.want_now > state.durable
            || state
                .soon_since
                .is_some_and(|since| now >= since + SOON_WINDOW)
            || self
                .unsynced_since
                .is_some_and(|since| now >= since + MAX_UNSYNCED_AGE)
            || self.unsynced_bytes >= MAX_UNSYNCED_BYTES
    }

    /// Writes `entries` after whatever other processes appended meanwhile (read back first).
    fn write(&mut self, entries: Vec<Entry>) -> Result<(), LogError> {
        let path = self.shared.path.clone();
        let len = self
            .file
            .metadata()
            .map_err(|err| LogError::io(&path, "read", &err))?
            .len();
        if entries.is_empty() && len == self.end {
            return Ok(());
        }
        let file = Arc::clone(&self.file);
        let lock = Locked::take(&file, &path)?;
        self.read_external(&path)?;
        if entries.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        let mut lines = Vec::with_capacity(entries.len());
        for entry in entries {
            self.last_seq += 1;
            let start = self.buf.len();
            encode_line(
                &mut self.buf,
                &mut self.scratch,
                self.last_seq,
                entry.thread,
                entry.timestamp,
                &entry.item,
            )
            .map_err(|err| LogError::encode(&path, &err))?;
            let line = RolloutLine {
                seq: Some(self.last_seq),
                thread: Some(entry.thread),
                timestamp: entry.timestamp,
                item: entry.item,
            };
            lines.push((line, start..self.buf.len()));
        }
        if let Err(err) = (&*self.file).write_all(&self.buf) {
            // No partial line may stay in front of a later one.
            let _ = self.file.set_len(self.end);
            return Err(LogError::io(&path, "write", &err));
        }
        drop(lock);
        self.end += self.buf.len() as u64;
        self.written += lines.len() as u64;
        self.unsynced_bytes += self.buf.len();
        self.unsynced_since.get_or_insert_with(Instant::now);
        for (line, range) in lines {
            let bytes = self.buf[range].to_vec();
            self.unsynced.push(SyncedLine { line, bytes });
        }
        if self.buf.capacity() > (1 << 22) {
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// Reads lines other processes appended after `end` (the caller holds the lock): they are
    /// synced already; a torn tail a killed process left is cut off.
    fn read_external(&mut self, path: &Path) -> Result<(), LogError> {
        let tail = cut_torn(&self.file, path)?;
        if tail.end <= self.end {
            return Ok(());
        }
        let bytes = read_range(&self.file, path, self.end, tail.end)?;
        let (lines, end, notices) = parse_lines(path, &bytes, self.end);
        for notice in notices {
            tracing::warn!("{notice}");
        }
        for synced in lines {
            if let Some(seq) = synced.line.seq {
                self.last_seq = self.last_seq.max(seq);
            }
            let _ = self.external.send(synced.line.clone());
            self.externals += 1;
            self.unsynced.push(synced);
        }
        self.end = end;
        // The other process synced the file after writing its lines: that sync covers every
        // line this writer wrote before them too.
        self.publish();
        Ok(())
    }

    fn sync(&mut self) -> Result<(), LogError> {
        let pending = {
            let state = self.shared.lock();
            state.durable < self.written || !self.unsynced.is_empty()
        };
        if pending {
            let path = &self.shared.path;
            self.file
                .sync_data()
                .map_err(|err| LogError::io(path, "sync", &err))?;
            self.shared.lock().syncs += 1;
        }
        self.publish();
        Ok(())
    }

    /// Everything written so far is on disk: hands the lines to the projections, then
    /// publishes the durable lsn and clears the waits it satisfies.
    fn publish(&mut self) {
        if !self.unsynced.is_empty() {
            let lines = std::mem::take(&mut self.unsynced);
            let _ = self.synced.send(Synced {
                lines,
                end: self.end,
                lsn: self.written,
            });
        }
        self.unsynced_bytes = 0;
        self.unsynced_since = None;
        let mut state = self.shared.lock();
        state.durable = self.written;
        // Waiters for lines appended after this round wait a window of their own.
        state.soon_since = (state.want_soon > state.durable).then(Instant::now);
        let durable = state.durable;
        drop(state);
        self.shared.done.notify_all();
        self.shared.progress.send_replace((durable, false));
    }

    fn fail(&self, err: LogError) {
        let mut state = self.shared.lock();
        state.failed = Some(err);
        state.queue.clear();
        let durable = state.durable;
        drop(state);
        self.shared.done.notify_all();
        self.shared.progress.send_replace((durable, true));
    }
}
