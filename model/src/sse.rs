//! An incremental parser for server-sent events (the `text/event-stream` format of the HTML
//! standard), fed whatever byte chunks the connection delivers.
//!
//! Lines end with `\r\n`, `\n` or `\r`, and a terminator may be split across reads. Lines that
//! start with `:` are comments (keep-alives). `data:` lines of one event are joined with `\n`;
//! a blank line dispatches the event. At the end of the stream, [`SseParser::finish`] also
//! dispatches a last event that lacks its blank line: a server that ends the body cleanly has
//! said all it meant to, so its final event is kept rather than lost. (A connection that breaks
//! is a transport error; the caller does not call `finish` then.)

use crate::ModelError;

/// The longest line or event accepted, in bytes: a bound on what a server can make us buffer.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; `None` means the default type, `message`.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last `id:` seen, if any.
    pub id: Option<String>,
}

impl SseEvent {
    /// The event type: the `event:` field, or `message`.
    pub fn kind(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// The parser state between reads.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line that has not ended yet.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` that starts the next one belongs to it.
    skip_lf: bool,
    /// The byte-order mark at the very start has been dealt with.
    started: bool,
    /// The first bytes, held until the byte-order mark question is settled.
    head: Vec<u8>,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `chunk` and appends every event it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        if self.started {
            return self.scan(chunk, out);
        }
        // Until three bytes have arrived, they may be a byte-order mark, which is dropped.
        self.head.extend_from_slice(chunk);
        if self.head.len() < BOM.len() && BOM.starts_with(&self.head) {
            return Ok(());
        }
        self.start(out)
    }

    /// The end of the stream: a final line without a terminator is taken as a line, and an
    /// event still being built is dispatched.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        if !self.started {
            self.start(out)?;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out)?;
        }
        self.dispatch(out);
        self.skip_lf = false;
        Ok(())
    }

    fn start(&mut self, out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        self.started = true;
        let head = std::mem::take(&mut self.head);
        self.scan(head.strip_prefix(BOM).unwrap_or(&head), out)
    }

    fn scan(&mut self, mut rest: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (body, tail) = rest.split_at(end);
            if self.line.is_empty() {
                self.line_done(body, out)?;
            } else {
                self.push_partial(body)?;
                let mut line = std::mem::take(&mut self.line);
                self.line_done(&line, out)?;
                // Keep the buffer's capacity for the next split line.
                line.clear();
                self.line = line;
            }
            rest = match tail {
                [b'\r', b'\n', after @ ..] => after,
                [b'\r'] => {
                    self.skip_lf = true;
                    &[]
                }
                [_, after @ ..] => after,
                [] => &[],
            };
        }
        self.push_partial(rest)
    }

    fn push_partial(&mut self, bytes: &[u8]) -> Result<(), ModelError> {
        if self.line.len() + bytes.len() > MAX_EVENT_BYTES {
            return Err(ModelError::EventTooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    return Err(ModelError::EventTooLarge);
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            // `retry` (reconnection time) and unknown fields mean nothing to a one-shot request.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.id.clone(),
        });
    }
}

/// The start of a bad event's data, for the error message.
pub(crate) fn excerpt(data: &str) -> String {
    arbor_protocol::text::truncate_middle(data, 200)
}

#[cfg(test)]
mod tests;
