//! The `openai` provider: the OpenAI Responses API, `POST {base_url}/responses`, streamed.
//!
//! Requests are stateless (`store: false`): the whole history goes every time, reasoning
//! items with their `encrypted_content` included. Every output item is reported as soon as its
//! `response.output_item.done` arrives, so a tool call can start before the stream ends; the
//! response is complete only at `response.completed`.

use std::collections::BTreeMap;

use arbor_protocol::{ResponseItem, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::HttpClient;
use crate::retry::{Failure, stream_error};
use crate::sse::SseEvent;
use crate::stream::{Decoder, Progress};
use crate::{BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse};

/// The provider for the Responses API.
#[derive(Debug)]
pub struct ResponsesProvider {
    http: HttpClient,
}

impl ResponsesProvider {
    pub(crate) fn new(http: HttpClient) -> Self {
        Self { http }
    }
}

impl ModelClient for ResponsesProvider {
    fn provider(&self) -> &str {
        "openai"
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = request_body(request);
            self.http
                .stream("/responses", &body, events, ResponsesDecoder::default)
                .await
        })
    }
}

/// The JSON body of a streamed, stateless Responses request.
pub fn request_body(request: &ModelRequest) -> Value {
    let mut passes_reasoning = false;
    let input: Vec<Value> = request
        .input
        .iter()
        .filter_map(|item| match item {
            ResponseItem::Message { role, content } => {
                let part = if role == "assistant" {
                    "output_text"
                } else {
                    "input_text"
                };
                Some(json!({
                    "type": "message",
                    "role": role,
                    "content": [{"type": part, "text": content}],
                }))
            }
            ResponseItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => Some(json!({
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
            })),
            ResponseItem::FunctionCallOutput { call_id, output } => Some(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": output,
            })),
            // Without its encrypted content (and without `store`), the server cannot use a
            // reasoning item, so only those that carry it go back.
            ResponseItem::Reasoning {
                summary,
                encrypted_content: Some(encrypted),
            } => {
                passes_reasoning = true;
                let summary: Vec<Value> = summary
                    .iter()
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect();
                Some(json!({
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": encrypted,
                }))
            }
            ResponseItem::Reasoning {
                encrypted_content: None,
                ..
            } => None,
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !request.instructions.is_empty() {
        body["instructions"] = json!(request.instructions);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": false,
                })
            })
            .collect();
        body["tools"] = json!(tools);
        body["tool_choice"] = json!("auto");
        body["parallel_tool_calls"] = json!(request.parallel_tool_calls);
    }
    if let Some(effort) = &request.reasoning_effort {
        body["reasoning"] = json!({ "effort": effort });
    }
    if request.reasoning_effort.is_some() || passes_reasoning {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    body
}

/// The fields of a Responses stream event that the decoder reads.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

/// Text and arguments streamed for one output item, for a server whose done item lacks them.
#[derive(Debug, Default)]
struct Partial {
    text: String,
    arguments: String,
    arguments_done: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
}

/// Reads one Responses event stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// Finished items by output index.
    items: BTreeMap<u64, ResponseItem>,
    partial: BTreeMap<u64, Partial>,
    usage: Option<Usage>,
    completed: bool,
}

