//! Human and model-visible text: long text keeps its head and tail with a marker between;
//! counts agree with their noun; a tool call in a few words.

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
