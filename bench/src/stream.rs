//! Streaming parse throughput of the HTTP providers: a large synthetic response body in each
//! wire format (Responses events, Chat Completions chunks, Messages events) decoded from
//! 16 KiB reads, exactly as a provider reads one off the network. Reports SSE framing alone and
//! full decoding, with the time each takes per MiB of stream.

use std::time::Instant;

use arbor_model::sse::SseParser;
use arbor_model::{ProviderKind, decode_stream};
use serde_json::{Value, json};

/// Output items per synthetic response: half messages, half tool calls.
const ITEMS: usize = 2_000;
/// Characters per delta, about what models stream.
const DELTA_CHARS: usize = 4;
/// Characters of text (or arguments) per item.
const ITEM_CHARS: usize = 400;
/// Bytes per read.
const READ_BYTES: usize = 16 * 1024;
/// Timed rounds; the best is reported.
const ROUNDS: usize = 5;

pub fn run() -> Result<(), String> {
    // Chat Completions has one message per response: its text deltas make one item.
    for (format, kind, body, expected) in [
        ("responses", ProviderKind::OpenAi, responses_body(), ITEMS),
        ("chat", ProviderKind::Chat, chat_body(), 1 + ITEMS / 2),
        ("messages", ProviderKind::Anthropic, messages_body(), ITEMS),
    ] {
        let reads: Vec<&[u8]> = body.as_bytes().chunks(READ_BYTES).collect();
        // SSE framing alone.
        let (seconds, events) = best_of(|| {
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            let mut events = 0;
            for read in &reads {
                parser.feed(read, &mut out).map_err(|e| e.to_string())?;
                events += out.len();
                out.clear();
            }
            parser.finish(&mut out).map_err(|e| e.to_string())?;
            Ok(events + out.len())
        })?;
        report(format, "sse", body.len(), events, 0, seconds);
        // Framing, JSON and the provider's decoder: what a response costs to read.
        let mut items = 0;
        let (seconds, events) = best_of(|| {
            let decoded = decode_stream(kind, reads.iter().copied()).map_err(|e| e.to_string())?;
            items = decoded.response.items.len();
            Ok(decoded.events)
        })?;
        if items != expected {
            return Err(format!(
                "{format}: decoded {items} items, expected {expected}"
            ));
        }
        report(format, "decode", body.len(), events, items, seconds);
    }
    Ok(())
}

fn best_of(mut round: impl FnMut() -> Result<usize, String>) -> Result<(f64, usize), String> {
    let mut best = f64::MAX;
    let mut count = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        count = round()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok((best, count))
}

fn report(format: &str, layer: &str, bytes: usize, events: usize, items: usize, seconds: f64) {
    crate::report(json!({
        "bench": "stream_parse",
        "format": format,
        "layer": layer,
        "bytes": bytes,
        "read_bytes": READ_BYTES,
        "events": events,
        "items": items,
        "seconds": seconds,
        "events_per_sec": (events as f64 / seconds).round(),
        "mib_per_sec": (bytes as f64 / seconds / (1024.0 * 1024.0) * 10.0).round() / 10.0,
        "ms_per_mib": (seconds * 1000.0 / (bytes as f64 / (1024.0 * 1024.0)) * 100.0).round() / 100.0,
    }));
}

/// Deterministic text of `ITEM_CHARS` characters, cut into deltas.
fn deltas(seed: usize) -> Vec<String> {
    let text: String = (0..ITEM_CHARS)
        .map(|i| char::from(b'a' + u8::try_from((i * 7 + seed) % 26).unwrap_or(0)))
        .collect();
    text.as_bytes()
        .chunks(DELTA_CHARS)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

fn responses_body() -> String {
    let mut body = String::new();
    let mut event = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_string();
        body.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event(
        json!({"type": "response.created", "response": {"id": "resp_bench", "status": "in_progress"}}),
    );
    for index in 0..ITEMS {
        let pieces = deltas(index);
        let whole = pieces.concat();
        if index % 2 == 0 {
            event(
                json!({"type": "response.output_item.added", "output_index": index,
                "item": {"type": "message", "role": "assistant", "content": []}}),
            );
            for delta in &pieces {
                event(
                    json!({"type": "response.output_text.delta", "item_id": "msg", "output_index": index,
                    "content_index": 0, "delta": delta}),
                );
            }
            event(
                json!({"type": "response.output_item.done", "output_index": index,
                "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": whole}]}}),
            );
        } else {
            let call_id = format!("call_{index}");
            event(
                json!({"type": "response.output_item.added", "output_index": index,
                "item": {"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": ""}}),
            );
            for delta in &pieces {
                event(
                    json!({"type": "response.function_call_arguments.delta", "item_id": "fc",
                    "output_index": index, "delta": delta}),
                );
            }
            event(
                json!({"type": "response.output_item.done", "output_index": index,
                "item": {"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": whole}}),
            );
        }
    }
    event(
        json!({"type": "response.completed", "response": {"id": "resp_bench", "status": "completed",
        "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1000}}}),
    );
    body
}

fn chat_body() -> String {
    let mut body = String::new();
    let mut chunk = |delta: Value, finish: Value| {
        let data = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        body.push_str(&format!("data: {data}\n\n"));
    };
    // The text first, then the calls: as much text and as many calls as the Responses body.
    let messages = ITEMS / 2;
    for index in 0..messages {
        for delta in deltas(index) {
            chunk(json!({"content": delta}), Value::Null);
        }
        chunk(json!({"content": " "}), Value::Null);
    }
    for call in 0..ITEMS - messages {
        chunk(
            json!({"tool_calls": [{"index": call, "id": format!("call_{call}"), "type": "function",
                "function": {"name": "exec_command", "arguments": ""}}]}),
            Value::Null,
        );
        for delta in deltas(call) {
            chunk(
                json!({"tool_calls": [{"index": call, "function": {"arguments": delta}}]}),
                Value::Null,
            );
        }
    }
    chunk(json!({}), Value::from("tool_calls"));
    body.push_str("data: [DONE]\n\n");
    body
}

/// A Messages stream: text blocks and `tool_use` blocks alternating, as many and as long as
/// the Responses body's items, each with its start, deltas and stop.
fn messages_body() -> String {
    let mut body = String::new();
    let mut event = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_string();
        body.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event(
        json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
        "role": "assistant", "content": [], "model": "bench", "stop_reason": null,
        "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 1}}}),
    );
    for index in 0..ITEMS {
        let pieces = deltas(index);
        if index % 2 == 0 {
            event(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}));
            for delta in &pieces {
                event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": delta}}));
            }
        } else {
            event(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": format!("toolu_{index}"),
                                  "name": "exec_command", "input": {}}}));
            for delta in &pieces {
                event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": delta}}));
            }
        }
        event(json!({"type": "content_block_stop", "index": index}));
    }
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 1000}}),
    );
    event(json!({"type": "message_stop"}));
    body
}
