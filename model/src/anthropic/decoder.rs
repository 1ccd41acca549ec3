//! Reading one Messages event stream: `message_start` (input usage), per content block a
//! `content_block_start`, its deltas (`text_delta`, `input_json_delta`, `thinking_delta`,
//! `signature_delta`) and `content_block_stop`, then `message_delta` (`stop_reason`, output
//! usage) and `message_stop`; `ping` is a keep-alive, `error` a failure mid-stream.
//!
//! A block is reported once it stopped and every block before it has (blocks are told apart
//! by `index`). `stop_reason: max_tokens` keeps what was written (`Finish::OutputLimit`), a
//! call cut mid-way included, whose arguments then end early. A call id is kept once.

use arbor_protocol::{ResponseItem, Thinking, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::retry::{Answer, Failure, stream_error, try_again_in};
use crate::sse::SseEvent;
use crate::sse::excerpt;
use crate::stream::{CallIds, Decoder, Progress};
use crate::{Finish, ModelError, ModelResponse};

/// The fields of a Messages stream event that the decoder reads.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    message: Option<StartMessage>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Usage as the API reports it; every field may be absent from a `message_delta`.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl RawUsage {
    /// `later`'s fields over these (a `message_delta`'s counts are cumulative).
    fn update(&mut self, later: RawUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
    }

    /// In arbor's terms: input tokens count the cache's reads and writes too.
    fn usage(self) -> Usage {
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        let read = self.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + written + read,
            cached_input_tokens: read,
            cache_write_tokens: written,
            output_tokens: self.output_tokens.unwrap_or(0),
            ..Usage::default()
        }
    }
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// What one content block is, as it streams.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// The input of `content_block_start`, for a stream that sends no deltas.
        start: Option<Value>,
        json: String,
    },
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Redacted(String),
    /// A block arbor does not keep (a server tool's, a citation list, ...).
    Other,
}

#[derive(Debug)]
struct Slot {
    index: u64,
    block: Block,
    stopped: bool,
    reported: bool,
}

/// Reads one Messages event stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    slots: Vec<Slot>,
    calls: CallIds,
    usage: Option<RawUsage>,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicDecoder {
    fn slot(&mut self, index: Option<u64>) -> Option<&mut Slot> {
        let index = index.unwrap_or_else(|| self.slots.last().map_or(0, |slot| slot.index));
        self.slots.iter_mut().rev().find(|slot| slot.index == index)
    }

    fn start(&mut self, index: Option<u64>, block: &Value) {
        let text = |name: &str| block.get(name).and_then(Value::as_str).map(str::to_string);
        let block = match block.get("type").and_then(Value::as_str) {
            Some("text") => Block::Text(text("text").unwrap_or_default()),
            Some("tool_use") => Block::ToolUse {
                id: text("id").unwrap_or_default(),
                name: text("name").unwrap_or_default(),
                start: block.get("input").cloned(),
                json: String::new(),
            },
            Some("thinking") => Block::Thinking {
                text: text("thinking").unwrap_or_default(),
                signature: text("signature").filter(|s| !s.is_empty()),
            },
            Some("redacted_thinking") => Block::Redacted(text("data").unwrap_or_default()),
            _ => Block::Other,
        };
        let index = index.unwrap_or(u64::try_from(self.slots.len()).unwrap_or(u64::MAX));
        self.slots.push(Slot {
            index,
            block,
            stopped: false,
            reported: false,
        });
    }

    fn delta(&mut self, index: Option<u64>, delta: Delta) {
        let Some(slot) = self.slot(index) else {
            return;
        };
        match (&mut slot.block, delta.kind.as_deref()) {
            (Block::Text(text), Some("text_delta")) => {
                text.push_str(delta.text.as_deref().unwrap_or_default());
            }
            (Block::ToolUse { json, .. }, Some("input_json_delta")) => {
                json.push_str(delta.partial_json.as_deref().unwrap_or_default());
            }
            (Block::Thinking { text, .. }, Some("thinking_delta")) => {
                text.push_str(delta.thinking.as_deref().unwrap_or_default());
            }
            (Block::Thinking { signature, .. }, Some("signature_delta")) => {
                let piece = delta.signature.as_deref().unwrap_or_default();
                signature.get_or_insert_with(String::new).push_str(piece);
            }
            // Citations and whatever the API adds later.
            _ => {}
        }
    }

    /// Reports the stopped blocks in order, up to the first still streaming.
    fn report(&mut self, done: &mut Vec<ResponseItem>) -> Result<(), Failure> {
        for at in 0..self.slots.len() {
            if self.slots[at].reported {
                continue;
            }
            if !self.slots[at].stopped {
                break;
            }
            self.slots[at].reported = true;
            if let Some(item) = item_of(&self.slots[at].block)?
                && self.calls.first(&item)
            {
                done.push(item);
            }
        }
        Ok(())
    }
}