impl Decoder for ResponsesDecoder {
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
        let index = parsed.output_index.unwrap_or(0);
        match kind {
            "response.output_item.added" => {
                if let Some(item) = &parsed.item {
                    let partial = self.partial.entry(index).or_default();
                    partial.call_id = text_field(item, "call_id");
                    partial.name = text_field(item, "name");
                }
            }
            "response.output_text.delta" => {
                let delta = parsed.delta.unwrap_or_default();
                self.partial.entry(index).or_default().text.push_str(&delta);
            }
            "response.function_call_arguments.delta" => {
                let delta = parsed.delta.unwrap_or_default();
                let partial = self.partial.entry(index).or_default();
                partial.arguments.push_str(&delta);
            }
            "response.function_call_arguments.done" => {
                self.partial.entry(index).or_default().arguments_done = parsed.arguments;
            }
            "response.output_item.done" => {
                let partial = self.partial.remove(&index).unwrap_or_default();
                if let Some(item) = parsed.item.as_ref().and_then(|i| convert(i, partial)) {
                    done.push(item.clone());
                    self.items.insert(index, item);
                }
            }
            "response.completed" => {
                let response = parsed.response.unwrap_or_default();
                self.usage = response.get("usage").map(usage);
                // A server that skipped `output_item.done` for some item still lists it here.
                if let Some(output) = response.get("output").and_then(Value::as_array) {
                    for (at, item) in output.iter().enumerate() {
                        let at = u64::try_from(at).unwrap_or(u64::MAX);
                        if self.items.contains_key(&at) {
                            continue;
                        }
                        if let Some(item) = convert(item, Partial::default()) {
                            done.push(item.clone());
                            self.items.insert(at, item);
                        }
                    }
                }
                self.completed = true;
                return Ok(Progress::Complete);
            }
            "response.failed" => {
                let error = parsed
                    .response
                    .as_ref()
                    .and_then(|response| response.get("error"))
                    .cloned()
                    .unwrap_or_default();
                return Err(error_failure(&error));
            }
            "response.incomplete" => {
                let reason = parsed
                    .response
                    .as_ref()
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string();
                return Err(Failure::Fatal(ModelError::Failed(format!(
                    "the response is incomplete ({reason})"
                ))));
            }
            "error" => {
                let error = match parsed.error {
                    Some(error @ Value::Object(_)) => error,
                    _ => json!({"code": parsed.code, "message": parsed.message}),
                };
                return Err(error_failure(&error));
            }
            // `response.created`, `response.in_progress`, content parts, reasoning summary
            // deltas and whatever the API adds later.
            _ => {}
        }
        Ok(Progress::More)
    }

    fn finish(self) -> Result<ModelResponse, Failure> {
        if !self.completed {
            return Err(Failure::retry("the stream ended before response.completed"));
        }
        Ok(ModelResponse {
            items: self.items.into_values().collect(),
            usage: self.usage,
        })
    }
}

/// An output item in our history's shape; `None` for item types arbor does not use.
fn convert(item: &Value, partial: Partial) -> Option<ResponseItem> {
    match item.get("type").and_then(Value::as_str)? {
        "message" => {
            let mut content = String::new();
            for part in item
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let text = part.get("text").or_else(|| part.get("refusal"));
                content.push_str(text.and_then(Value::as_str).unwrap_or_default());
            }
            if content.is_empty() {
                content = partial.text;
            }
            Some(ResponseItem::Message {
                role: text_field(item, "role").unwrap_or_else(|| "assistant".to_string()),
                content,
            })
        }
        "function_call" => {
            let arguments = text_field(item, "arguments")
                .filter(|a| !a.is_empty())
                .or(partial.arguments_done)
                .unwrap_or(partial.arguments);
            Some(ResponseItem::FunctionCall {
                call_id: text_field(item, "call_id")
                    .or(partial.call_id)
                    .or_else(|| text_field(item, "id"))?,
                name: text_field(item, "name").or(partial.name)?,
                arguments: if arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    arguments
                },
            })
        }
        "reasoning" => {
            let summary = item
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|part| text_field(part, "text"))
                .collect();
            Some(ResponseItem::Reasoning {
                summary,
                encrypted_content: text_field(item, "encrypted_content"),
            })
        }
        _ => None,
    }
}

fn text_field(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_string)
}

/// `usage` of a completed response.
fn usage(value: &Value) -> Usage {
    let number = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: number("/input_tokens"),
        cached_input_tokens: number("/input_tokens_details/cached_tokens"),
        output_tokens: number("/output_tokens"),
    }
}

/// An `error` object (`{code, message}`) as a failure.
fn error_failure(error: &Value) -> Failure {
    let code = error.get("code").and_then(Value::as_str);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no error message");
    stream_error(code, message)
}

/// The start of a bad event's data, for the error message.
pub(crate) fn excerpt(data: &str) -> String {
    arbor_protocol::text::truncate_middle(data, 200)
}

#[cfg(test)]
mod tests;
