//! The Messages API: decoding recorded streams (text, parallel calls, thinking, the output
//! limit, errors) and the request body (field order, limits, thinking, cache breakpoints).

use arbor_protocol::{AgentPath, ResponseItem, Thinking, ThreadId, ToolSpec, Usage};
use serde_json::{Value, json};

use super::*;
use crate::recorded::decode_stream;
use crate::{AgentIdentity, Finish, ProviderKind};

fn event(data: &Value) -> String {
    let kind = data["type"].as_str().unwrap_or_default();
    format!("event: {kind}\ndata: {data}\n\n")
}

fn start(input: u64, written: u64, read: u64) -> String {
    event(
        &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null,
        "usage": {"input_tokens": input, "cache_creation_input_tokens": written,
                  "cache_read_input_tokens": read, "output_tokens": 1}}}),
    )
}

fn block_start(index: u64, block: &Value) -> String {
    event(&json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn delta(index: u64, delta: &Value) -> String {
    event(&json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn stop(index: u64) -> String {
    event(&json!({"type": "content_block_stop", "index": index}))
}

fn end(reason: &str, output: u64) -> String {
    event(
        &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
        "usage": {"output_tokens": output}}),
    ) + &event(&json!({"type": "message_stop"}))
}

/// Decodes `text` fed in reads of `size` bytes.
fn decode(text: &str, size: usize) -> Result<crate::DecodedStream, ModelError> {
    decode_stream(ProviderKind::Anthropic, text.as_bytes().chunks(size))
}

fn call(id: &str, name: &str, arguments: &str) -> ResponseItem {
    ResponseItem::FunctionCall {
        call_id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn text(role: &str, content: &str) -> ResponseItem {
    ResponseItem::Message {
        role: role.into(),
        content: content.into(),
    }
}

#[test]
fn text_and_parallel_calls_decode_at_every_split() {
    let stream = [
        start(10, 200, 3000),
        event(&json!({"type": "ping"})),
        block_start(0, &json!({"type": "text", "text": ""})),
        delta(0, &json!({"type": "text_delta", "text": "Looking "})),
        delta(0, &json!({"type": "text_delta", "text": "around."})),
        stop(0),
        block_start(
            1,
            &json!({"type": "tool_use", "id": "toolu_1", "name": "exec_command", "input": {}}),
        ),
        delta(1, &json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            1,
            &json!({"type": "input_json_delta", "partial_json": "{\"cmd\": \"l"}),
        ),
        delta(
            1,
            &json!({"type": "input_json_delta", "partial_json": "s\"}"}),
        ),
        stop(1),
        block_start(
            2,
            &json!({"type": "tool_use", "id": "toolu_2", "name": "list_agents", "input": {}}),
        ),
        stop(2),
        end("tool_use", 42),
    ]
    .concat();
    for size in [1, 2, 7, 64, stream.len()] {
        let decoded = decode(&stream, size).expect("decodes");
        assert_eq!(
            decoded.response.items,
            [
                text("assistant", "Looking around."),
                call("toolu_1", "exec_command", "{\"cmd\": \"ls\"}"),
                call("toolu_2", "list_agents", "{}"),
            ],
            "reads of {size} bytes"
        );
        assert_eq!(decoded.items_reported, 3);
        assert_eq!(decoded.response.finish, Finish::Completed);
        assert_eq!(
            decoded.response.usage,
            Some(Usage {
                input_tokens: 3210,
                cached_input_tokens: 3000,
                cache_write_tokens: 200,
                output_tokens: 42,
                compaction_tokens: 0,
            })
        );
    }
}

#[test]
fn thinking_keeps_its_signature_and_redacted_thinking_its_data() {
    let stream = [
        start(5, 0, 0),
        block_start(0, &json!({"type": "thinking", "thinking": ""})),
        delta(0, &json!({"type": "thinking_delta", "thinking": "First, "})),
        delta(
            0,
            &json!({"type": "thinking_delta", "thinking": "list files."}),
        ),
        delta(
            0,
            &json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        ),
        stop(0),
        block_start(
            1,
            &json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3"}),
        ),
        stop(1),
        block_start(2, &json!({"type": "text", "text": "Done."})),
        stop(2),
        end("end_turn", 9),
    ]
    .concat();
    let items = decode(&stream, 5).expect("decodes").response.items;
    assert_eq!(
        items,
        [
            ResponseItem::Reasoning {
                summary: vec!["First, list files.".into()],
                encrypted_content: None,
                thinking: Some(Box::new(Thinking::Thinking {
                    signature: "EqQBCgIYAhIM".into()
                })),
            },
            ResponseItem::Reasoning {
                summary: Vec::new(),
                encrypted_content: None,
                thinking: Some(Box::new(Thinking::RedactedThinking {
                    data: "EmwKAhgBEgy3".into()
                })),
            },
            text("assistant", "Done."),
        ]
    );
}

#[test]
fn the_output_limit_keeps_a_call_cut_mid_way() {
    let stream = [
        start(5, 0, 0),
        block_start(0, &json!({"type": "text", "text": "Editing."})),
        stop(0),
        block_start(
            1,
            &json!({"type": "tool_use", "id": "toolu_9", "name": "exec_command", "input": {}}),
        ),
        delta(
            1,
            &json!({"type": "input_json_delta", "partial_json": "{\"cmd\": \"sed -i s/a/"}),
        ),
        stop(1),
        end("max_tokens", 4096),
    ]
    .concat();
    let response = decode(&stream, 13).expect("decodes").response;
    assert_eq!(response.finish, Finish::OutputLimit);
    assert_eq!(
        response.items,
        [
            text("assistant", "Editing."),
            call("toolu_9", "exec_command", "{\"cmd\": \"sed -i s/a/")
        ]
    );
    assert!(crate::arguments::problem("{\"cmd\": \"sed -i s/a/").is_some());
}

#[test]
fn errors_in_the_stream_are_retried_or_not_by_their_type() {
    let broken = |kind: &str| {
        [
            start(5, 0, 0),
            block_start(0, &json!({"type": "text", "text": "Hel"})),
            event(&json!({"type": "error", "error": {"type": kind, "message": "Overloaded"}})),
        ]
        .concat()
    };
    // One attempt: a retryable failure reads as a transport error.
    assert_eq!(
        decode(&broken("overloaded_error"), 9).map(|_| ()),
        Err(ModelError::Transport("overloaded: Overloaded".into()))
    );
    assert_eq!(
        decode(&broken("rate_limit_error"), 9).map(|_| ()),
        Err(ModelError::RateLimited)
    );
    assert_eq!(
        decode(&broken("invalid_request_error"), 9).map(|_| ()),
        Err(ModelError::Failed(
            "invalid_request_error: Overloaded".into()
        ))
    );
    let unfinished = [start(5, 0, 0), block_start(0, &json!({"type": "text"}))].concat();
    assert_eq!(
        decode(&unfinished, 4).map(|_| ()),
        Err(ModelError::Transport(
            "the stream ended before the message stopped".into()
        ))
    );
    let refused = [start(5, 0, 0), end("refusal", 1)].concat();
    assert!(matches!(
        decode(&refused, 4),
        Err(ModelError::Failed(message)) if message.contains("refusal")
    ));
}

#[test]
fn a_repeated_call_id_runs_once() {
    let block = json!({"type": "tool_use", "id": "toolu_1", "name": "list_agents", "input": {}});
    let stream = [
        start(5, 0, 0),
        block_start(0, &block),
        stop(0),
        block_start(1, &block),
        stop(1),
        end("tool_use", 3),
    ]
    .concat();
    let decoded = decode(&stream, 64).expect("decodes");
    assert_eq!(
        decoded.response.items,
        [call("toolu_1", "list_agents", "{}")]
    );
    assert_eq!(decoded.items_reported, 1);
}

fn request(input: Vec<ResponseItem>, effort: Option<&str>, limit: Option<u32>) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::root(),
            nickname: None,
            role: "default".into(),
        },
        provider: None,
        model: "claude-test".into(),
        reasoning_effort: effort.map(str::to_string),
        instructions: "be brief".into(),
        input: input.into(),
        tools: std::sync::Arc::new(vec![
            ToolSpec {
                name: "exec_command".into(),
                description: "Run a command.".into(),
                parameters: json!({"type": "object", "properties": {"cmd": {"type": "string"}}}),
            },
            ToolSpec {
                name: "list_agents".into(),
                description: "List the agents.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ]),
        parallel_tool_calls: true,
        max_output_tokens: limit,
    }
}

fn body(request: &ModelRequest) -> (String, Value) {
    let bytes = request_body(request).expect("encodes");
    let text = String::from_utf8(bytes).expect("utf-8");
    let value = serde_json::from_str(&text).expect("json");
    (text, value)
}

#[test]
fn the_body_puts_the_stable_prefix_first_and_marks_it_for_the_cache() {
    let (text, value) = body(&request(vec![text("user", "hi")], None, None));
    let at = |key: &str| text.find(&format!("\"{key}\":")).expect(key);
    assert!(at("model") < at("tools") && at("tools") < at("system"));
    assert!(at("system") < at("messages"), "{text}");
    assert_eq!(value["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(value["stream"], true);
    assert_eq!(
        value["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": false})
    );
    assert_eq!(value["tools"][0].get("cache_control"), None);
    assert_eq!(
        value["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(value["tools"][1]["input_schema"]["type"], "object");
    assert_eq!(
        value["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        value["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );
    assert!(value.get("thinking").is_none());
}

#[test]
fn effort_turns_thinking_on_within_the_output_limit() {
    let (_, value) = body(&request(vec![text("user", "hi")], Some("medium"), None));
    assert_eq!(
        value["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert_eq!(value["max_tokens"], 8192 + ANSWER_TOKENS);
    // A configured limit holds; the budget stays below it.
    let (_, value) = body(&request(vec![text("user", "hi")], Some("high"), Some(4000)));
    assert_eq!(value["max_tokens"], 4000);
    assert_eq!(
        value["thinking"]["budget_tokens"],
        4000 - MIN_THINKING_BUDGET
    );
    // Too small a limit for any budget, or no effort: no thinking.
    for (effort, limit) in [(Some("high"), Some(1500)), (Some("none"), None)] {
        let (_, value) = body(&request(vec![text("user", "hi")], effort, limit));
        assert!(value.get("thinking").is_none(), "{effort:?} {limit:?}");
    }
}

#[test]
fn a_tool_loop_from_another_api_turns_thinking_off() {
    let from_openai = vec![
        text("user", "hi"),
        ResponseItem::Reasoning {
            summary: vec!["plan".into()],
            encrypted_content: Some("gAAAA".into()),
            thinking: None,
        },
        call("call_1", "list_agents", "{}"),
        ResponseItem::FunctionCallOutput {
            call_id: "call_1".into(),
            output: "[]".into(),
        },
    ];
    let (_, value) = body(&request(from_openai.clone(), Some("low"), None));
    assert!(value.get("thinking").is_none(), "{value}");
    // The OpenAI reasoning is not sent.
    assert_eq!(value["messages"][1]["content"][0]["type"], "tool_use");
    let mut own = from_openai;
    own[1] = ResponseItem::Reasoning {
        summary: vec!["plan".into()],
        encrypted_content: None,
        thinking: Some(Box::new(Thinking::Thinking {
            signature: "sig".into(),
        })),
    };
    let (_, value) = body(&request(own, Some("low"), None));
    assert_eq!(value["thinking"]["budget_tokens"], 2048);
    assert_eq!(
        value["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "plan", "signature": "sig"})
    );
}