/// The history item of a finished block; `None` for blocks arbor does not keep.
fn item_of(block: &Block) -> Result<Option<ResponseItem>, Failure> {
    Ok(match block {
        Block::Text(text) if text.is_empty() => None,
        Block::Text(text) => Some(ResponseItem::Message {
            role: "assistant".to_string(),
            content: text.clone(),
        }),
        Block::ToolUse {
            id,
            name,
            start,
            json,
        } => {
            if name.is_empty() {
                return Err(Failure::retry(
                    "the stream sent a tool_use block without a name",
                ));
            }
            let arguments = if !json.is_empty() {
                json.clone()
            } else {
                match start {
                    Some(input @ Value::Object(map)) if !map.is_empty() => input.to_string(),
                    _ => "{}".to_string(),
                }
            };
            Some(ResponseItem::FunctionCall {
                call_id: id.clone(),
                name: name.clone(),
                arguments,
            })
        }
        Block::Thinking { text, signature } => Some(ResponseItem::Reasoning {
            summary: vec![text.clone()],
            encrypted_content: None,
            // Without its signature a block cannot go back; its text stays readable.
            thinking: signature.as_ref().map(|signature| {
                Box::new(Thinking::Thinking {
                    signature: signature.clone(),
                })
            }),
        }),
        Block::Redacted(data) => Some(ResponseItem::Reasoning {
            summary: Vec::new(),
            encrypted_content: None,
            thinking: Some(Box::new(Thinking::RedactedThinking { data: data.clone() })),
        }),
        Block::Other => None,
    })
}

/// An `error` event (or body) as a failure: overloaded and rate limited pass (every retry
/// kept), server errors are retried once if they repeat, request problems are not retried.
pub(crate) fn error_failure(kind: Option<&str>, message: &str) -> Failure {
    match kind {
        Some("overloaded_error") => Failure::Retry {
            reason: format!("overloaded: {message}"),
            after: None,
            rate_limited: false,
            answer: None,
        },
        Some("rate_limit_error") => Failure::Retry {
            reason: format!("rate limited: {message}"),
            after: try_again_in(message),
            rate_limited: true,
            answer: None,
        },
        Some(code @ ("api_error" | "timeout_error")) => Failure::Retry {
            reason: format!("the server reported {code}: {message}"),
            after: None,
            rate_limited: false,
            answer: Some(Answer {
                status: None,
                body: format!("{code} {message}"),
                message: format!("the server reported {code}: {message}"),
            }),
        },
        Some(code) => Failure::Fatal(ModelError::Failed(format!("{code}: {message}"))),
        None => stream_error(None, message),
    }
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: SseEvent,
        done: &mut Vec<ResponseItem>,
    ) -> Result<Progress, Failure> {
        let parsed: Event = serde_json::from_str(&event.data).map_err(|error| {
            Failure::retry(format!(
                "invalid stream event ({error}): {}",
                excerpt(&event.data)
            ))
        })?;
        let kind = parsed
            .kind
            .as_deref()
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(usage) = parsed.message.and_then(|message| message.usage) {
                    self.usage.get_or_insert_default().update(usage);
                }
            }
            "content_block_start" => {
                let block = parsed.content_block.unwrap_or_default();
                self.start(parsed.index, &block);
            }
            "content_block_delta" => {
                self.delta(parsed.index, parsed.delta.unwrap_or_default());
            }
            "content_block_stop" => {
                if let Some(slot) = self.slot(parsed.index) {
                    slot.stopped = true;
                }
                self.report(done)?;
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = parsed.usage {
                    self.usage.get_or_insert_default().update(usage);
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(Progress::Complete);
            }
            "error" => {
                let error = parsed.error.unwrap_or(ErrorBody {
                    kind: None,
                    message: None,
                });
                let message = error.message.as_deref().unwrap_or("no error message");
                return Err(error_failure(error.kind.as_deref(), message));
            }
            // `ping`, and whatever the API adds later.
            _ => {}
        }
        Ok(Progress::More)
    }

    fn finish(mut self) -> Result<ModelResponse, Failure> {
        // A stream that ends cleanly after its stop reason has said all it meant to.
        if !self.done && self.stop_reason.is_none() {
            return Err(Failure::retry(
                "the stream ended before the message stopped",
            ));
        }
        let finish = match self.stop_reason.as_deref() {
            Some("max_tokens" | "model_context_window_exceeded") => Finish::OutputLimit,
            Some("refusal") => {
                return Err(Failure::Fatal(ModelError::Failed(
                    "the model declined to answer (stop_reason refusal)".to_string(),
                )));
            }
            _ => Finish::Completed,
        };
        // Blocks a cut stream never stopped are kept as they streamed.
        for slot in &mut self.slots {
            slot.stopped = true;
        }
        let mut items = Vec::new();
        let mut calls = CallIds::default();
        for slot in &self.slots {
            if let Some(item) = item_of(&slot.block)?
                && calls.first(&item)
            {
                items.push(item);
            }
        }
        Ok(ModelResponse {
            items,
            usage: self.usage.map(RawUsage::usage),
            finish,
            served_by: None,
        })
    }
}
