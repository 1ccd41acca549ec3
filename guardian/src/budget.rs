//! Review budgets: how much of the requester's evidence the guardian sees, and the one
//! truncation helper that keeps every piece inside its budget.

use arbor_protocol::MAX_PATH_BYTES;
use arbor_protocol::text::truncate_middle;

/// The token estimate used everywhere in this crate: one token per 4 bytes of UTF-8.
pub const BYTES_PER_TOKEN: usize = 4;
/// All transcript messages together (behaviour §7: about 10k tokens of messages).
pub const MESSAGE_TOKENS: usize = 10_000;
/// All transcript tool entries together, calls and outputs (about 10k tokens).
pub const TOOL_TOKENS: usize = 10_000;
/// One transcript message, so a single long message cannot crowd out the rest.
pub const MESSAGE_ENTRY_TOKENS: usize = 2_000;
/// One tool call or tool output.
pub const TOOL_ENTRY_TOKENS: usize = 1_000;
/// One string inside the planned action (behaviour §7: 16k per action string).
pub const ACTION_STRING_TOKENS: usize = 16_000;
/// The whole rendered action JSON, a backstop for actions with many long strings.
pub const ACTION_TOKENS: usize = 24_000;
/// The requester's justification.
pub const JUSTIFICATION_TOKENS: usize = 2_000;
/// The root user's task.
pub const ROOT_TASK_TOKENS: usize = 4_000;
/// The fixed text of a rendered request around the evidence (headings, fences, notes, the
/// verdict format), not counting the requester's path. Checked by a test.
pub const FRAME_MAX_BYTES: usize = 8_192;

/// Converts a token budget to bytes with [`BYTES_PER_TOKEN`].
pub fn tokens_to_bytes(tokens: usize) -> usize {
    tokens.saturating_mul(BYTES_PER_TOKEN)
}

/// Estimates the tokens of `text` with [`BYTES_PER_TOKEN`], rounding up.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(BYTES_PER_TOKEN)
}

/// The token budgets of one rendered review request. `Budgets::default()` holds the contract's
/// numbers; tests shrink them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    pub message_tokens: usize,
    pub tool_tokens: usize,
    pub message_entry_tokens: usize,
    pub tool_entry_tokens: usize,
    pub action_string_tokens: usize,
    pub action_tokens: usize,
    pub justification_tokens: usize,
    pub root_task_tokens: usize,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            message_tokens: MESSAGE_TOKENS,
            tool_tokens: TOOL_TOKENS,
            message_entry_tokens: MESSAGE_ENTRY_TOKENS,
            tool_entry_tokens: TOOL_ENTRY_TOKENS,
            action_string_tokens: ACTION_STRING_TOKENS,
            action_tokens: ACTION_TOKENS,
            justification_tokens: JUSTIFICATION_TOKENS,
            root_task_tokens: ROOT_TASK_TOKENS,
        }
    }
}

impl Budgets {
    /// The most bytes [`crate::ReviewRequest::render`] can produce under these budgets.
    pub fn max_rendered_bytes(&self) -> usize {
        [
            self.message_tokens,
            self.tool_tokens,
            self.action_tokens,
            self.justification_tokens,
            self.root_task_tokens,
        ]
        .into_iter()
        .map(tokens_to_bytes)
        .fold(FRAME_MAX_BYTES + MAX_PATH_BYTES, usize::saturating_add)
    }
}

/// Cuts `text` to at most `max_bytes` bytes, marker included, keeping its head and tail with
/// `truncate_middle`'s marker between. Unlike `truncate_middle` (which may overshoot by the
/// marker's length) the result never exceeds `max_bytes`; a budget too small for the marker
/// keeps only the head.
pub(crate) fn fit(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let reserve = marker_bytes(text.len());
    if max_bytes <= reserve {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        return text[..end].to_string();
    }
    truncate_middle(text, max_bytes - reserve)
}

/// The longest marker `truncate_middle` can insert into a text of `len` bytes: the cut is at
/// most `len`, so its decimal digits are at most those of `len`.
fn marker_bytes(len: usize) -> usize {
    "…[ bytes truncated]…".len() + len.to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_never_exceeds_its_budget() {
        let texts = [
            "a".repeat(100_000),
            "é".repeat(3_333),
            "日本語".repeat(999),
            "x".repeat(61),
        ];
        for text in &texts {
            for max in [0, 1, 5, 30, 31, 44, 45, 60, 100, 1_000, 9_999, 100_000] {
                let cut = fit(text, max);
                assert!(cut.len() <= max || cut == *text, "{} > {max}", cut.len());
                if text.len() > max && max > 64 {
                    assert!(cut.contains("bytes truncated]"), "{cut}");
                }
            }
        }
    }

    #[test]
    fn fit_keeps_head_and_tail() {
        let text = format!(
            "{}{}{}",
            "h".repeat(500),
            "m".repeat(10_000),
            "t".repeat(500)
        );
        let cut = fit(&text, 1_000);
        assert!(cut.starts_with(&"h".repeat(400)), "{cut}");
        assert!(cut.ends_with(&"t".repeat(400)), "{cut}");
        assert!(!cut.contains(&"m".repeat(200)), "{cut}");
    }

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(fit("hello", 5), "hello");
        assert_eq!(fit("", 0), "");
    }

    #[test]
    fn token_estimate_rounds_up() {
        for (text, tokens) in [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2)] {
            assert_eq!(estimate_tokens(text), tokens, "{text:?}");
        }
        assert_eq!(tokens_to_bytes(10_000), 40_000);
    }

    #[test]
    fn default_budgets_follow_the_contract() {
        let budgets = Budgets::default();
        assert_eq!(budgets.message_tokens, 10_000);
        assert_eq!(budgets.tool_tokens, 10_000);
        assert_eq!(budgets.action_string_tokens, 16_000);
        assert!(budgets.action_tokens >= budgets.action_string_tokens);
    }
}
