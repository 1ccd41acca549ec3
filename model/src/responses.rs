//! The `openai` provider: the OpenAI Responses API, `POST {base_url}/responses`, streamed.
//!
//! Requests are stateless (`store: false`): the whole history goes every time, reasoning
//! items with their `encrypted_content` included. Every output item is reported as soon as its
//! `response.output_item.done` arrives (and the items before it are done), so a tool call can
//! start before the stream ends; the response is complete at `response.completed`, or at a
//! `response.incomplete` that the output limit caused (`decoder.rs`).

mod decoder;

use arbor_protocol::{ResponseItem, Usage};
use serde_json::{Value, json};

use decoder::Partial;
pub(crate) use decoder::ResponsesDecoder;

use crate::http::HttpClient;
use crate::retry::{Failure, stream_error};
use crate::{
    BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse, ProviderKind,
    arguments,
};

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
                "arguments": arguments::for_history(arguments),
            })),
            ResponseItem::FunctionCallOutput { call_id, output } => Some(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": output,
            })),
            // Without its encrypted content (and without `store`), the server cannot use a
            // reasoning item, so only those that carry it go back (`ProviderKind::takes`).
            ResponseItem::Reasoning { .. } if !ProviderKind::OpenAi.takes(item) => None,
            ResponseItem::Reasoning {
                summary,
                encrypted_content,
                ..
            } => {
                passes_reasoning = true;
                let summary: Vec<Value> = summary
                    .iter()
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect();
                Some(json!({
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": encrypted_content,
                }))
            }
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !request.instructions.is_empty() {
        body["instructions"] = json!(&*request.instructions);
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
    if let Some(limit) = request.max_output_tokens {
        body["max_output_tokens"] = json!(limit);
    }
    if request.reasoning_effort.is_some() || passes_reasoning {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    body
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
                thinking: None,
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
        ..Usage::default()
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

#[cfg(test)]
mod tests;
