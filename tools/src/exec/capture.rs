//! Bounded capture of one output stream: keeps the head and the tail, counts what is between.

use std::collections::VecDeque;

use arbor_protocol::text::truncate_middle;

/// Collects a stream in at most `max_bytes` of memory: the first half is kept as it arrives, the
/// last half in a ring. The text it yields has the same shape as
/// [`arbor_protocol::text::truncate_middle`]: head, `…[N bytes truncated]…`, tail.
#[derive(Debug)]
pub(crate) struct HeadTail {
    max_bytes: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl HeadTail {
    pub(crate) fn new(max_bytes: usize) -> Self {
        let head_cap = max_bytes / 2;
        Self {
            max_bytes,
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: max_bytes - head_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let take = self
            .head_cap
            .saturating_sub(self.head.len())
            .min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        let rest = &bytes[take..];
        if rest.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + rest.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(rest);
        }
    }

    /// Bytes held in memory (never more than `max_bytes`).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// The captured text, invalid UTF-8 replaced, cut in the middle when it was too long.
    pub(crate) fn finish(mut self) -> String {
        let held = (self.head.len() + self.tail.len()) as u64;
        let tail = self.tail.make_contiguous();
        if held == self.total {
            let mut all = self.head;
            all.extend_from_slice(tail);
            let text = String::from_utf8_lossy(&all);
            return truncate_middle(&text, self.max_bytes);
        }
        let head = trim_partial_char_end(&self.head);
        let tail = skip_partial_char_start(tail);
        let cut = self.total - (head.len() + tail.len()) as u64;
        format!(
            "{}…[{cut} bytes truncated]…{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

/// Drops an incomplete UTF-8 sequence at the end of `bytes`.
fn trim_partial_char_end(bytes: &[u8]) -> &[u8] {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let at = len - back;
        let byte = bytes[at];
        if is_continuation(byte) {
            continue;
        }
        let width = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if at + width > len {
            &bytes[..at]
        } else {
            bytes
        };
    }
    bytes
}

/// Drops continuation bytes at the start of `bytes` (the rest of a character cut off before).
fn skip_partial_char_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|byte| is_continuation(**byte))
        .count();
    &bytes[skip..]
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(max: usize, chunks: &[&[u8]]) -> (String, usize) {
        let mut buf = HeadTail::new(max);
        for chunk in chunks {
            buf.push(chunk);
        }
        let held = buf.held();
        (buf.finish(), held)
    }

    #[test]
    fn short_output_is_kept_whole() {
        assert_eq!(capture(10, &[b"abc", b"def"]).0, "abcdef");
        assert_eq!(capture(6, &[b"abc", b"def"]).0, "abcdef");
    }

    #[test]
    fn long_output_keeps_head_and_tail_within_bounds() {
        let chunk = [b'x'; 1000];
        let mut buf = HeadTail::new(20);
        buf.push(b"0123456789");
        for _ in 0..10_000 {
            buf.push(&chunk);
            assert!(buf.held() <= 20);
        }
        buf.push(b"abcdefghij");
        assert_eq!(
            buf.finish(),
            "0123456789…[10000000 bytes truncated]…abcdefghij"
        );
    }

    #[test]
    fn small_chunks_roll_through_the_tail() {
        let chunks: Vec<&[u8]> = vec![b"ab", b"cd", b"ef", b"gh", b"ij"];
        let (text, held) = capture(4, &chunks);
        assert_eq!(text, "ab…[6 bytes truncated]…ij");
        assert_eq!(held, 4);
    }

    #[test]
    fn cut_characters_are_dropped_not_garbled() {
        // "é" is two bytes: a cut inside one must not produce a replacement character.
        let text = "é".repeat(20);
        let (out, _) = capture(7, &[text.as_bytes()]);
        assert_eq!(out, "é…[34 bytes truncated]…éé");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(capture(10, &[b"a\xffb"]).0, "a\u{FFFD}b");
    }
}
