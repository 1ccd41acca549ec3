//! Per-agent running totals over request histories, so that numbering calls and estimating
//! usage cost the new items of each request, not the whole history again.
//!
//! A history normally grows at its end between two requests of an agent. The tally keeps the
//! first and the last item it counted; when the next request still holds both at the same
//! places it counts only what follows, and otherwise (a history replaced or cut) it counts
//! everything again.

use std::sync::Arc;

use arbor_protocol::{ResponseItem, ToolSpec};

/// What one agent's previous request held.
#[derive(Debug, Default)]
pub(super) struct Tally {
    len: usize,
    bytes: usize,
    calls: usize,
    first: Option<ResponseItem>,
    last: Option<ResponseItem>,
}

/// Totals over one request's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counted {
    /// Bytes of text in the history (see [`item_bytes`]).
    pub bytes: usize,
    /// Function calls in the history.
    pub calls: usize,
}

impl Tally {
    /// Totals for `input`, counting only the items added since the previous request when the
    /// history still starts and continues as it did.
    pub fn count(&mut self, input: &[ResponseItem]) -> Counted {
        let grew = self.len > 0
            && input.len() >= self.len
            && input.first() == self.first.as_ref()
            && input.get(self.len - 1) == self.last.as_ref();
        if !grew {
            *self = Self {
                first: input.first().cloned(),
                ..Self::default()
            };
        }
        let new = &input[self.len..];
        self.bytes += item_bytes(new);
        self.calls += new
            .iter()
            .filter(|item| matches!(item, ResponseItem::FunctionCall { .. }))
            .count();
        self.len = input.len();
        self.last = input.last().cloned();
        Counted {
            bytes: self.bytes,
            calls: self.calls,
        }
    }
}

/// Bytes of the tool specs of a request, measured once per shared tool list.
#[derive(Debug, Default)]
pub(super) struct ToolBytes {
    seen: Vec<(Arc<Vec<ToolSpec>>, usize)>,
}

impl ToolBytes {
    /// The bytes of names, descriptions and parameter schemas of `tools`.
    pub fn of(&mut self, tools: &Arc<Vec<ToolSpec>>) -> usize {
        if let Some((_, bytes)) = self.seen.iter().find(|(seen, _)| Arc::ptr_eq(seen, tools)) {
            return *bytes;
        }
        let bytes = tools
            .iter()
            .map(|tool| {
                tool.name.len() + tool.description.len() + tool.parameters.to_string().len()
            })
            .sum();
        // Holding the list keeps its address from being reused by another list.
        self.seen.push((Arc::clone(tools), bytes));
        bytes
    }
}

/// Bytes of text in items: message content, call names and arguments, outputs, reasoning.
pub(super) fn item_bytes(items: &[ResponseItem]) -> usize {
    crate::window::item_bytes(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(text: &str) -> ResponseItem {
        ResponseItem::Message {
            role: "assistant".to_string(),
            content: text.to_string(),
        }
    }

    fn call(id: &str) -> ResponseItem {
        ResponseItem::FunctionCall {
            call_id: id.to_string(),
            name: "wait_agent".to_string(),
            arguments: "{}".to_string(),
        }
    }

    /// The running totals always equal a full count, whether the history grew, was replaced
    /// by another one of the same length, or shrank.
    #[test]
    fn totals_equal_a_full_count() {
        let full = |items: &[ResponseItem]| Counted {
            bytes: item_bytes(items),
            calls: items
                .iter()
                .filter(|item| matches!(item, ResponseItem::FunctionCall { .. }))
                .count(),
        };
        let mut tally = Tally::default();
        let mut history = vec![say("hello")];
        assert_eq!(tally.count(&history), full(&history));
        history.push(call("c1"));
        history.push(say("more text"));
        assert_eq!(tally.count(&history), full(&history));
        // Same length, different middle and end: counted again.
        let replaced = vec![say("hello"), say("x"), call("c2"), call("c3")];
        assert_eq!(tally.count(&replaced), full(&replaced));
        // A different first item with the same last one: counted again.
        let other = vec![say("summary"), say("x"), call("c2"), call("c3"), say("y")];
        assert_eq!(tally.count(&other), full(&other));
        // Shorter: counted again.
        let short = vec![call("c9")];
        assert_eq!(tally.count(&short), full(&short));
        assert_eq!(tally.count(&[]), full(&[]));
    }
}
