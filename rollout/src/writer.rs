//! The append-only rollout writer: one line per item, each handed to the OS as it is appended,
//! synced to disk at explicit barriers.
//!
//! Durability: `append` returns once its line is in the OS (it survives a crash of this
//! process); `sync` returns once every appended line is on disk (it survives power loss).
//! `create` syncs the header line and the folders above it, so a created thread stays created.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::{fmt, iter};

use arbor_protocol::{RolloutItem, RolloutLine, SessionMeta, Timestamp};

use crate::line::{Fault, parse_line};
use crate::{RolloutError, RolloutReader, rollout_path};

/// Counters of what one writer did, for benchmarks and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Lines appended by this writer (the header included for a created rollout).
    pub lines_written: u64,
    /// Bytes appended by this writer, newlines included.
    pub bytes_written: u64,
    /// `fsync`/`fdatasync` calls made on the file.
    pub syncs: u64,
}

/// Appends items to one rollout file.
///
/// The writer holds an exclusive `flock` on the file for its lifetime, so a rollout has at most
/// one writer at a time across processes; dropping the writer releases it. Dropping does not
/// sync: call [`RolloutWriter::sync`] first where the lines must survive power loss.
#[derive(Debug)]
pub struct RolloutWriter {
    path: PathBuf,
    /// Shared with [`Barrier`]s, which sync it while appends go on.
    file: Arc<File>,
    /// The file's length as this writer knows it (it is the only writer).
    len: u64,
    /// How much of the file is known to be on disk.
    synced_len: u64,
    /// Reused encoding buffer.
    buf: Vec<u8>,
    stats: WriterStats,
    poisoned: bool,
}

/// A sync of a rollout that runs without holding its writer, so that appends can go on while
/// the disk works: taken with [`RolloutWriter::barrier`], reported back with
/// [`RolloutWriter::barrier_done`].
#[derive(Debug)]
pub struct Barrier {
    file: Arc<File>,
    path: PathBuf,
    /// The file length the barrier covers: every line appended before it was taken.
    upto: u64,
}

impl Barrier {
    /// Syncs the file: every line appended before the barrier was taken reaches the disk.
    pub fn sync(&self) -> Result<(), RolloutError> {
        self.file
            .sync_data()
            .map_err(|err| RolloutError::io(&self.path, "sync", err))
    }
}

/// A rollout reopened for appending.
#[derive(Debug)]
pub struct Reopened {
    pub writer: RolloutWriter,
    /// The file's `session_meta` header.
    pub meta: SessionMeta,
    /// What had to be repaired at the end of the file before appending, if anything.
    pub repair: Option<TailRepair>,
}

/// A repair `open_append` made to the last line. `Display` gives the notice to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailRepair {
    /// The last line had no newline and was not JSON: a write cut short by a crash, never
    /// synced, so never acknowledged. It was cut off.
    TruncatedTornLine {
        path: PathBuf,
        offset: u64,
        bytes: u64,
    },
    /// The last line was complete JSON but lacked its newline; the newline was added.
    AddedNewline { path: PathBuf },
}

impl fmt::Display for TailRepair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedTornLine {
                path,
                offset,
                bytes,
            } => write!(
                f,
                "rollout {}: cut off a torn last line ({bytes} bytes at byte {offset}) \
                 before appending",
                path.display()
            ),
            Self::AddedNewline { path } => write!(
                f,
                "rollout {}: added the missing newline after the last line",
                path.display()
            ),
        }
    }
}

/// Largest encoding buffer kept between appends; a bigger one (after a huge item) is freed.
const KEEP_BUFFER_BYTES: usize = 1 << 20;
/// Read size of the backward scan for the last line.
const TAIL_CHUNK_BYTES: usize = 8 * 1024;

impl RolloutWriter {
    /// Creates the rollout of `meta.thread_id` under `home`, stamped now. See [`Self::create_at`].
    pub fn create(home: &Path, meta: &SessionMeta) -> Result<Self, RolloutError> {
        Self::create_at(home, meta, Timestamp::now())
    }

