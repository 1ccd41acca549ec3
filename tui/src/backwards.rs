//! Reading a file of log lines (a rollout) backwards from a byte offset, a window of lines at
//! a time, so a long transcript opens at its end and older lines load only when scrolled to.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use arbor_protocol::RolloutLine;

/// Bytes read per step backwards.
const CHUNK: u64 = 64 * 1024;

/// Lines read backwards: in file order, each with its start offset.
#[derive(Debug, Default)]
pub struct Window {
    pub lines: Vec<(u64, RolloutLine)>,
    /// Where the first line read starts (0: the file's beginning was reached).
    pub start: u64,
    /// Lines that did not parse (an unknown type from a newer arbor, a damaged line).
    pub skipped: usize,
}

/// Reads up to `max` complete lines that end at or before `end`, the last ones first found.
pub fn read_before(path: &Path, end: u64, max: usize) -> std::io::Result<Window> {
    let file = File::open(path)?;
    let mut pos = end;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let from = pos.saturating_sub(CHUNK);
        let mut chunk = vec![0; usize::try_from(pos - from).unwrap_or(0)];
        file.read_exact_at(&mut chunk, from)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        pos = from;
        // One newline more than `max` marks where the first wanted line starts.
        let newlines = buf.iter().filter(|b| **b == b'\n').count();
        if pos == 0 || newlines > max {
            break;
        }
    }
    // Unless the file's start was reached, the first bytes are the end of an earlier line.
    let mut skip = 0;
    if pos > 0 {
        skip = buf
            .iter()
            .position(|b| *b == b'\n')
            .map_or(buf.len(), |at| at + 1);
    }
    let mut starts = Vec::new();
    let mut at = skip;
    for raw in buf[skip..].split_inclusive(|b| *b == b'\n') {
        if raw.ends_with(b"\n") {
            starts.push((pos + at as u64, &raw[..raw.len() - 1]));
        }
        at += raw.len();
    }
    let keep_from = starts.len().saturating_sub(max);
    let mut window = Window {
        start: starts.get(keep_from).map_or(end, |(start, _)| *start),
        ..Window::default()
    };
    if keep_from == 0 && pos == 0 {
        window.start = 0;
    }
    for (start, body) in starts.into_iter().skip(keep_from) {
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RolloutLine>(body) {
            Ok(line) => window.lines.push((start, line)),
            Err(_) => window.skipped += 1,
        }
    }
    Ok(window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::{RolloutItem, Timestamp, TurnStarted};
    use std::io::Write;

    fn write_lines(n: u64) -> (tempfile::NamedTempFile, u64) {
        let mut file = tempfile::NamedTempFile::new().expect("file");
        for turn in 1..=n {
            let line = RolloutLine {
                seq: Some(turn),
                thread: None,
                timestamp: Timestamp::from_millis(0),
                item: RolloutItem::TurnStarted(TurnStarted { turn }),
            };
            // Long lines, so windows cross chunk boundaries.
            let mut text = serde_json::to_string(&line).expect("json");
            text.push_str(&" ".repeat(300));
            writeln!(file, "{text}").expect("write");
        }
        let len = file.as_file().metadata().expect("meta").len();
        (file, len)
    }

    #[test]
    fn windows_walk_back_to_the_start_without_losing_a_line() {
        let (file, len) = write_lines(1000);
        let mut end = len;
        let mut seen = Vec::new();
        loop {
            let window = read_before(file.path(), end, 128).expect("read");
            assert!(window.lines.len() <= 128);
            let seqs: Vec<u64> = window.lines.iter().filter_map(|(_, l)| l.seq).collect();
            seen.splice(0..0, seqs);
            if window.start == 0 {
                break;
            }
            end = window.start;
        }
        assert_eq!(seen, (1..=1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_torn_last_line_is_not_read() {
        let (file, len) = write_lines(3);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(file.path())
            .expect("open");
        write!(f, "{{\"seq\":4,").expect("torn");
        let window = read_before(file.path(), len, 10).expect("read");
        assert_eq!(window.lines.len(), 3);
        assert_eq!(window.start, 0);
    }
}
