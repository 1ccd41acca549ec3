//! Human and model-visible text: long text keeps its head and tail with a marker between;
//! counts agree with their noun; a tool call in a few words; JSON as lines of fields. And text
//! a model or a workspace wrote, made visible for a terminal: control characters and bidi
//! controls shown as escapes ([`visible`], [`visible_lines`]), so no text can move the cursor,
//! erase, recolour or reorder what the user reads.

use std::borrow::Cow;
use std::fmt::Write as _;

/// How the summary that starts a compacted history window begins (a user message).
pub const COMPACTION_SUMMARY_HEADER: &str =
    "[arbor: your history was compacted; this is your summary of the work so far]\n\n";

/// Whether a message's text is the summary that starts a compacted history window.
pub fn is_compaction_summary(content: &str) -> bool {
    content.starts_with(COMPACTION_SUMMARY_HEADER)
}

/// `1 agent`, `2 agents`, `0 agents`: a count with the word that agrees with it.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A tool call in a few words, for people watching a run: `exec_command: cargo test`,
/// `apply_patch: a.rs, b.rs`, `spawn_agent: worker_a`, `close_agent: /root/x`. One line, at
/// most about 200 bytes of detail.
pub fn call_brief(name: &str, arguments: &serde_json::Value) -> String {
    let text = |key: &str| arguments[key].as_str().map(|s| s.replace('\n', " "));
    let detail = match name {
        "exec_command" => text("cmd"),
        "apply_patch" => arguments["patch"].as_str().map(|patch| {
            let files: Vec<&str> = patch
                .lines()
                .filter_map(|line| {
                    ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                        .iter()
                        .find_map(|head| line.strip_prefix(head))
                })
                .collect();
            files.join(", ")
        }),
        "spawn_agent" => text("task_name"),
        "wait_agent" => text("mode"),
        _ => text("target").or_else(|| text("path_prefix")),
    };
    match detail.filter(|d| !d.trim().is_empty()) {
        Some(detail) => format!("{name}: {}", truncate_middle(detail.trim(), 200)),
        None => name.to_string(),
    }
}

/// A JSON value as a person reads it, one line each: `key: value` per field of an object
/// (strings as they are, multi-line ones indented under `key:`, lists of plain values joined
/// with `, `, lists of objects one `- a: 1 · b: 2` line per item, objects nested and
/// indented); anything else as its JSON.
pub fn json_lines(value: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let Value::Object(map) = value else {
        return vec![inline(value)];
    };
    let mut out = Vec::new();
    for (key, value) in map {
        match value {
            Value::String(text) if text.contains('\n') => {
                out.push(format!("{key}:"));
                out.extend(text.lines().map(|line| format!("  {line}")));
            }
            Value::Array(items) if items.iter().any(|item| item.is_object()) => {
                out.push(format!("{key}:"));
                out.extend(items.iter().map(|item| format!("  - {}", inline(item))));
            }
            Value::Object(fields) if !fields.is_empty() => {
                out.push(format!("{key}:"));
                out.extend(
                    json_lines(value)
                        .into_iter()
                        .map(|line| format!("  {line}")),
                );
            }
            other => out.push(format!("{key}: {}", inline(other))),
        }
    }
    out
}

/// A JSON value on one line, as a person reads it: a string as it is, a list joined with
/// `, `, an object's fields `a: 1 · b: 2`.
pub fn inline(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(text) => text.replace('\n', " "),
        Value::Array(items) if items.is_empty() => "none".to_string(),
        Value::Array(items) => items.iter().map(inline).collect::<Vec<_>>().join(", "),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| format!("{key}: {}", inline(value)))
            .collect::<Vec<_>>()
            .join(" · "),
        other => other.to_string(),
    }
}

/// Cuts `text` to at most about `max_bytes`, keeping the beginning and the end and putting
/// `…[N bytes truncated]…` in the middle. Never splits a UTF-8 character.
pub fn truncate_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let head_len = floor_char_boundary(text, max_bytes / 2);
    let tail_start = ceil_char_boundary(text, text.len() - (max_bytes - max_bytes / 2));
    let cut = tail_start - head_len;
    format!(
        "{}…[{cut} bytes truncated]…{}",
        &text[..head_len],
        &text[tail_start..]
    )
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// How `c` is shown on a terminal when it must not act there: C0 controls (`\r`, `\n`, `\t`,
/// others as `\x1b`), DEL (`\x7f`), C1 controls and the bidi and line-separating controls
/// (`\u{9b}`, `\u{202e}`). `None`: `c` is shown as it is.
fn escape_of(c: char) -> Option<Escaped> {
    match c {
        '\r' => Some(Escaped::Short('r')),
        '\n' => Some(Escaped::Short('n')),
        '\t' => Some(Escaped::Short('t')),
        '\0'..='\x1f' | '\x7f' => Some(Escaped::Hex(c as u32)),
        '\u{80}'..='\u{9f}'
        // Bidi marks, embeddings, overrides and isolates; line and paragraph separators.
        | '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => Some(Escaped::Unicode(c as u32)),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
enum Escaped {
    Short(char),
    Hex(u32),
    Unicode(u32),
}

fn push_escaped(out: &mut String, escaped: Escaped) {
    let _ = match escaped {
        Escaped::Short(c) => write!(out, "\\{c}"),
        Escaped::Hex(n) => write!(out, "\\x{n:02x}"),
        Escaped::Unicode(n) => write!(out, "\\u{{{n:x}}}"),
    };
}

/// `text` on one line for a terminal: every control character escaped, line breaks and tabs
/// included (`a\nb` shows as `a\nb`). Borrowed when nothing needs escaping.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, None)
}

/// `text` for a terminal over as many lines as it has: line breaks and tabs kept, every other
/// control escaped as in [`visible`], and each line after the first starting with `indent`, so a
/// multi-line field stays visibly inside its label. Borrowed when nothing changes.
pub fn visible_lines<'a>(text: &'a str, indent: &str) -> Cow<'a, str> {
    escape(text, Some(indent))
}

