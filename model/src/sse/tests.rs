//! SSE framing: a recorded stream split every possible way gives the same events.

use super::*;

fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, &mut out).expect("feed");
    }
    parser.finish(&mut out).expect("finish");
    out
}

fn parse(text: &str) -> Vec<SseEvent> {
    parse_chunks(&[text.as_bytes()])
}

fn ev(event: Option<&str>, data: &str) -> SseEvent {
    SseEvent {
        event: event.map(str::to_string),
        data: data.to_string(),
        id: None,
    }
}

/// Every line ending, comments, multi-line data, names, ids and a final event without its
/// blank line: what a real server (and a sloppy one) may send.
const RECORDED: &str = ": keep-alive\r\n\
event: response.created\r\n\
data: {\"type\":\"response.created\"}\r\n\
\r\n\
data: first line\n\
data: second line\n\
\n\
:comment without space\r\
event: delta\r\
data:no-space\r\
id: 7\r\
\r\
data\n\
\n\
event: ignored-without-data\n\
\n\
retry: 100\n\
unknown: field\n\
data: {\"text\":\"h\u{e9}llo \u{1f600}\"}\n\
\n\
data: last, no blank line";

fn recorded_events() -> Vec<SseEvent> {
    vec![
        ev(Some("response.created"), "{\"type\":\"response.created\"}"),
        ev(None, "first line\nsecond line"),
        SseEvent {
            id: Some("7".to_string()),
            ..ev(Some("delta"), "no-space")
        },
        SseEvent {
            id: Some("7".to_string()),
            ..ev(None, "")
        },
        SseEvent {
            id: Some("7".to_string()),
            ..ev(None, "{\"text\":\"h\u{e9}llo \u{1f600}\"}")
        },
        SseEvent {
            id: Some("7".to_string()),
            ..ev(None, "last, no blank line")
        },
    ]
}

#[test]
fn a_recorded_stream_in_one_read() {
    assert_eq!(parse(RECORDED), recorded_events());
}

#[test]
fn every_split_into_two_or_three_reads_gives_the_same_events() {
    let bytes = RECORDED.as_bytes();
    let expected = recorded_events();
    for i in 0..=bytes.len() {
        let (a, b) = bytes.split_at(i);
        assert_eq!(parse_chunks(&[a, b]), expected, "split at {i}");
        for j in i..=bytes.len() {
            let (b, c) = (&bytes[i..j], &bytes[j..]);
            assert_eq!(parse_chunks(&[a, b, c]), expected, "split at {i} and {j}");
        }
    }
}

#[test]
fn byte_by_byte_and_pseudo_random_reads_give_the_same_events() {
    let bytes = RECORDED.as_bytes();
    let single: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(parse_chunks(&single), recorded_events());
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..500 {
        let mut chunks = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let size = usize::try_from(seed % 9).expect("small") + 1;
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            chunks.push(chunk);
            rest = tail;
        }
        assert_eq!(parse_chunks(&chunks), recorded_events());
    }
}

#[test]
fn events_are_dispatched_as_soon_as_their_blank_line_arrives() {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    parser.feed(b"data: a\n\ndata: b", &mut out).expect("feed");
    assert_eq!(out, [ev(None, "a")]);
    parser.feed(b"\n", &mut out).expect("feed");
    assert_eq!(out.len(), 1, "no blank line yet");
    parser.feed(b"\n", &mut out).expect("feed");
    assert_eq!(out, [ev(None, "a"), ev(None, "b")]);
}

#[test]
fn a_cr_at_the_end_of_a_read_and_a_lf_at_the_start_of_the_next_are_one_terminator() {
    // Were they two, the empty line between them would dispatch `a` early and split `a\nb`.
    assert_eq!(
        parse_chunks(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]),
        [ev(None, "a\nb")]
    );
}

#[test]
fn the_end_of_the_stream_keeps_a_final_event_and_drops_a_bare_name() {
    assert_eq!(parse("data: x\n"), [ev(None, "x")]);
    assert_eq!(parse("data: x"), [ev(None, "x")]);
    assert_eq!(parse("event: only-a-name\n"), []);
    assert_eq!(parse(""), []);
}

#[test]
fn a_byte_order_mark_is_dropped_even_when_split() {
    let with_bom = b"\xEF\xBB\xBFdata: x\n\n";
    assert_eq!(parse_chunks(&[with_bom]), [ev(None, "x")]);
    assert_eq!(
        parse_chunks(&[&with_bom[..1], &with_bom[1..2], &with_bom[2..]]),
        [ev(None, "x")]
    );
    // Fewer bytes than a mark, and nothing else.
    assert_eq!(parse_chunks(&[b"da"]), []);
    assert_eq!(parse_chunks(&[b"d", b"ata: y"]), [ev(None, "y")]);
}

#[test]
fn only_one_space_after_the_colon_is_removed() {
    assert_eq!(parse("data:  two\n\n"), [ev(None, " two")]);
    assert_eq!(parse("event:name\ndata:x\n\n"), [ev(Some("name"), "x")]);
}

#[test]
fn oversized_lines_are_refused() {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let big = vec![b'a'; MAX_EVENT_BYTES / 2 + 1];
    parser.feed(b"data: ", &mut out).expect("feed");
    parser.feed(&big, &mut out).expect("first half fits");
    assert_eq!(parser.feed(&big, &mut out), Err(ModelError::EventTooLarge));
}
