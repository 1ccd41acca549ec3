//! The session log as a file: encoding a line, reading lines from an offset, finding the end
//! of the last complete line (and a torn tail after it), and appending from another process
//! under the log's lock.
//!
//! A line is `{"seq":N,"thread":"<id>","timestamp":"...","type":"...","payload":{...}}` and
//! ends with a newline. Lines are numbered from 1 in file order. Every append, from the driving
//! process or another one, holds the exclusive lock of the file (`flock`) while it writes, so
//! lines never interleave and numbers never repeat.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use arbor_protocol::{RolloutItem, RolloutLine, ThreadId, Timestamp};
use serde::Deserialize;

use super::{LogError, SyncedLine};
use crate::line::{Fault, Parsed, is_blank, parse_line};

/// Read size of the backward scan for the last line.
const TAIL_CHUNK: u64 = 16 * 1024;

/// Appends one encoded line (with its newline) for `item` to `buf`.
pub(crate) fn encode_line(
    buf: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    seq: u64,
    thread: ThreadId,
    timestamp: Timestamp,
    item: &RolloutItem,
) -> Result<(), serde_json::Error> {
    scratch.clear();
    serde_json::to_writer(&mut *scratch, item)?;
    buf.extend_from_slice(b"{\"seq\":");
    buf.extend_from_slice(seq.to_string().as_bytes());
    buf.extend_from_slice(b",\"thread\":\"");
    buf.extend_from_slice(thread.to_string().as_bytes());
    buf.extend_from_slice(b"\",\"timestamp\":");
    serde_json::to_writer(&mut *buf, &timestamp)?;
    // The item is an object `{"type":...,"payload":...}`: its fields follow the stamp.
    buf.push(b',');
    buf.extend_from_slice(scratch.get(1..).unwrap_or_default());
    buf.push(b'\n');
    Ok(())
}

/// Where the complete lines of a log end, and what follows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail {
    /// The offset just after the last complete line (0 for an empty file).
    pub end: u64,
    /// The file's length: more than `end` when a torn line follows.
    pub len: u64,
    /// The number of the last complete line that parses (0 when there is none).
    pub last_seq: u64,
}

impl Tail {
    /// Bytes after the last complete line: a line cut short by a crash.
    pub fn torn(&self) -> u64 {
        self.len - self.end
    }
}

#[derive(Deserialize)]
struct SeqOnly {
    seq: Option<u64>,
}

/// Finds the end of the last complete line of `file` and the number of the last line that
/// parses, reading backwards from its end.
pub(crate) fn tail(file: &File, path: &Path) -> Result<Tail, LogError> {
    let len = file
        .metadata()
        .map_err(|err| LogError::io(path, "read", &err))?
        .len();
    let end = match last_newline(file, path, len)? {
        Some(at) => at + 1,
        None => 0,
    };
    let mut before = end;
    while before > 0 {
        let start = last_newline(file, path, before - 1)?.map_or(0, |at| at + 1);
        let line = read_range(file, path, start, before)?;
        if let Some(seq) = seq_of(&line) {
            return Ok(Tail {
                end,
                len,
                last_seq: seq,
            });
        }
        before = start;
    }
    Ok(Tail {
        end,
        len,
        last_seq: 0,
    })
}

/// The offset of the last newline before `before`, if any.
fn last_newline(file: &File, path: &Path, before: u64) -> Result<Option<u64>, LogError> {
    let mut pos = before;
    let mut chunk = Vec::new();
    while pos > 0 {
        let start = pos.saturating_sub(TAIL_CHUNK);
        chunk.resize((pos - start) as usize, 0);
        file.read_exact_at(&mut chunk, start)
            .map_err(|err| LogError::io(path, "read", &err))?;
        if let Some(at) = chunk.iter().rposition(|b| *b == b'\n') {
            return Ok(Some(start + at as u64));
        }
        pos = start;
    }
    Ok(None)
}

fn seq_of(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if is_blank(line) {
        return None;
    }
    serde_json::from_slice::<SeqOnly>(line).ok()?.seq
}

/// What a read of the log from an offset found.
#[derive(Debug, Default)]
pub struct LogRead {
    /// Every complete line that parses, in order, with the offset just after it.
    pub lines: Vec<(RolloutLine, u64)>,
    /// The offset just after the last complete line read.
    pub end: u64,
    /// Bytes after the last complete line (a torn line), left alone.
    pub torn: u64,
    /// Lines skipped, each named by file, offset and reason.
    pub notices: Vec<String>,
}

/// Reads every complete line of the log at `path` from byte `from` (the start of a line).
/// A line that is not a log line is skipped with a notice; a torn tail is reported, not read.
/// A missing file reads as empty.
pub fn read_log(path: &Path, from: u64) -> Result<LogRead, LogError> {
    let mut read = LogRead {
        end: from,
        ..LogRead::default()
    };
    for_each_line(path, from, |line, end| {
        read.lines.push((line, end));
        Ok(())
    })
    .map(|(end, torn, notices)| {
        read.end = end;
        read.torn = torn;
        read.notices = notices;
        read
    })
}

