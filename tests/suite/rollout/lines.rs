//! Bad lines named by file and line, unknown types, the header rule, the streaming reader.

use std::fs;

use arbor_protocol::RolloutItem;
use arbor_rollout::{Entry, RolloutError, RolloutReader, read_rollout};

use super::{bad_line, file_lines, said, turn, write_lines, written};

#[test]
fn a_bad_line_in_the_middle_names_file_and_line() {
    let (_home, path) = written(&[turn(1), said("one"), said("two")]);
    let mut lines = file_lines(&path);
    lines.insert(2, "this is not json".into());
    write_lines(&path, &lines);
    let (at, line, message) = bad_line(read_rollout(&path).expect_err("bad line"));
    assert_eq!((at, line), (path.clone(), 3));
    assert!(
        message.starts_with(&format!(
            "rollout {}: line 3: not valid json",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn a_known_type_with_a_malformed_payload_is_an_error() {
    let (_home, path) = written(&[turn(1), said("one")]);
    let mut lines = file_lines(&path);
    lines[1] = lines[1].replace(r#""turn":1"#, r#""turn":"first""#);
    write_lines(&path, &lines);
    let (_, line, message) = bad_line(read_rollout(&path).expect_err("malformed"));
    assert_eq!(line, 2);
    assert!(
        message.starts_with(&format!(
            "rollout {}: line 2: malformed `turn_started` line: invalid type",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn a_complete_bad_last_line_is_an_error_not_a_torn_tail() {
    let (_home, path) = written(&[turn(1)]);
    let mut bytes = fs::read(&path).expect("read");
    bytes.extend_from_slice(b"garbage\n");
    fs::write(&path, &bytes).expect("write");
    let (_, line, _) = bad_line(read_rollout(&path).expect_err("bad last line"));
    assert_eq!(line, 3);

    // JSON without its newline is a finished write, so a bad payload there is an error too.
    bytes.truncate(bytes.len() - b"garbage\n".len());
    bytes.extend_from_slice(
        br#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"usage","payload":{}}"#,
    );
    fs::write(&path, &bytes).expect("write");
    let (_, line, message) = bad_line(read_rollout(&path).expect_err("bad last line"));
    assert_eq!(line, 3);
    assert!(message.contains("malformed `usage` line"), "{message}");
}

#[test]
fn unknown_item_types_are_skipped_with_a_notice() {
    let (_home, path) = written(&[turn(1), said("one")]);
    let mut lines = file_lines(&path);
    lines.insert(
        2,
        r#"{"timestamp":"2027-01-01T00:00:00.000Z","type":"hologram","payload":{"x":[1]}}"#.into(),
    );
    lines.insert(3, "   ".into());
    write_lines(&path, &lines);
    let read = read_rollout(&path).expect("read");
    assert_eq!(read.unknown, [(3, "hologram".to_string())]);
    assert_eq!(
        read.notices,
        [format!(
            "rollout {}: skipped line 3 of unknown type `hologram` (written by a newer arbor?)",
            path.display()
        )]
    );
    let numbered: Vec<(usize, RolloutItem)> = read
        .lines
        .iter()
        .skip(1)
        .map(|(n, l)| (*n, l.item.clone()))
        .collect();
    assert_eq!(numbered, [(2, turn(1)), (5, said("one"))]);
}

#[test]
fn the_first_line_must_be_the_header() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("x.jsonl");
    let p = path.display().to_string();
    let check = |content: &str, expected: &str| {
        fs::write(&path, content).expect("write");
        let err = read_rollout(&path).expect_err("no header");
        assert_eq!(err.to_string(), expected.replace("{p}", &p), "{content:?}");
    };
    let ts = r#""timestamp":"2026-01-01T00:00:00.000Z""#;
    check(
        "",
        "rollout {p} has no session_meta first line: the file is empty",
    );
    check(
        "\n \n",
        "rollout {p} has no session_meta first line: the file holds only blank lines",
    );
    check(
        &format!(r#"{{{ts},"type":"session_me"#),
        "rollout {p} has no session_meta first line: its only line is torn (cut short while being written)",
    );
    check(
        &format!("{{{ts},\"type\":\"turn_started\",\"payload\":{{\"turn\":1}}}}\n"),
        "rollout {p}: line 1 is a `turn_started` item, expected the session_meta header",
    );
    check(
        &format!("{{{ts},\"type\":\"hologram\",\"payload\":{{}}}}\n"),
        "rollout {p}: line 1 is a `hologram` item, expected the session_meta header",
    );
    assert!(matches!(
        read_rollout(&home.path().join("absent.jsonl")),
        Err(RolloutError::Io { op: "open", .. })
    ));
}

#[test]
fn the_streaming_reader_yields_every_entry_in_order() {
    let (_home, path) = written(&[turn(1)]);
    let mut bytes = fs::read(&path).expect("read");
    bytes.extend_from_slice(
        b"{\"timestamp\":\"2027-01-01T00:00:00.000Z\",\"type\":\"hologram\",\"payload\":1}\n{\"ti",
    );
    fs::write(&path, &bytes).expect("write");
    let reader = RolloutReader::open(&path).expect("open");
    assert_eq!(reader.path(), path);
    let kinds: Vec<String> = reader
        .map(|entry| match entry.expect("entry") {
            Entry::Line(n, line) => format!("{n}:{}", line.item.type_name()),
            Entry::Unknown {
                line, type_name, ..
            } => format!("{line}:unknown {type_name}"),
            Entry::TornTail { line, bytes, .. } => format!("{line}:torn {bytes}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "1:session_meta",
            "2:turn_started",
            "3:unknown hologram",
            "4:torn 4"
        ]
    );
}
