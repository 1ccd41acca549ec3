//! Bounding the requester's transcript: the newest messages and tool entries that fit their
//! budgets, each entry middle-truncated, walking from the end.

use arbor_protocol::ResponseItem;

use crate::budget::{Budgets, fit, tokens_to_bytes};

/// Between two rendered entries; its bytes count against the entry's budget.
pub(crate) const ENTRY_SEPARATOR: &str = "\n\n";

/// Which budget an entry draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Tool,
}

/// The part of a transcript the guardian sees.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct BoundedTranscript {
    /// Rendered entries, oldest first.
    pub entries: Vec<String>,
    /// Messages and tool entries in the whole transcript (reasoning is never shown).
    pub total: usize,
    pub omitted_messages: usize,
    pub omitted_tools: usize,
    /// Bytes of the kept messages, separators included.
    pub message_bytes: usize,
    /// Bytes of the kept tool entries, separators included.
    pub tool_bytes: usize,
}

impl BoundedTranscript {
    pub fn omitted(&self) -> usize {
        self.omitted_messages + self.omitted_tools
    }

    /// The kept entries joined with [`ENTRY_SEPARATOR`].
    pub fn joined(&self) -> String {
        self.entries.join(ENTRY_SEPARATOR)
    }
}

/// Keeps the newest entries of each kind while they fit: walking from the end, a kind stops at
/// its first entry that does not fit, so every omitted entry is older than every kept entry of
/// its kind. Reasoning items are left out (encrypted content means nothing to the reviewer).
pub(crate) fn bound(transcript: &[ResponseItem], budgets: &Budgets) -> BoundedTranscript {
    let shown: Vec<(Kind, &ResponseItem)> = transcript
        .iter()
        .filter_map(|item| kind(item).map(|kind| (kind, item)))
        .collect();
    let mut bounded = BoundedTranscript {
        total: shown.len(),
        ..BoundedTranscript::default()
    };
    let mut message_full = false;
    let mut tool_full = false;
    for (index, (kind, item)) in shown.iter().enumerate().rev() {
        let (full, used, omitted, budget, entry_budget) = match kind {
            Kind::Message => (
                &mut message_full,
                &mut bounded.message_bytes,
                &mut bounded.omitted_messages,
                budgets.message_tokens,
                budgets.message_entry_tokens,
            ),
            Kind::Tool => (
                &mut tool_full,
                &mut bounded.tool_bytes,
                &mut bounded.omitted_tools,
                budgets.tool_tokens,
                budgets.tool_entry_tokens,
            ),
        };
        if *full {
            *omitted += 1;
            continue;
        }
        let entry = fit(
            &render_entry(index + 1, item),
            tokens_to_bytes(entry_budget),
        );
        let cost = entry.len() + ENTRY_SEPARATOR.len();
        if *used + cost > tokens_to_bytes(budget) {
            *full = true;
            *omitted += 1;
            continue;
        }
        *used += cost;
        bounded.entries.push(entry);
    }
    bounded.entries.reverse();
    bounded
}

fn kind(item: &ResponseItem) -> Option<Kind> {
    match item {
        ResponseItem::Message { .. } => Some(Kind::Message),
        ResponseItem::FunctionCall { .. } | ResponseItem::FunctionCallOutput { .. } => {
            Some(Kind::Tool)
        }
        ResponseItem::Reasoning { .. } => None,
    }
}