/// Calls `each` with every complete line from byte `from` and the offset just after it, in
/// order, without holding the whole log in memory. Returns the end of the last complete line,
/// the torn bytes after it, and a notice for each line skipped.
pub fn for_each_line(
    path: &Path,
    from: u64,
    mut each: impl FnMut(RolloutLine, u64) -> Result<(), LogError>,
) -> Result<(u64, u64, Vec<String>), LogError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok((from, 0, Vec::new()));
        }
        Err(err) => return Err(LogError::io(path, "open", &err)),
    };
    file.seek(SeekFrom::Start(from))
        .map_err(|err| LogError::io(path, "read", &err))?;
    let mut input = BufReader::with_capacity(256 * 1024, file);
    let mut buf = Vec::new();
    let mut offset = from;
    let mut notices = Vec::new();
    loop {
        buf.clear();
        let got = input
            .read_until(b'\n', &mut buf)
            .map_err(|err| LogError::io(path, "read", &err))?;
        if got == 0 {
            return Ok((offset, 0, notices));
        }
        let Some(body) = buf.strip_suffix(b"\n") else {
            return Ok((offset, got as u64, notices));
        };
        let start = offset;
        offset += got as u64;
        if is_blank(body) {
            continue;
        }
        match parse_line(body) {
            Ok(Parsed::Known(line)) if line.seq.is_some() && line.thread.is_some() => {
                each(line, offset)?;
            }
            Ok(Parsed::Known(_)) => notices.push(format!(
                "session log {}: skipped the line at byte {start}: it has no seq or thread",
                path.display()
            )),
            Ok(Parsed::Unknown(type_name)) => notices.push(format!(
                "session log {}: skipped the line at byte {start} of unknown type `{type_name}` \
                 (written by a newer arbor?)",
                path.display()
            )),
            Err(fault) => notices.push(format!(
                "session log {}: skipped the line at byte {start}: {}",
                path.display(),
                match fault {
                    Fault::NotJson(reason) | Fault::Malformed(reason) => reason,
                }
            )),
        }
    }
}

/// Opens the log for appending (creating it when `create`), reading included.
pub(crate) fn open_rw(path: &Path, create: bool) -> Result<File, LogError> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(create)
        .open(path)
        .map_err(|err| LogError::io(path, "open", &err))
}

/// The exclusive lock of a log file, held while appending; released when dropped.
pub(crate) struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    pub(crate) fn take(file: &'a File, path: &Path) -> Result<Self, LogError> {
        file.lock()
            .map_err(|err| LogError::io(path, "lock", &err))?;
        Ok(Self(file))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Cuts a torn tail off (bytes after the last complete line: never synced, so never
/// acknowledged). The caller holds the lock. Returns the tail as it is now.
pub(crate) fn cut_torn(file: &File, path: &Path) -> Result<Tail, LogError> {
    let mut tail = tail(file, path)?;
    if tail.torn() > 0 {
        file.set_len(tail.end)
            .map_err(|err| LogError::io(path, "repair", &err))?;
        tail.len = tail.end;
    }
    Ok(tail)
}

/// Appends `items` of `thread` to the log at `path` from a process that does not drive the
/// session: under the lock, after cutting a torn tail off, numbered after the last line, then
/// synced. Returns the number of the last line written. The log must exist.
pub fn append_external(
    path: &Path,
    thread: ThreadId,
    items: &[RolloutItem],
) -> Result<u64, LogError> {
    let file = open_rw(path, false)?;
    let _lock = Locked::take(&file, path)?;
    let tail = cut_torn(&file, path)?;
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    let now = Timestamp::now();
    let mut seq = tail.last_seq;
    for item in items {
        seq += 1;
        encode_line(&mut buf, &mut scratch, seq, thread, now, item)
            .map_err(|err| LogError::encode(path, &err))?;
    }
    if let Err(err) = (&file).write_all(&buf) {
        let _ = file.set_len(tail.end);
        return Err(LogError::io(path, "write", &err));
    }
    file.sync_data()
        .map_err(|err| LogError::io(path, "sync", &err))?;
    Ok(seq)
}

/// Reads the bytes of `file` from `from` to `to`.
pub(crate) fn read_range(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
) -> Result<Vec<u8>, LogError> {
    let mut bytes = vec![0; usize::try_from(to.saturating_sub(from)).unwrap_or(0)];
    file.read_exact_at(&mut bytes, from)
        .map_err(|err| LogError::io(path, "read", &err))?;
    Ok(bytes)
}

/// Splits `bytes` (read from offset `from`) into complete log lines with their bytes; stops at
/// the first incomplete line. Lines that do not parse are skipped with a notice. Returns the
/// lines, the offset after the last complete one, and the notices.
pub(crate) fn parse_lines(
    path: &Path,
    bytes: Vec<u8>,
    from: u64,
) -> (Vec<SyncedLine>, u64, Vec<String>) {
    let bytes = Arc::new(bytes);
    let mut out = Vec::new();
    let mut notices = Vec::new();
    let mut offset = from;
    let mut at = 0;
    for raw in bytes.split_inclusive(|b| *b == b'\n') {
        let Some(body) = raw.strip_suffix(b"\n") else {
            break;
        };
        let start = offset;
        let range = at..at + raw.len();
        at = range.end;
        offset += raw.len() as u64;
        if is_blank(body) {
            continue;
        }
        match parse_line(body) {
            Ok(Parsed::Known(line)) if line.seq.is_some() && line.thread.is_some() => {
                out.push(SyncedLine::new(line, &bytes, range));
            }
            _ => notices.push(format!(
                "session log {}: skipped the line at byte {start}, which is not a log line",
                path.display()
            )),
        }
    }
    (out, offset, notices)
}
