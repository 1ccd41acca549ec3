//! Reading an agent's last history window: the header, then everything from its last
//! `compacted` line on. A revival replays only this (a `compacted` line carries what the
//! replay needs of the lines before it), so its cost follows the window, not the file.
//!
//! The last `compacted` line is found by scanning the file backwards for its type tag: lines
//! are written by serde as `{"seq":…,"thread":…,"timestamp":…,"type":"compacted","payload":…}`,
//! and inside a JSON string the tag's quotes would be escaped, so the bytes appear only as a
//! key of some object. Every candidate line is parsed and kept only when it is a `compacted`
//! line itself (the tag could be the key of an object nested in another line's payload).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use arbor_protocol::RolloutItem;

use crate::RolloutError;
use crate::line::{Parsed, parse_line};
use crate::reader::{RolloutRead, RolloutReader, read_rollout, read_rollout_from};

/// The bytes a `compacted` line holds between its timestamp and its payload.
const TAG: &[u8] = br#""type":"compacted","payload""#;
/// How much is read per step of the backward scan.
const CHUNK: u64 = 256 * 1024;

/// Reads the rollout at `path` from its last window: the header, then the last `compacted`
/// line and everything after it (the whole file when it has none). Line numbers past the
/// header count from the window's first line, which is numbered 2.
pub fn read_last_window(path: &Path) -> Result<RolloutRead, RolloutError> {
    match last_window_offset(path)? {
        Some(offset) => read_rollout_from(path, offset),
        None => read_rollout(path),
    }
}

/// The byte offset of the last `compacted` line of the rollout at `path`, if it has one.
pub fn last_window_offset(path: &Path) -> Result<Option<u64>, RolloutError> {
    let header_end = RolloutReader::open(path)?.header_end()?;
    let file = File::open(path).map_err(|err| RolloutError::io(path, "open", err))?;
    let len = file
        .metadata()
        .map_err(|err| RolloutError::io(path, "stat", err))?
        .len();
    let floor = header_end;
    let mut end = len;
    // The start of the lowest line seen so far, read but not yet whole (it continues into the
    // next chunk down): kept so that its candidates are checked once it is complete.
    let mut carry: Vec<u8> = Vec::new();
    while end > floor {
        let start = end.saturating_sub(CHUNK).max(floor);
        let mut buf = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        file.read_exact_at(&mut buf, start)
            .map_err(|err| RolloutError::io(path, "read", err))?;
        buf.extend_from_slice(&carry);
        let mut search_end = buf.len();
        while let Some(at) = rfind(&buf[..search_end], TAG) {
            let line_start = match buf[..at].iter().rposition(|&b| b == b'\n') {
                Some(newline) => newline + 1,
                // The first line after the header starts the buffer.
                None if start == floor => 0,
                // The line starts in the next chunk down.
                None => break,
            };
            let line_end = buf[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |n| at + n);
            if is_compacted(&buf[line_start..line_end]) {
                return Ok(Some(start + line_start as u64));
            }
            search_end = line_start;
        }
        carry = match buf.iter().position(|&b| b == b'\n') {
            Some(newline) => buf[..=newline].to_vec(),
            None => buf,
        };
        end = start;
    }
    Ok(None)
}

fn is_compacted(line: &[u8]) -> bool {
    matches!(
        parse_line(line),
        Ok(Parsed::Known(line)) if matches!(line.item, RolloutItem::Compacted(_))
    )
}

/// The start of the last occurrence of `needle` in `haystack`.
fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    // SIMD search: a file without a `compacted` line is scanned whole, so this is most of what
    // a revival of an agent that never compacted pays for the scan.
    memchr::memmem::rfind(haystack, needle)
}

#[cfg(test)]
mod tests;
