//! The `chat` provider: Chat Completions, `POST {base_url}/chat/completions`, streamed, as
//! OpenAI and most OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)
//! speak it.
//!
//! Content deltas are joined; tool-call deltas are gathered by call id, else by `index`, else
//! into the newest call (id and name first, arguments in pieces); a call id is kept once. The
//! items, the text first as the model wrote it, are reported when the choice's `finish_reason`
//! arrives; the stream is complete at `[DONE]`, or when it ends cleanly after a
//! `finish_reason`. `finish_reason: length` keeps what was written (`Finish::OutputLimit`).
//!
//! The output limit goes out as `max_tokens`, which every compatible server reads, except to
//! OpenAI's own endpoint, whose reasoning models refuse it: there it is `max_completion_tokens`.

use std::sync::atomic::{AtomicU64, Ordering};

use arbor_protocol::{ResponseItem, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::HttpClient;
use crate::retry::{Failure, stream_error};
use crate::sse::SseEvent;
use crate::sse::excerpt;
use crate::stream::{CallIds, Decoder, Progress};
use crate::{
    BoxFuture, Finish, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse, arguments,
};

/// The request field that carries `max_output_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitField {
    /// `max_tokens`: llama.cpp, Ollama, vLLM, LM Studio, OpenRouter, ...
    MaxTokens,
    /// `max_completion_tokens`: OpenAI, whose reasoning models refuse `max_tokens`.
    MaxCompletionTokens,
}

impl LimitField {
    /// The field a server at `base_url` reads: `max_completion_tokens` for api.openai.com.
    pub fn for_base_url(base_url: &str) -> Self {
        let host = base_url
            .split_once("://")
            .map_or(base_url, |(_, rest)| rest)
            .split(['/', ':'])
            .next()
            .unwrap_or_default();
        if host.eq_ignore_ascii_case("api.openai.com") {
            Self::MaxCompletionTokens
        } else {
            Self::MaxTokens
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// The provider for Chat Completions.
#[derive(Debug)]
pub struct ChatProvider {
    http: HttpClient,
    limit_field: LimitField,
}

impl ChatProvider {
    pub(crate) fn new(http: HttpClient) -> Self {
        let limit_field = LimitField::for_base_url(http.base_url());
        Self { http, limit_field }
    }
}

impl ModelClient for ChatProvider {
    fn provider(&self) -> &str {
        "chat"
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = request_body(request, self.limit_field);
            self.http
                .stream("/chat/completions", &body, events, ChatDecoder::default)
                .await
        })
    }
}

/// The JSON body of a streamed Chat Completions request.
pub fn request_body(request: &ModelRequest, limit_field: LimitField) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages(request),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                })
            })
            .collect();
        body["tools"] = json!(tools);
        body["tool_choice"] = json!("auto");
        body["parallel_tool_calls"] = json!(request.parallel_tool_calls);
    }
    if let Some(effort) = &request.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    if let Some(limit) = request.max_output_tokens {
        body[limit_field.name()] = json!(limit);
    }
    body
}

/// The history as chat messages: the instructions first (as `system`, which every
/// compatible server knows), an assistant message carrying the `tool_calls` that followed it,
/// and one `tool` message per call output. Reasoning items have no place here.
fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut messages = Vec::with_capacity(request.input.len() + 1);
    if !request.instructions.is_empty() {
        messages.push(json!({"role": "system", "content": &*request.instructions}));
    }
    for item in request.input.iter() {
        match item {
            ResponseItem::Message { role, content } => {
                let role = match role.as_str() {
                    "developer" | "system" => "system",
                    "assistant" => "assistant",
                    _ => "user",
                };
                messages.push(json!({"role": role, "content": content}));
            }
            ResponseItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let call = json!({
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments::for_history(arguments)},
                });
                let joins_last = messages
                    .last()
                    .is_some_and(|last| last["role"] == "assistant");
                match messages.last_mut() {
                    Some(last) if joins_last => match last.get_mut("tool_calls") {
                        Some(Value::Array(calls)) => calls.push(call),
                        _ => last["tool_calls"] = json!([call]),
                    },
                    _ => messages.push(json!({
                        "role": "assistant",
                        "content": null,
                        "tool_calls": [call],
                    })),
                }
            }
            ResponseItem::FunctionCallOutput { call_id, output } => messages.push(json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": output,
            })),
            ResponseItem::Reasoning { .. } => {}
        }
    }
    messages
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// One tool call being streamed.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// Reads one Chat Completions event stream.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    text: String,
    /// Calls in the order they started.
    calls: Vec<PartialCall>,
    /// Set when the choice finished: the output, already reported.
    items: Option<Vec<ResponseItem>>,
    usage: Option<Usage>,
    finish: Finish,
    done: bool,
}

