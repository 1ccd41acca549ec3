//! Builders of the Responses and Chat Completions event streams a mock server sends.

use serde_json::Value;

/// One output item of a scripted model response, for the stream builders below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// An assistant message.
    Text(String),
    /// A function call: call id, name, arguments (JSON text).
    Call(String, String, String),
    /// Reasoning: a thinking block (Messages, signed by the mock), a reasoning item with
    /// encrypted content (Responses); Chat Completions has none.
    Thinking(String),
}

impl Output {
    pub fn text(text: &str) -> Self {
        Self::Text(text.to_string())
    }

    pub fn call(call_id: &str, name: &str, arguments: &Value) -> Self {
        Self::Call(call_id.to_string(), name.to_string(), arguments.to_string())
    }

    pub fn thinking(text: &str) -> Self {
        Self::Thinking(text.to_string())
    }
}

/// Token counts every built stream reports.
pub const USAGE: (u64, u64, u64) = (100, 40, 20);

/// `text` cut into pieces of `size` characters, as a model streams deltas.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The events of a Responses API stream (each a complete `event:`/`data:` block) that answers
/// with `outputs`: created, then per item added / deltas / done, then completed with usage.
pub fn responses_events(outputs: &[Output]) -> Vec<String> {
    let event = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_string();
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let mut events = vec![event(
        serde_json::json!({"type": "response.created", "sequence_number": 0,
        "response": {"id": "resp_mock", "object": "response", "status": "in_progress", "output": []}}),
    )];
    let mut done_items = Vec::new();
    for (index, output) in outputs.iter().enumerate() {
        let item = match output {
            Output::Text(text) => {
                let id = format!("msg_{index}");
                events.push(event(serde_json::json!({"type": "response.output_item.added", "output_index": index,
                    "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}})));
                for delta in pieces(text, 3) {
                    events.push(event(
                        serde_json::json!({"type": "response.output_text.delta",
                        "item_id": id, "output_index": index, "content_index": 0, "delta": delta}),
                    ));
                }
                events.push(event(
                    serde_json::json!({"type": "response.output_text.done",
                    "item_id": id, "output_index": index, "content_index": 0, "text": text}),
                ));
                serde_json::json!({"type": "message", "id": id, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]})
            }
            Output::Thinking(text) => {
                let item = serde_json::json!({"type": "reasoning", "id": format!("rs_{index}"),
                    "summary": [{"type": "summary_text", "text": text}],
                    "encrypted_content": format!("enc:{text}")});
                events.push(event(
                    serde_json::json!({"type": "response.output_item.added",
                    "output_index": index, "item": item}),
                ));
                item
            }
            Output::Call(call_id, name, arguments) => {
                let id = format!("fc_{index}");
                events.push(event(
                    serde_json::json!({"type": "response.output_item.added", "output_index": index,
                    "item": {"type": "function_call", "id": id, "call_id": call_id, "name": name,
                             "arguments": "", "status": "in_progress"}}),
                ));
                for delta in pieces(arguments, 4) {
                    events.push(event(
                        serde_json::json!({"type": "response.function_call_arguments.delta",
                        "item_id": id, "output_index": index, "delta": delta}),
                    ));
                }
                events.push(event(
                    serde_json::json!({"type": "response.function_call_arguments.done",
                    "item_id": id, "output_index": index, "arguments": arguments}),
                ));
                serde_json::json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
                    "arguments": arguments, "status": "completed"})
            }
        };
        events.push(event(
            serde_json::json!({"type": "response.output_item.done",
            "output_index": index, "item": item}),
        ));
        done_items.push(item);
    }
    let (input, cached, output) = USAGE;
    events.push(event(
        serde_json::json!({"type": "response.completed", "response": {
        "id": "resp_mock", "object": "response", "status": "completed", "output": done_items,
        "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
                  "output_tokens": output, "total_tokens": input + output}}}),
    ));
    events
}

/// Like [`responses_events`], for a response the output limit cut: it ends with
/// `response.incomplete` (reason `max_output_tokens`) instead of `response.completed`.
pub fn responses_events_cut(outputs: &[Output]) -> Vec<String> {
    let mut events = responses_events(outputs);
    if let Some(last) = events.pop() {
        let data = last
            .split_once("data: ")
            .map_or("", |(_, data)| data.trim());
        let mut completed: Value = serde_json::from_str(data).unwrap_or_default();
        completed["type"] = "response.incomplete".into();
        completed["response"]["status"] = "incomplete".into();
        completed["response"]["incomplete_details"] =
            serde_json::json!({"reason": "max_output_tokens"});
        events.push(format!("event: response.incomplete\ndata: {completed}\n\n"));
    }
    events
}

/// Like [`chat_events`], for a response the output limit cut: `finish_reason: length`.
pub fn chat_events_cut(outputs: &[Output]) -> Vec<String> {
    chat_events_finishing(outputs, Some("length"))
}

/// The events of a Chat Completions stream that answers with `outputs` (text first, then the
/// calls): a role chunk, content and tool-call deltas, the finish chunk, usage, `[DONE]`.
pub fn chat_events(outputs: &[Output]) -> Vec<String> {
    chat_events_finishing(outputs, None)
}

/// [`chat_events`] with `finish` as the finish reason (default: `tool_calls` or `stop`).
fn chat_events_finishing(outputs: &[Output], finish: Option<&str>) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let data = serde_json::json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
            "created": 1, "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {data}\n\n")
    };
    let mut events = vec![chunk(
        serde_json::json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut calls = 0;
    for output in outputs {
        match output {
            Output::Text(text) => {
                for delta in pieces(text, 3) {
                    events.push(chunk(serde_json::json!({"content": delta}), Value::Null));
                }
            }
            Output::Thinking(_) => {}
            Output::Call(call_id, name, arguments) => {
                events.push(chunk(
                    serde_json::json!({"tool_calls": [{"index": calls, "id": call_id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for delta in pieces(arguments, 4) {
                    events.push(chunk(
                        serde_json::json!({"tool_calls": [{"index": calls, "function": {"arguments": delta}}]}),
                        Value::Null,
                    ));
                }
                calls += 1;
            }
        }
    }
    let finish = finish.unwrap_or(if calls > 0 { "tool_calls" } else { "stop" });
    events.push(chunk(serde_json::json!({}), Value::from(finish)));
    let (input, cached, output) = USAGE;
    let usage = serde_json::json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
                  "prompt_tokens_details": {"cached_tokens": cached}}});
    events.push(format!("data: {usage}\n\n"));
    events.push("data: [DONE]\n\n".to_string());
    events
}

/// `text` cut into reads of `size` bytes: events split across reads, reads ending mid-event.
pub fn split_every(text: &str, size: usize) -> Vec<Vec<u8>> {
    text.as_bytes()
        .chunks(size.max(1))
        .map(<[u8]>::to_vec)
        .collect()
}