    /// Creates the rollout at [`rollout_path`]`(home, timestamp, thread id)` with `meta` as its
    /// first line (stamped `timestamp`), then syncs the file and every folder whose entries
    /// changed. Never overwrites: an existing file is [`RolloutError::AlreadyExists`].
    pub fn create_at(
        home: &Path,
        meta: &SessionMeta,
        timestamp: Timestamp,
    ) -> Result<Self, RolloutError> {
        let path = rollout_path(home, timestamp, meta.thread_id);
        let parent = path.parent().unwrap_or(home).to_path_buf();
        let created = create_dirs(&parent)?;
        let file = match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                return Err(RolloutError::AlreadyExists { path });
            }
            Err(err) => return Err(RolloutError::io(path, "create", err)),
        };
        lock_exclusive(&file, &path)?;
        let mut writer = Self::new(path, file, 0);
        let header = RolloutLine {
            timestamp,
            item: RolloutItem::SessionMeta(meta.clone()),
        };
        let durable = writer
            .write_lines(iter::once(header))
            .and_then(|()| writer.sync_everything(&parent, &created));
        match durable {
            Ok(()) => Ok(writer),
            Err(err) => {
                // Nothing was acknowledged: leave no half-made thread behind.
                let _ = fs::remove_file(&writer.path);
                Err(err)
            }
        }
    }

    /// Reopens an existing rollout for appending (revival). The header must be readable. If the
    /// file ends in a torn line, it is cut off; if its last line is JSON without a newline, the
    /// newline is added. Either repair is synced and reported in [`Reopened::repair`].
    pub fn open_append(path: &Path) -> Result<Reopened, RolloutError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|err| RolloutError::io(path, "open", err))?;
        lock_exclusive(&file, path)?;
        let meta = RolloutReader::open(path)?.meta().clone();
        let len = file
            .metadata()
            .map_err(|err| RolloutError::io(path, "stat", err))?
            .len();
        let tail = last_line_start(&file, len, path)?;
        let mut writer = Self::new(path.to_path_buf(), file, len);
        let repair = if tail < len {
            let mut fragment = vec![0; usize::try_from(len - tail).unwrap_or(usize::MAX)];
            writer
                .file
                .read_exact_at(&mut fragment, tail)
                .map_err(|err| RolloutError::io(path, "read", err))?;
            Some(writer.repair_tail(&fragment, tail)?)
        } else {
            None
        };
        Ok(Reopened {
            writer,
            meta,
            repair,
        })
    }

    fn new(path: PathBuf, file: File, len: u64) -> Self {
        Self {
            path,
            file: Arc::new(file),
            len,
            synced_len: len,
            buf: Vec::new(),
            stats: WriterStats::default(),
            poisoned: false,
        }
    }

    /// Cuts off a torn `fragment` starting at `offset`, or ends a complete one with a newline.
    fn repair_tail(&mut self, fragment: &[u8], offset: u64) -> Result<TailRepair, RolloutError> {
        let repair = match parse_line(fragment) {
            Err(Fault::NotJson(_)) => {
                self.file
                    .set_len(offset)
                    .map_err(|err| RolloutError::io(&self.path, "truncate torn line", err))?;
                self.len = offset;
                TailRepair::TruncatedTornLine {
                    path: self.path.clone(),
                    offset,
                    bytes: fragment.len() as u64,
                }
            }
            Ok(_) | Err(Fault::Malformed(_)) => {
                self.buf.clear();
                self.buf.push(b'\n');
                self.write_buf(0)?;
                TailRepair::AddedNewline {
                    path: self.path.clone(),
                }
            }
        };
        // The cut or the newline must reach the disk before anything is appended after it.
        self.file
            .sync_data()
            .map_err(|err| RolloutError::io(&self.path, "sync", err))?;
        self.stats.syncs += 1;
        self.synced_len = self.len;
        Ok(repair)
    }

    /// Appends one item stamped now: one line, one `write` to the OS.
    pub fn append(&mut self, item: &RolloutItem) -> Result<(), RolloutError> {
        self.append_batch(std::slice::from_ref(item))
    }

    /// Appends several items, each stamped now, in a single `write`.
    pub fn append_batch(&mut self, items: &[RolloutItem]) -> Result<(), RolloutError> {
        if items.is_empty() {
            return Ok(());
        }
        let timestamp = Timestamp::now();
        self.write_lines(items.iter().map(|item| RolloutLine {
            timestamp,
            item: item.clone(),
        }))
    }

    /// The durability barrier: returns once every appended line is on disk. Cheap when
    /// nothing was appended since the last sync.
    pub fn sync(&mut self) -> Result<(), RolloutError> {
        if self.poisoned {
            return Err(RolloutError::Poisoned {
                path: self.path.clone(),
            });
        }
        match self.barrier()? {
            None => Ok(()),
            Some(barrier) => {
                let synced = barrier.sync();
                self.barrier_done(&barrier, &synced);
                synced
            }
        }
    }

    /// Takes a barrier over every line appended so far, to sync without holding the writer;
    /// `None` when they are all on disk already.
    pub fn barrier(&mut self) -> Result<Option<Barrier>, RolloutError> {
        if self.poisoned {
            return Err(RolloutError::Poisoned {
                path: self.path.clone(),
            });
        }
        if self.len <= self.synced_len {
            return Ok(None);
        }
        Ok(Some(Barrier {
            file: Arc::clone(&self.file),
            path: self.path.clone(),
            upto: self.len,
        }))
    }

    /// Records how a barrier's sync went: on success, what it covered is known to be on disk.
    pub fn barrier_done(&mut self, barrier: &Barrier, synced: &Result<(), RolloutError>) {
        if synced.is_ok() {
            self.stats.syncs += 1;
            self.synced_len = self.synced_len.max(barrier.upto);
        }
    }

    /// The file this writer appends to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's length: the offset just after the last line appended.
    pub fn end(&self) -> u64 {
        self.len
    }

    /// How much of the file is known to be on disk: every line ending at or before this
    /// offset survives a power cut.
    pub fn synced_to(&self) -> u64 {
        self.synced_len
    }

    /// What this writer has done so far.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// Encodes `lines` into the buffer and writes them with one call.
    fn write_lines(
        &mut self,
        lines: impl Iterator<Item = RolloutLine>,
    ) -> Result<(), RolloutError> {
        self.buf.clear();
        let mut count = 0;
        for line in lines {
            serde_json::to_writer(&mut self.buf, &line).map_err(|source| {
                RolloutError::Serialize {
                    path: self.path.clone(),
                    item: line.item.type_name(),
                    source,
                }
            })?;
            self.buf.push(b'\n');
            count += 1;
        }
        self.write_buf(count)
    }

    /// Writes the buffer at the end of the file. A failed write is undone by cutting the file
    /// back to its known length, so no partial line is ever followed by a later one; if even
    /// that fails, the writer refuses further work.
    fn write_buf(&mut self, lines: u64) -> Result<(), RolloutError> {
        if self.poisoned {
            return Err(RolloutError::Poisoned {
                path: self.path.clone(),
            });
        }
        if let Err(err) = (&*self.file).write_all(&self.buf) {
            if self.file.set_len(self.len).is_err() {
                self.poisoned = true;
            }
            return Err(RolloutError::io(&self.path, "append", err));
        }
        let bytes = self.buf.len() as u64;
        self.len += bytes;
        self.stats.lines_written += lines;
        self.stats.bytes_written += bytes;
        if self.buf.capacity() > KEEP_BUFFER_BYTES {
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// After `create`: syncs the file, its folder, and the parent of every folder created.
    fn sync_everything(&mut self, parent: &Path, created: &[PathBuf]) -> Result<(), RolloutError> {
        self.file
            .sync_all()
            .map_err(|err| RolloutError::io(&self.path, "sync", err))?;
        self.stats.syncs += 1;
        self.synced_len = self.len;
        let mut dirs: Vec<&Path> = vec![parent];
        dirs.extend(created.iter().filter_map(|dir| dir.parent()));
        dirs.dedup();
        for dir in dirs {
            File::open(dir)
                .and_then(|handle| handle.sync_all())
                .map_err(|err| RolloutError::io(dir, "sync folder", err))?;
        }
        Ok(())
    }
}

/// Creates `dir` and its missing ancestors; returns the folders that did not exist before,
/// deepest first.
fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>, RolloutError> {
    let mut missing = Vec::new();
    let mut probe = Some(dir);
    while let Some(current) = probe {
        match fs::metadata(current) {
            Ok(_) => break,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing.push(current.to_path_buf());
                probe = current.parent();
            }
            Err(err) => return Err(RolloutError::io(current, "stat folder", err)),
        }
    }
    fs::create_dir_all(dir).map_err(|err| RolloutError::io(dir, "create folder", err))?;
    Ok(missing)
}

