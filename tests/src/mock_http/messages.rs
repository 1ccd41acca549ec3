//! The Anthropic Messages API side of the mock server: the event streams it sends (text,
//! `tool_use` with `input_json_delta`, thinking with a signature the mock makes), its error
//! bodies, and [`check_request`], which refuses a request the real API would refuse (the
//! headers, the body's fields, the history's rules, the cache breakpoints, the thinking blocks'
//! signatures) so that a mock server can answer it with a 400 as the API does.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{Output, Recorded, Reply, USAGE};

/// The version every request must name.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The signature the mock gives a thinking block: a checksum of its text, so that a block sent
/// back changed (or with another block's signature) is caught.
pub fn signature_of(thinking: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in thinking.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("sig{hash:016x}")
}

fn event(data: &Value) -> String {
    let kind = data["type"].as_str().unwrap_or_default();
    format!("event: {kind}\ndata: {data}\n\n")
}

fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The events of a Messages stream answering with `outputs` and stopping for `stop_reason`
/// (`None`: `tool_use` when it calls, else `end_turn`). Usage: [`USAGE`], its cached part read
/// from the cache.
pub fn messages_events_stopping(outputs: &[Output], stop_reason: Option<&str>) -> Vec<String> {
    let (input, cached, output) = USAGE;
    let mut events = vec![event(&json!({"type": "message_start", "message": {
        "id": "msg_mock", "type": "message", "role": "assistant", "content": [],
        "model": "mock", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input - cached, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": cached, "output_tokens": 1}}}))];
    events.push(event(&json!({"type": "ping"})));
    let mut calls = false;
    for (index, output) in outputs.iter().enumerate() {
        let delta = |delta: Value| {
            event(&json!({"type": "content_block_delta", "index": index, "delta": delta}))
        };
        let start = |block: Value| {
            event(&json!({"type": "content_block_start", "index": index, "content_block": block}))
        };
        match output {
            Output::Text(text) => {
                events.push(start(json!({"type": "text", "text": ""})));
                for piece in pieces(text, 3) {
                    events.push(delta(json!({"type": "text_delta", "text": piece})));
                }
            }
            Output::Call(id, name, arguments) => {
                calls = true;
                events.push(start(
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                ));
                events.push(delta(
                    json!({"type": "input_json_delta", "partial_json": ""}),
                ));
                for piece in pieces(arguments, 4) {
                    events.push(delta(
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
            }
            Output::Thinking(text) => {
                events.push(start(
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ));
                for piece in pieces(text, 5) {
                    events.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                }
                events.push(delta(
                    json!({"type": "signature_delta", "signature": signature_of(text)}),
                ));
            }
        }
        events.push(event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let reason = stop_reason.unwrap_or(if calls { "tool_use" } else { "end_turn" });
    events.push(event(&json!({"type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": null},
        "usage": {"output_tokens": output}})));
    events.push(event(&json!({"type": "message_stop"})));
    events
}

/// [`messages_events_stopping`] with the stop reason the outputs imply.
pub fn messages_events(outputs: &[Output]) -> Vec<String> {
    messages_events_stopping(outputs, None)
}

/// Like [`messages_events`], for a response the output limit cut: `stop_reason: max_tokens`.
pub fn messages_events_cut(outputs: &[Output]) -> Vec<String> {
    messages_events_stopping(outputs, Some("max_tokens"))
}

/// An error as the API answers it: `{"type": "error", "error": {"type", "message"}}`.
pub fn messages_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

/// The events of a stream that starts to answer and then reports `kind` (`overloaded_error`).
pub fn messages_events_failing(kind: &str, message: &str) -> Vec<String> {
    let mut events = messages_events(&[Output::text("partial answer")]);
    // Keep the start and the text block's first delta; then the error.
    events.truncate(4);
    events.push(event(
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    ));
    events
}

/// Whether the real Messages API would take `request` (a `POST /v1/messages`); the error
/// reads as the API's `invalid_request_error` message does.
pub fn check_request(request: &Recorded) -> Result<(), String> {
    if request.path != "/v1/messages" {
        return Err(format!("unknown path {}", request.path));
    }
    if request.header("x-api-key").is_none_or(str::is_empty) {
        return Err("x-api-key header is required".into());
    }
    if request.header("authorization").is_some() {
        return Err("the key belongs in x-api-key, not authorization".into());
    }
    if request.header("anthropic-version") != Some(ANTHROPIC_VERSION) {
        return Err(format!(
            "anthropic-version must be {ANTHROPIC_VERSION}, not {:?}",
            request.header("anthropic-version")
        ));
    }
    let body = &request.body;
    if body["model"].as_str().is_none_or(str::is_empty) {
        return Err("model: field required".into());
    }
    let max_tokens = body["max_tokens"]
        .as_u64()
        .filter(|n| *n > 0)
        .ok_or("max_tokens: field required")?;
    let thinking = check_thinking(body, max_tokens)?;
    let tools = check_tools(body, thinking)?;
    let mut breakpoints = count_cache(&body["tools"])?;
    breakpoints += check_system(&body["system"])?;
    let messages = merged(
        body["messages"]
            .as_array()
            .ok_or("messages: field required")?,
    )?;
    breakpoints += check_messages(&messages, &tools, thinking)?;
    if breakpoints > 4 {
        return Err(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    Ok(())
}

fn check_thinking(body: &Value, max_tokens: u64) -> Result<bool, String> {
    let Some(thinking) = body.get("thinking") else {
        return Ok(false);
    };
    match thinking["type"].as_str() {
        Some("disabled") => Ok(false),
        Some("enabled") => {
            let budget = thinking["budget_tokens"]
                .as_u64()
                .ok_or("thinking.enabled.budget_tokens: Field required")?;
            if budget < 1024 {
                return Err("thinking.enabled.budget_tokens: must be at least 1024".into());
            }
            if budget >= max_tokens {
                return Err("`max_tokens` must be greater than `thinking.budget_tokens`".into());
            }
            Ok(true)
        }
        other => Err(format!("thinking.type: unknown value {other:?}")),
    }
}

fn check_tools(body: &Value, thinking: bool) -> Result<HashSet<String>, String> {
    let mut names = HashSet::new();
    for (at, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        let name = tool["name"].as_str().unwrap_or_default();
        let valid = (1..=128).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!("tools.{at}.name: String should match pattern"));
        }
        if tool["input_schema"]["type"] != "object" {
            return Err(format!(
                "tools.{at}.input_schema.type: Input should be 'object'"
            ));
        }
        if !names.insert(name.to_string()) {
            return Err("tools: Tool names must be unique.".into());
        }
    }
    if let Some(choice) = body.get("tool_choice") {
        let kind = choice["type"].as_str().unwrap_or_default();
        if !["auto", "any", "tool", "none"].contains(&kind) {
            return Err(format!("tool_choice.type: unknown value {kind}"));
        }
        if thinking && !["auto", "none"].contains(&kind) {
            return Err("Thinking may not be enabled when tool_choice forces tool use.".into());
        }
    }
    Ok(names)
}

fn check_system(system: &Value) -> Result<usize, String> {
    match system {
        Value::Null => Ok(0),
        Value::String(text) if !text.is_empty() => Ok(0),
        Value::Array(blocks) => {
            for (at, block) in blocks.iter().enumerate() {
                if block["type"] != "text" || !non_blank(&block["text"]) {
                    return Err(format!(
                        "system.{at}: text content blocks must be non-empty"
                    ));
                }
            }
            count_cache(system)
        }
        _ => Err("system: Input should be a valid string or list".into()),
    }
}

/// Breakpoints among the items of `list`; each must be `ephemeral`.
fn count_cache(list: &Value) -> Result<usize, String> {
    let mut count = 0;
    for item in list.as_array().into_iter().flatten() {
        if let Some(cache) = item.get("cache_control") {
            if cache["type"] != "ephemeral" {
                return Err("cache_control.type: Input should be 'ephemeral'".into());
            }
            count += 1;
        }
    }
    Ok(count)
}

fn non_blank(text: &Value) -> bool {
    text.as_str().is_some_and(|t| !t.trim().is_empty())
}

/// The messages as the API reads them: string content as one text block, consecutive
/// messages of one role joined.
fn merged(messages: &[Value]) -> Result<Vec<(String, Vec<Value>)>, String> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(format!(
                "messages.{at}.role: Input should be 'user' or 'assistant'"
            ));
        }
        let blocks = match &message["content"] {
            Value::String(text) if !text.trim().is_empty() => {
                vec![json!({"type": "text", "text": text})]
            }
            Value::Array(blocks) if !blocks.is_empty() => blocks.clone(),
            _ => {
                return Err(format!(
                    "messages.{at}: all messages must have non-empty content"
                ));
            }
        };
        match out.last_mut() {
            Some((last, content)) if last == role => content.extend(blocks),
            _ => out.push((role.to_string(), blocks)),
        }
    }
    if out.first().is_none_or(|(role, _)| role != "user") {
        return Err("messages: the first message must use the \"user\" role".into());
    }
    Ok(out)
}

/// The history's rules; returns the cache breakpoints it holds.
fn check_messages(
    messages: &[(String, Vec<Value>)],
    tools: &HashSet<String>,
    thinking: bool,
) -> Result<usize, String> {
    let mut breakpoints = 0;
    let mut ids = HashSet::new();
    let mut asked: Vec<String> = Vec::new();
    for (at, (role, blocks)) in messages.iter().enumerate() {
        let mut results_done = false;
        let mut answered = Vec::new();
        for (b, block) in blocks.iter().enumerate() {
            let kind = block["type"].as_str().unwrap_or_default();
            let here = format!("messages.{at}.content.{b}");
            if let Some(cache) = block.get("cache_control") {
                if matches!(kind, "thinking" | "redacted_thinking") {
                    return Err(format!("{here}: thinking blocks cannot be cached"));
                }
                if cache["type"] != "ephemeral" {
                    return Err(format!(
                        "{here}.cache_control.type: Input should be 'ephemeral'"
                    ));
                }
                breakpoints += 1;
            }
            match (role.as_str(), kind) {
                (_, "text") => {
                    if !non_blank(&block["text"]) {
                        return Err(format!(
                            "{here}: text content blocks must contain non-whitespace text"
                        ));
                    }
                    results_done = true;
                }
                ("assistant", "tool_use") => {
                    let id = block["id"].as_str().unwrap_or_default();
                    if id.is_empty()
                        || !id
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        return Err(format!(
                            "{here}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        ));
                    }
                    if !ids.insert(id.to_string()) {
                        return Err(format!("{here}: `tool_use` ids must be unique"));
                    }
                    if !tools.contains(block["name"].as_str().unwrap_or_default()) {
                        return Err(format!(
                            "{here}: tool_use names a tool the request does not define"
                        ));
                    }
                    if !block["input"].is_object() {
                        return Err(format!("{here}.input: Input should be a valid dictionary"));
                    }
                }
                ("assistant", "thinking") => {
                    let text = block["thinking"].as_str().unwrap_or_default();
                    if block["signature"].as_str() != Some(signature_of(text).as_str()) {
                        return Err(format!("{here}: Invalid `signature` in `thinking` block"));
                    }
                }
                ("assistant", "redacted_thinking") if non_blank(&block["data"]) => {}
                ("user", "tool_result") => {
                    if results_done {
                        return Err(format!(
                            "{here}: tool_result blocks must come first in the message content"
                        ));
                    }
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if !asked.iter().any(|a| a == id) {
                        return Err(format!(
                            "{here}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                    answered.push(id.to_string());
                }
                _ => {
                    return Err(format!(
                        "{here}: a {role} message cannot hold a `{kind}` block"
                    ));
                }
            }
        }
        if role == "user" {
            let missing: Vec<&String> = asked.iter().filter(|id| !answered.contains(id)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing:?}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    at - 1
                ));
            }
            asked.clear();
        } else {
            asked = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str().map(str::to_string))
                .collect();
        }
    }
    let last = messages.len() - 1;
    if !asked.is_empty() {
        return Err(format!(
            "messages.{last}: the request ends with `tool_use` blocks that have no results"
        ));
    }
    if thinking {
        let (role, blocks) = &messages[last];
        let continues = role == "user" && blocks.iter().any(|b| b["type"] == "tool_result");
        if role == "assistant" {
            return Err(
                "When thinking is enabled, the final message may not be an assistant prefill"
                    .into(),
            );
        }
        if continues {
            let first = &messages[last - 1].1[0]["type"];
            if first != "thinking" && first != "redacted_thinking" {
                return Err(format!(
                    "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.",
                    last - 1,
                    first.as_str().unwrap_or_default()
                ));
            }
        }
    }
    Ok(breakpoints)
}
