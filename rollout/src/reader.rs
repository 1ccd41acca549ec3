//! Reading a rollout back, line by line: the header first, a torn tail tolerated, unknown
//! item types skipped with a notice, anything else that does not parse an error.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::iter::FusedIterator;
use std::path::{Path, PathBuf};

use arbor_protocol::{RolloutItem, RolloutLine, SessionMeta};

use crate::RolloutError;
use crate::line::{Fault, Parsed, is_blank, parse_line};

/// A whole rollout, read.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutRead {
    /// Every item read, with its 1-based line number; the header is the first.
    pub lines: Vec<(usize, RolloutLine)>,
    /// The `session_meta` header (also the first of `lines`).
    pub meta: SessionMeta,
    /// 1 when the last line was torn (cut short by a crash mid-write) and skipped, else 0.
    pub torn_tail: usize,
    /// Lines skipped because a newer version wrote a `type` this one does not know.
    pub unknown: Vec<(usize, String)>,
    /// One human-readable sentence per skipped line, naming the file and the line.
    pub notices: Vec<String>,
}

impl RolloutRead {
    /// The items in file order, header included.
    pub fn items(&self) -> impl Iterator<Item = &RolloutItem> {
        self.lines.iter().map(|(_, line)| &line.item)
    }
}

/// Reads the whole rollout at `path`. See [`RolloutReader`] for the rules.
pub fn read_rollout(path: &Path) -> Result<RolloutRead, RolloutError> {
    collect(RolloutReader::open(path)?)
}

/// Reads the header and then everything from byte `offset` on (the start of a line).
pub(crate) fn read_rollout_from(path: &Path, offset: u64) -> Result<RolloutRead, RolloutError> {
    let mut reader = RolloutReader::open(path)?;
    reader
        .lines
        .input
        .seek(SeekFrom::Start(offset))
        .map_err(|err| RolloutError::io(path, "seek", err))?;
    collect(reader)
}

fn collect(reader: RolloutReader) -> Result<RolloutRead, RolloutError> {
    let mut read = RolloutRead {
        lines: Vec::new(),
        meta: reader.meta().clone(),
        torn_tail: 0,
        unknown: Vec::new(),
        notices: Vec::new(),
    };
    for entry in reader {
        match entry? {
            Entry::Line(line_no, line) => read.lines.push((line_no, line)),
            Entry::Unknown {
                line,
                type_name,
                notice,
            } => {
                read.unknown.push((line, type_name));
                read.notices.push(notice);
            }
            Entry::TornTail { notice, .. } => {
                read.torn_tail += 1;
                read.notices.push(notice);
            }
        }
    }
    Ok(read)
}

/// One thing a [`RolloutReader`] yields.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "`Line` is the common case and is moved straight out; boxing it costs an allocation per line"
)]
pub enum Entry {
    /// An item of a known type, with its 1-based line number.
    Line(usize, RolloutLine),
    /// A line of a `type` this version does not know; skipped.
    Unknown {
        line: usize,
        type_name: String,
        notice: String,
    },
    /// The last line had no newline and did not parse: a write cut short by a crash. Such a
    /// line was never synced, so nothing acknowledged is lost by skipping it.
    TornTail {
        line: usize,
        bytes: usize,
        notice: String,
    },
}

/// Streams a rollout without holding it in memory.
///
/// Rules: the first non-blank line must be the `session_meta` header (checked by `open`);
/// blank lines are skipped; a line with an unknown `type` is yielded as [`Entry::Unknown`]; a
/// last line without a newline that is not JSON is yielded as [`Entry::TornTail`]; any other
/// line that does not parse is a [`RolloutError::BadLine`], after which the reader stops.
#[derive(Debug)]
pub struct RolloutReader {
    lines: Lines,
    meta: SessionMeta,
    header: Option<Entry>,
    done: bool,
}

impl RolloutReader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, RolloutError> {
        let file = File::open(path).map_err(|err| RolloutError::io(path, "open", err))?;
        let mut lines = Lines {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(64 * 1024, file),
            line_no: 0,
            buf: Vec::new(),
        };
        let missing = |reason: &str| RolloutError::MissingMeta {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        let first = lines.next_entry()?;
        let header = match first {
            None if lines.line_no == 0 => return Err(missing("the file is empty")),
            None => return Err(missing("the file holds only blank lines")),
            Some(Entry::TornTail { .. }) => {
                return Err(missing(
                    "its only line is torn (cut short while being written)",
                ));
            }
            Some(Entry::Unknown {
                line, type_name, ..
            }) => {
                return Err(RolloutError::NotMeta {
                    path: path.to_path_buf(),
                    line,
                    found: type_name,
                });
            }
            Some(Entry::Line(line_no, line)) => (line_no, line),
        };
        let meta = match &header.1.item {
            RolloutItem::SessionMeta(meta) => meta.clone(),
            other => {
                return Err(RolloutError::NotMeta {
                    path: path.to_path_buf(),
                    line: header.0,
                    found: other.type_name().to_string(),
                });
            }
        };
        Ok(Self {
            lines,
            meta: *meta,
            header: Some(Entry::Line(header.0, header.1)),
            done: false,
        })
    }

    /// The byte offset just past the header line.
    pub(crate) fn header_end(&mut self) -> Result<u64, RolloutError> {
        let path = self.lines.path.clone();
        self.lines
            .input
            .stream_position()
            .map_err(|err| RolloutError::io(&path, "seek", err))
    }

    /// The header, read by `open`.
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.lines.path
    }
}

impl Iterator for RolloutReader {
    type Item = Result<Entry, RolloutError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(header) = self.header.take() {
            return Some(Ok(header));
        }
        if self.done {
            return None;
        }
        match self.lines.next_entry() {
            Ok(Some(entry)) => Some(Ok(entry)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(err) => {
                self.done = true;
                Some(Err(err))
            }
        }
    }
}

impl FusedIterator for RolloutReader {}

/// The line splitter under a reader.
#[derive(Debug)]
struct Lines {
    path: PathBuf,
    input: BufReader<File>,
    line_no: usize,
    buf: Vec<u8>,
}

impl Lines {
    /// The next non-blank line, classified; `None` at the end of the file.
    fn next_entry(&mut self) -> Result<Option<Entry>, RolloutError> {
        loop {
            self.buf.clear();
            let read = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|err| RolloutError::io(&self.path, "read", err))?;
            if read == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let line = self.line_no;
            // Only the final segment of a file can lack its newline.
            let (body, complete) = match self.buf.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (self.buf.as_slice(), false),
            };
            if is_blank(body) {
                continue;
            }
            let path = self.path.display();
            return match parse_line(body) {
                Ok(Parsed::Known(item)) => Ok(Some(Entry::Line(line, item))),
                Ok(Parsed::Unknown(type_name)) => Ok(Some(Entry::Unknown {
                    notice: format!(
                        "rollout {path}: skipped line {line} of unknown type `{type_name}` \
                         (written by a newer arbor?)"
                    ),
                    line,
                    type_name,
                })),
                Err(Fault::NotJson(_)) if !complete => Ok(Some(Entry::TornTail {
                    notice: format!(
                        "rollout {path}: skipped a torn last line (line {line}, {} bytes)",
                        body.len()
                    ),
                    line,
                    bytes: body.len(),
                })),
                Err(fault) => Err(RolloutError::BadLine {
                    path: self.path.clone(),
                    line,
                    reason: fault.into_reason(),
                }),
            };
        }
    }
}
