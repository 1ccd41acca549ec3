//! The `chat` provider: Chat Completions, `POST {base_url}/chat/completions`, streamed, as
//! OpenAI and most OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)
//! speak it.
//!
//! Content deltas are joined; tool-call deltas are gathered by `index` (id and name first,
//! arguments in pieces). The items are reported when the choice's `finish_reason` arrives; the
//! stream is complete at `[DONE]`, or when it ends cleanly after a `finish_reason`.

use std::sync::atomic::{AtomicU64, Ordering};

use arbor_protocol::{ResponseItem, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::HttpClient;
use crate::responses::excerpt;
use crate::retry::{Failure, stream_error};
use crate::sse::SseEvent;
use crate::stream::{Decoder, Progress};
use crate::{BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse};

/// The provider for Chat Completions.
#[derive(Debug)]
pub struct ChatProvider {
    http: HttpClient,
}

impl ChatProvider {
    pub(crate) fn new(http: HttpClient) -> Self {
        Self { http }
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
            let body = request_body(request);
            self.http
                .stream("/chat/completions", &body, events, ChatDecoder::default)
                .await
        })
    }
}

/// The JSON body of a streamed Chat Completions request.
pub fn request_body(request: &ModelRequest) -> Value {
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
    body
}

/// The history as chat messages: the instructions first (as `system`, which every
/// compatible server knows), an assistant message carrying the `tool_calls` that followed it,
/// and one `tool` message per call output. Reasoning items have no place here.
fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut messages = Vec::with_capacity(request.input.len() + 1);
    if !request.instructions.is_empty() {
        messages.push(json!({"role": "system", "content": request.instructions}));
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
                    "function": {"name": name, "arguments": arguments},
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
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Reads one Chat Completions event stream.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    text: String,
    calls: Vec<PartialCall>,
    /// Set when the choice finished: the output, already reported.
    items: Option<Vec<ResponseItem>>,
    usage: Option<Usage>,
    done: bool,
}

impl ChatDecoder {
    fn tool_call(&mut self, delta: ToolCallDelta) {
        let at = match delta.index {
            // Most deltas continue the newest call: look there first.
            Some(index) => self.calls.iter().rposition(|call| call.index == index),
            // Servers that leave out `index` start a call with its id, then continue it.
            None if delta.id.is_some() => None,
            None => self.calls.len().checked_sub(1),
        };
        let at = at.unwrap_or_else(|| {
            let index = delta
                .index
                .unwrap_or_else(|| u64::try_from(self.calls.len()).unwrap_or(u64::MAX));
            self.calls.push(PartialCall {
                index,
                ..PartialCall::default()
            });
            self.calls.len() - 1
        });
        let Some(call) = self.calls.get_mut(at) else {
            return;
        };
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            call.name
                .push_str(function.name.as_deref().unwrap_or_default());
            call.arguments
                .push_str(function.arguments.as_deref().unwrap_or_default());
        }
    }

    /// The output so far, in order: the message, then the calls by index.
    fn take_items(&mut self) -> Result<Vec<ResponseItem>, Failure> {
        let mut items = Vec::with_capacity(self.calls.len() + 1);
        if !self.text.is_empty() {
            items.push(ResponseItem::Message {
                role: "assistant".to_string(),
                content: std::mem::take(&mut self.text),
            });
        }
        self.calls.sort_by_key(|call| call.index);
        for call in self.calls.drain(..) {
            if call.name.is_empty() {
                return Err(Failure::retry("the stream sent a tool call without a name"));
            }
            items.push(ResponseItem::FunctionCall {
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
            });
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
                match reason.as_str() {
                    "length" => {
                        return Err(Failure::Fatal(ModelError::Failed(
                            "the response is incomplete (finish_reason length)".to_string(),
                        )));
                    }
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
