//! An agent's history as Messages API `messages`, valid by the API's rules whatever API wrote
//! the history:
//!
//! - messages alternate `user` and `assistant`, the first a `user` one (consecutive items of
//!   one side join one message);
//! - each `tool_use` has its `tool_result` in the next message, and a `user` message puts its
//!   `tool_result` blocks before any text (a call without an output gets one saying so; an
//!   output without its call becomes text);
//! - a reasoning item goes back only as the thinking block it came as (`ProviderKind::takes`);
//!   blank text is left out (the API refuses it);
//! - thinking may be on only when the assistant message a tool loop continues starts with a
//!   thinking block ([`Translated::thinking_allowed`]), which a history from another API
//!   lacks.
//!
//! Prompt caching: the history's end, and the end of the user message before the last
//! assistant message (where the previous request of the turn ended, so its cache entry is
//! read), get `cache_control`. With the last tool and the system prompt that is at most
//! [`MAX_CACHE_BREAKPOINTS`].

use std::borrow::Cow;
use std::collections::HashSet;

use arbor_protocol::{ResponseItem, Thinking};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::{ProviderKind, arguments};

/// The most `cache_control` breakpoints one request may carry.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// What an output with no call before it reads as.
const ORPHAN_OUTPUT: &str = "Output of an earlier tool call";
/// What a call with no recorded output gets as its result.
const NO_OUTPUT: &str = "no output was recorded for this call";

/// `{"type": "ephemeral"}`: the cache entry lives for five minutes from its last use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl CacheControl {
    pub(crate) const EPHEMERAL: Self = Self { kind: "ephemeral" };
}

/// One content block of a request.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Cow<'a, RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        #[serde(skip_serializing_if = "str::is_empty")]
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: Cow<'a, str>,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
}

impl<'a> Block<'a> {
    /// A text block cached up to its end (the system prompt).
    pub(crate) fn cached_text(text: &'a str) -> Self {
        Self::Text {
            text: Cow::Borrowed(text),
            cache_control: Some(CacheControl::EPHEMERAL),
        }
    }

    fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// Marks the block as a cache breakpoint; false for blocks that cannot be one (thinking).
    fn cache(&mut self) -> bool {
        match self {
            Self::Text { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => {
                *cache_control = Some(CacheControl::EPHEMERAL);
                true
            }
            Self::Thinking { .. } | Self::RedactedThinking { .. } => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    User,
    Assistant,
}

/// One message of a request.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Message<'a> {
    pub(crate) role: Role,
    pub(crate) content: Vec<Block<'a>>,
}

/// A history as the API takes it.
#[derive(Debug)]
pub(crate) struct Translated<'a> {
    pub(crate) messages: Vec<Message<'a>>,
    /// Thinking may be turned on for this request (see the module docs).
    pub(crate) thinking_allowed: bool,
}

/// The history as messages, with its cache breakpoints.
pub(crate) fn translate(history: &[ResponseItem]) -> Translated<'_> {
    let mut messages: Vec<Message<'_>> = Vec::new();
    for item in history {
        let Some((role, block)) = block_of(item) else {
            continue;
        };
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.push(block),
            _ => messages.push(Message {
                role,
                content: vec![block],
            }),
        }
    }
    if messages
        .first()
        .is_some_and(|first| first.role == Role::Assistant)
    {
        messages.insert(
            0,
            Message {
                role: Role::User,
                content: vec![Block::text("(the conversation so far)")],
            },
        );
    }
    pair_calls(&mut messages);
    let thinking_allowed = thinking_allowed(&messages);
    place_breakpoints(&mut messages);
    Translated {
        messages,
        thinking_allowed,
    }
}

/// The block an item becomes and the side it is on; `None` for what the API cannot take.
fn block_of(item: &ResponseItem) -> Option<(Role, Block<'_>)> {
    Some(match item {
        ResponseItem::Message { content, .. } if content.trim().is_empty() => return None,
        ResponseItem::Message { role, content } => {
            let side = if role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            };
            (side, Block::text(content.as_str()))
        }
        ResponseItem::FunctionCall {
            call_id,
            name,
            arguments,
        } => (
            Role::Assistant,
            Block::ToolUse {
                id: tool_id(call_id),
                name,
                input: input(arguments),
                cache_control: None,
            },
        ),
        ResponseItem::FunctionCallOutput { call_id, output } => (
            Role::User,
            Block::ToolResult {
                tool_use_id: tool_id(call_id),
                content: output,
                cache_control: None,
            },
        ),
        ResponseItem::Reasoning { .. } if !ProviderKind::Anthropic.takes(item) => return None,
        ResponseItem::Reasoning {
            summary, thinking, ..
        } => {
            let block = match thinking.as_deref()? {
                Thinking::Thinking { signature } => Block::Thinking {
                    thinking: match summary.as_slice() {
                        [one] => Cow::Borrowed(one.as_str()),
                        many => Cow::Owned(many.concat()),
                    },
                    signature,
                },
                Thinking::RedactedThinking { data } => Block::RedactedThinking { data },
            };
            (Role::Assistant, block)
        }
    })
}