/// One entry, numbered among the shown entries so gaps are visible.
fn render_entry(number: usize, item: &ResponseItem) -> String {
    match item {
        ResponseItem::Message { role, content } => format!("[{number}] {role} message:\n{content}"),
        ResponseItem::FunctionCall {
            call_id,
            name,
            arguments,
        } => format!("[{number}] tool call `{name}` (call {call_id}), arguments:\n{arguments}"),
        ResponseItem::FunctionCallOutput { call_id, output } => {
            format!("[{number}] tool output (call {call_id}):\n{output}")
        }
        ResponseItem::Reasoning { .. } => format!("[{number}] reasoning (not shown)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: &str, content: &str) -> ResponseItem {
        ResponseItem::Message {
            role: role.into(),
            content: content.into(),
        }
    }

    fn call(id: &str, arguments: &str) -> ResponseItem {
        ResponseItem::FunctionCall {
            call_id: id.into(),
            name: "exec_command".into(),
            arguments: arguments.into(),
        }
    }

    fn output(id: &str, output: &str) -> ResponseItem {
        ResponseItem::FunctionCallOutput {
            call_id: id.into(),
            output: output.into(),
        }
    }

    fn reasoning() -> ResponseItem {
        ResponseItem::Reasoning {
            summary: vec!["secret plan".into()],
            encrypted_content: Some("opaque".into()),
            thinking: None,
        }
    }

    fn small() -> Budgets {
        Budgets {
            message_tokens: 100,
            tool_tokens: 100,
            message_entry_tokens: 50,
            tool_entry_tokens: 25,
            ..Budgets::default()
        }
    }

    /// Bounds `transcript` and compares the kept entries with `expect`, one per line, with
    /// the entry's first line only.
    fn check(
        transcript: &[ResponseItem],
        budgets: Budgets,
        expect: &[&str],
        omitted: (usize, usize),
    ) {
        let bounded = bound(transcript, &budgets);
        let firsts: Vec<&str> = bounded
            .entries
            .iter()
            .map(|entry| entry.lines().next().unwrap_or_default())
            .collect();
        assert_eq!(firsts, expect);
        assert_eq!((bounded.omitted_messages, bounded.omitted_tools), omitted);
        assert!(bounded.message_bytes <= tokens_to_bytes(budgets.message_tokens));
        assert!(bounded.tool_bytes <= tokens_to_bytes(budgets.tool_tokens));
        assert_eq!(
            bounded.joined().len()
                + ENTRY_SEPARATOR.len() * usize::from(!bounded.entries.is_empty()),
            bounded.message_bytes + bounded.tool_bytes
        );
    }

    #[test]
    fn a_short_transcript_is_kept_whole_and_in_order() {
        check(
            &[
                message("user", "fix the bug"),
                call("c1", "{}"),
                output("c1", "ok"),
                reasoning(),
            ],
            Budgets::default(),
            &[
                "[1] user message:",
                "[2] tool call `exec_command` (call c1), arguments:",
                "[3] tool output (call c1):",
            ],
            (0, 0),
        );
    }

    #[test]
    fn reasoning_is_never_shown_nor_counted() {
        let bounded = bound(
            &[reasoning(), message("assistant", "hi")],
            &Budgets::default(),
        );
        assert_eq!(bounded.total, 1);
        assert!(!bounded.joined().contains("secret plan"));
    }

    #[test]
    fn the_newest_entries_of_each_kind_are_kept() {
        let mut transcript = Vec::new();
        for n in 0..20 {
            transcript.push(message(
                "assistant",
                &format!("message {n} {}", "m".repeat(100)),
            ));
            transcript.push(output(&format!("c{n}"), &"o".repeat(60)));
        }
        let bounded = bound(&transcript, &small());
        let last = bounded
            .entries
            .last()
            .map(String::as_str)
            .unwrap_or_default();
        assert!(last.starts_with("[40] tool output (call c19)"), "{last}");
        assert!(bounded.joined().contains("message 19"));
        assert!(!bounded.joined().contains("message 0 "));
        assert_eq!(bounded.omitted() + bounded.entries.len(), 40);
        assert!(bounded.omitted_messages > 0 && bounded.omitted_tools > 0);
    }

    #[test]
    fn one_long_entry_is_middle_truncated_to_its_own_budget() {
        let long = format!("{}{}{}", "head ", "x".repeat(10_000), " tail");
        let bounded = bound(&[message("user", &long)], &small());
        let [entry] = bounded.entries.as_slice() else {
            panic!("expected one entry: {bounded:?}");
        };
        assert!(entry.len() <= tokens_to_bytes(50), "{}", entry.len());
        assert!(entry.starts_with("[1] user message:\nhead "), "{entry}");
        assert!(entry.ends_with(" tail"), "{entry}");
        assert!(entry.contains("bytes truncated]"), "{entry}");
    }

    #[test]
    fn a_full_kind_stops_but_the_other_kind_goes_on() {
        let budgets = Budgets {
            message_tokens: 10,
            ..small()
        };
        check(
            &[
                output("c1", "old output"),
                message("user", "an old message"),
                message("assistant", "the newest message, too long for ten tokens"),
            ],
            budgets,
            &["[1] tool output (call c1):"],
            (2, 0),
        );
    }

    #[test]
    fn an_empty_transcript_renders_nothing() {
        let bounded = bound(&[], &Budgets::default());
        assert_eq!(bounded, BoundedTranscript::default());
    }
}