/// How long a writer waits for a lock that a just-forked child may still hold: between
/// `fork` and `exec` a child shares its parent's open files (and their `flock`), so a writer
/// closed at that moment frees its lock only when the child execs.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Takes the writer lock, waiting at most [`LOCK_GRACE`] for a holder to let go.
fn lock_exclusive(file: &File, path: &Path) -> Result<(), RolloutError> {
    let deadline = std::time::Instant::now() + LOCK_GRACE;
    loop {
        // SAFETY: `flock` only reads the descriptor number, which `file` keeps open throughout.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            io::ErrorKind::WouldBlock => {
                return Err(RolloutError::Locked {
                    path: path.to_path_buf(),
                });
            }
            _ => return Err(RolloutError::io(path, "lock", err)),
        }
    }
}

/// The offset just after the last newline of the first `len` bytes (0 when there is none).
fn last_line_start(file: &File, len: u64, path: &Path) -> Result<u64, RolloutError> {
    let mut chunk = vec![0; TAIL_CHUNK_BYTES];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(TAIL_CHUNK_BYTES as u64);
        let window = &mut chunk[..(end - start) as usize];
        file.read_exact_at(window, start)
            .map_err(|err| RolloutError::io(path, "read", err))?;
        if let Some(pos) = window.iter().rposition(|b| *b == b'\n') {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests;