/// A call's arguments as the `input` object (arguments that are not one are wrapped).
fn input(arguments: &str) -> Cow<'_, RawValue> {
    match arguments::for_history(arguments) {
        Cow::Borrowed(text) => match serde_json::from_str::<&RawValue>(text) {
            Ok(raw) => Cow::Borrowed(raw),
            Err(_) => empty_input(),
        },
        Cow::Owned(text) => RawValue::from_string(text).map_or_else(|_| empty_input(), Cow::Owned),
    }
}

fn empty_input() -> Cow<'static, RawValue> {
    RawValue::from_string("{}".to_string())
        .map_or_else(|_| unreachable!("`{{}}` is JSON"), Cow::Owned)
}

/// A call id as the API takes it (`[a-zA-Z0-9_-]+`): other characters become `_`, so an id
/// from another API maps to the same text in its call and in its output.
fn tool_id(id: &str) -> Cow<'_, str> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.chars().all(valid) {
        return Cow::Borrowed(id);
    }
    let mapped: String = id.chars().map(|c| if valid(c) { c } else { '_' }).collect();
    Cow::Owned(if mapped.is_empty() {
        "call".to_string()
    } else {
        mapped
    })
}

/// Every `tool_use` answered in the next message and every `tool_result` after its call,
/// results first in their message.
fn pair_calls(messages: &mut Vec<Message<'_>>) {
    let mut at = 0;
    let mut asked: HashSet<String> = HashSet::new();
    while at < messages.len() {
        if messages[at].role == Role::Assistant {
            asked = messages[at]
                .content
                .iter()
                .filter_map(|block| match block {
                    Block::ToolUse { id, .. } => Some(id.to_string()),
                    _ => None,
                })
                .collect();
            if !asked.is_empty() && messages.get(at + 1).is_none_or(|m| m.role != Role::User) {
                messages.insert(
                    at + 1,
                    Message {
                        role: Role::User,
                        content: Vec::new(),
                    },
                );
            }
            at += 1;
            continue;
        }
        let content = std::mem::take(&mut messages[at].content);
        let mut results = Vec::with_capacity(content.len());
        let mut rest = Vec::new();
        for block in content {
            match block {
                Block::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } if !asked.remove(tool_use_id.as_ref()) => {
                    rest.push(Block::text(format!(
                        "{ORPHAN_OUTPUT} ({tool_use_id}):\n{content}"
                    )));
                }
                result @ Block::ToolResult { .. } => results.push(result),
                other => rest.push(other),
            }
        }
        let mut missing: Vec<String> = asked.drain().collect();
        missing.sort();
        results.extend(missing.into_iter().map(|id| Block::ToolResult {
            tool_use_id: Cow::Owned(id),
            content: NO_OUTPUT,
            cache_control: None,
        }));
        results.extend(rest);
        messages[at].content = results;
        at += 1;
    }
}

/// Whether thinking may be on: unless the request continues a tool loop (its last message
/// holds tool results), when the assistant message before must start with thinking.
fn thinking_allowed(messages: &[Message<'_>]) -> bool {
    let [.., assistant, last] = messages else {
        return true;
    };
    let continues = last.role == Role::User
        && last
            .content
            .iter()
            .any(|block| matches!(block, Block::ToolResult { .. }));
    !continues
        || matches!(
            assistant.content.first(),
            Some(Block::Thinking { .. } | Block::RedactedThinking { .. })
        )
}

/// The history's end, and the end of the user message before the last assistant message.
fn place_breakpoints(messages: &mut [Message<'_>]) {
    let Some(last) = messages.len().checked_sub(1) else {
        return;
    };
    let earlier = messages[..last]
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .and_then(|assistant| {
            messages[..assistant]
                .iter()
                .rposition(|m| m.role == Role::User)
        });
    for at in std::iter::once(last).chain(earlier) {
        for block in messages[at].content.iter_mut().rev() {
            if block.cache() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
