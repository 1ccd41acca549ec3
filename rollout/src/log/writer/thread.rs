//! The writer thread: takes the queue, writes it after what other processes appended, syncs
//! when a waiter is owed one, and hands synced lines on.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use arbor_protocol::RolloutLine;
use tokio::sync::mpsc;

use super::super::LogError;
use super::super::file::{Locked, cut_torn, encode_line, parse_lines, read_range};
use super::{
    Entry, MAX_UNSYNCED_BYTES, POLL, SOON_WINDOW, Shared, Start, State, Synced, SyncedLine,
    WRITE_BATCH,
};

/// The most entries a kept queue may hold room for (a burst's queue is let go).
const MAX_SPARE: usize = 1 << 16;

/// The writer thread's own state.
pub(super) struct Writer {
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
    /// The longest a written line stays unsynced when nobody waits for it.
    max_age: Duration,
    external: mpsc::UnboundedSender<RolloutLine>,
    /// Lines of other processes handed out.
    externals: u64,
    /// Catch-up rounds done.
    catch_ups: u64,
    synced: crossbeam_channel::Sender<Synced>,
    /// The size of the last batch written, for the buffer of the next.
    last_batch_bytes: usize,
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
    pub(super) fn new(
        shared: Arc<Shared>,
        file: File,
        start: &Start,
        max_age: Duration,
        external: mpsc::UnboundedSender<RolloutLine>,
        synced: crossbeam_channel::Sender<Synced>,
    ) -> Self {
        Self {
            shared,
            file: Arc::new(file),
            end: start.end,
            last_seq: start.last_seq,
            written: 0,
            unsynced: Vec::new(),
            unsynced_bytes: 0,
            unsynced_since: None,
            max_age,
            external,
            externals: 0,
            catch_ups: 0,
            synced,
            last_batch_bytes: 0,
            scratch: Vec::new(),
        }
    }

    pub(super) fn run(mut self) {
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
            if state.stop || sync || poll || state.queue.len() >= WRITE_BATCH {
                if poll {
                    *next_poll = now + POLL;
                }
                let stop = state.stop;
                let spare = std::mem::take(&mut state.spare);
                return Round {
                    entries: std::mem::replace(&mut state.queue, spare),
                    sync: sync || stop,
                    stop,
                    catch_ups: state.catch_ups,
                };
            }
            let mut until = *next_poll;
            match state.soon_since {
                Some(since) if since + SOON_WINDOW > now => until = until.min(since + SOON_WINDOW),
                // A window that ran out without a sync due had nothing left to sync.
                Some(_) => state.soon_since = None,
                None => {}
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
                .is_some_and(|since| now >= since + self.max_age)
            || self.unsynced_bytes >= MAX_UNSYNCED_BYTES
    }

    /// Writes `entries` after whatever other processes appended meanwhile (read back first).
    fn write(&mut self, mut entries: Vec<Entry>) -> Result<(), LogError> {
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
        // The batch's buffer goes on with its lines, so each batch has its own: begun the size
        // of the last one, and cut to its own size once encoded (a small batch after a burst
        // holds no more than it needs).
        let mut buf = Vec::with_capacity(self.last_batch_bytes);
        let mut lines = Vec::with_capacity(entries.len());
        for entry in entries.drain(..) {
            self.last_seq += 1;
            let start = buf.len();
            encode_line(
                &mut buf,
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
            lines.push((line, start..buf.len()));
        }
        buf.shrink_to_fit();
        if let Err(err) = (&*self.file).write_all(&buf) {
            // No partial line may stay in front of a later one.
            let _ = self.file.set_len(self.end);
            return Err(LogError::io(&path, "write", &err));
        }
        drop(lock);
        self.end += buf.len() as u64;
        self.written += lines.len() as u64;
        self.unsynced_bytes += buf.len();
        self.unsynced_since.get_or_insert_with(Instant::now);
        self.last_batch_bytes = buf.len();
        let buf = Arc::new(buf);
        self.unsynced.reserve(lines.len());
        for (line, range) in lines {
            self.unsynced.push(SyncedLine::new(line, &buf, range));
        }
        if entries.capacity() <= MAX_SPARE {
            self.shared.lock().spare = entries;
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
        let (lines, end, notices) = parse_lines(path, bytes, self.end);
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