fn escape<'a>(text: &'a str, lines: Option<&str>) -> Cow<'a, str> {
    let changes = |c: char| match (lines, c) {
        (Some(_), '\t') => false,
        (Some(indent), '\n') => !indent.is_empty(),
        _ => escape_of(c).is_some(),
    };
    let Some(first) = text.find(changes) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match (lines, c) {
            (Some(indent), '\n') => {
                out.push('\n');
                out.push_str(indent);
            }
            (Some(_), '\t') => out.push('\t'),
            _ => match escape_of(c) {
                Some(escaped) => push_escaped(&mut out, escaped),
                None => out.push(c),
            },
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_and_calls_read_in_a_few_words() {
        assert_eq!(count(1, "agent", "agents"), "1 agent");
        assert_eq!(count(0, "agent", "agents"), "0 agents");
        let brief = |name: &str, args: serde_json::Value| call_brief(name, &args);
        assert_eq!(
            brief("exec_command", serde_json::json!({"cmd": "cargo\ntest"})),
            "exec_command: cargo test"
        );
        let patch = "*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+z\n*** End Patch";
        assert_eq!(
            brief("apply_patch", serde_json::json!({"patch": patch})),
            "apply_patch: a.rs, b.rs"
        );
        assert_eq!(
            brief("close_agent", serde_json::json!({"target": "/root/x"})),
            "close_agent: /root/x"
        );
        assert_eq!(brief("list_agents", serde_json::json!({})), "list_agents");
    }

    #[test]
    fn json_reads_as_lines_of_fields() {
        let value = serde_json::json!({
            "task_name": "/root/a", "nickname": null,
            "agents": [{"agent_name": "/root", "unread": 0}],
            "paths": ["a", "b"], "none": [], "text": "one\ntwo",
            "worktree": {"path": "/w", "branch": "b"},
        });
        assert_eq!(
            json_lines(&value),
            [
                "agents:",
                "  - agent_name: /root · unread: 0",
                "nickname: null",
                "none: none",
                "paths: a, b",
                "task_name: /root/a",
                "text:",
                "  one",
                "  two",
                "worktree:",
                "  branch: b",
                "  path: /w",
            ]
        );
        assert_eq!(json_lines(&serde_json::json!("plain")), ["plain"]);
    }

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(truncate_middle("hello", 5), "hello");
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text = format!("{}{}", "a".repeat(100), "b".repeat(100));
        let cut = truncate_middle(&text, 20);
        assert_eq!(
            cut,
            format!(
                "{}…[180 bytes truncated]…{}",
                "a".repeat(10),
                "b".repeat(10)
            )
        );
    }

    #[test]
    fn never_splits_a_character() {
        let text = "é".repeat(50);
        let cut = truncate_middle(&text, 11);
        assert!(cut.starts_with("éé…"), "{cut}");
        assert!(cut.ends_with("…ééé"), "{cut}");
    }

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(visible("git status"), "git status");
        assert!(matches!(visible("plain é ü"), Cow::Borrowed(_)));
        assert_eq!(
            visible("touch /x\r\x1b[2Kgit status"),
            "touch /x\\r\\x1b[2Kgit status"
        );
        assert_eq!(visible("a\nb\tc\0\x7f"), "a\\nb\\tc\\x00\\x7f");
        assert_eq!(visible("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(
            visible("x\u{202e}fdp.exe\u{2066}\u{2069}\u{200e}\u{200f}\u{061c}\u{2028}"),
            "x\\u{202e}fdp.exe\\u{2066}\\u{2069}\\u{200e}\\u{200f}\\u{61c}\\u{2028}"
        );
        // A backslash stays as written.
        assert_eq!(visible("printf '\\x1b'"), "printf '\\x1b'");
    }

    #[test]
    fn lines_keep_their_breaks_indented() {
        assert_eq!(visible_lines("one", "    "), "one");
        assert_eq!(
            visible_lines("one\ntwo\r\n\tthree", "    "),
            "one\n    two\\r\n    \tthree"
        );
        assert!(matches!(visible_lines("a\nb", ""), Cow::Borrowed(_)));
        assert_eq!(visible_lines("a\nb\x1b", ""), "a\nb\\x1b");
    }
}
