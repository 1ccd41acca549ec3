//! Human and model-visible text: long text keeps its head and tail with a marker between;
//! counts agree with their noun; a tool call in a few words; JSON as lines of fields.

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
}