impl ChatDecoder {
    /// Adds a tool-call delta to its call: the one with its id, else the one with its index
    /// (unless that one has another id), else the newest when the delta names neither;
    /// otherwise it starts a call.
    fn tool_call(&mut self, delta: ToolCallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let by_id = id
            .as_deref()
            .and_then(|id| self.calls.iter().rposition(|call| call.id == id));
        let by_index = || {
            let index = delta.index?;
            self.calls
                .iter()
                .rposition(|call| call.index == Some(index) && (id.is_none() || call.id.is_empty()))
        };
        let newest = || match (&id, delta.index) {
            (None, None) => self.calls.len().checked_sub(1),
            _ => None,
        };
        let at = by_id.or_else(by_index).or_else(newest).unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index: delta.index,
                ..PartialCall::default()
            });
            self.calls.len() - 1
        });
        let Some(call) = self.calls.get_mut(at) else {
            return;
        };
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = delta.function {
            call.name
                .push_str(function.name.as_deref().unwrap_or_default());
            call.arguments
                .push_str(function.arguments.as_deref().unwrap_or_default());
        }
    }

    /// The output so far, in the order the model wrote it: the message, then the calls (by
    /// index where the server gave indexes), each call id once.
    fn take_items(&mut self) -> Result<Vec<ResponseItem>, Failure> {
        let mut items = Vec::with_capacity(self.calls.len() + 1);
        if !self.text.is_empty() {
            items.push(ResponseItem::Message {
                role: "assistant".to_string(),
                content: std::mem::take(&mut self.text),
            });
        }
        // Stable: calls without an index keep their arrival order.
        self.calls
            .sort_by_key(|call| call.index.unwrap_or(u64::MAX));
        let mut ids = CallIds::default();
        for call in self.calls.drain(..) {
            if call.name.is_empty() {
                return Err(Failure::retry("the stream sent a tool call without a name"));
            }
            let item = ResponseItem::FunctionCall {
                call_id: if call.id.is_empty() {
                    new_call_id()
                } else {
                    call.id
                },
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    call.arguments
                },
            };
            if ids.first(&item) {
                items.push(item);
            }
        }
        Ok(items)
    }
}

impl Decoder for ChatDecoder {
    fn on_event(
        &mut self,
        event: SseEvent,
        done: &mut Vec<ResponseItem>,
    ) -> Result<Progress, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Progress::Complete);
        }
        if data.is_empty() {
            return Ok(Progress::More);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|error| {
            Failure::retry(format!("invalid stream chunk ({error}): {}", excerpt(data)))
        })?;
        if let Some(error) = chunk.error {
            let message = match &error {
                Value::String(text) => text.as_str(),
                other => other
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no error message"),
            };
            let code = error
                .get("code")
                .and_then(Value::as_str)
                .or_else(|| error.get("type").and_then(Value::as_str));
            return Err(stream_error(code, message));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|details| details.cached_tokens)
                    .unwrap_or(0),
                output_tokens: usage.completion_tokens,
                ..Usage::default()
            });
        }
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.or(delta.refusal) {
                    self.text.push_str(&text);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.tool_call(call);
                }
            }
            if let Some(reason) = choice.finish_reason {
                if reason == "length" {
                    self.finish = Finish::OutputLimit;
                }
                match reason.as_str() {
                    "content_filter" => {
                        return Err(Failure::Fatal(ModelError::Failed(
                            "the response was filtered (finish_reason content_filter)".to_string(),
                        )));
                    }
                    _ if self.items.is_none() => {
                        let items = self.take_items()?;
                        done.extend(items.iter().cloned());
                        self.items = Some(items);
                    }
                    _ => {}
                }
            }
        }
        Ok(Progress::More)
    }

    fn finish(mut self) -> Result<ModelResponse, Failure> {
        let items = match self.items.take() {
            Some(items) => items,
            None if self.done => self.take_items()?,
            None => {
                return Err(Failure::retry(
                    "the stream ended before the response finished",
                ));
            }
        };
        Ok(ModelResponse {
            items,
            usage: self.usage,
            finish: self.finish,
            served_by: None,
        })
    }
}

/// An id for a call the server sent without one: unique within this process's histories.
fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    format!("call_{stamp:x}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests;
