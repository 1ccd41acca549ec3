//! Chat Completions: the messages built from a history, and decoding of recorded chunks.

use arbor_protocol::{AgentPath, ThreadId, ToolSpec};

use super::*;
use crate::recorded::decode_stream;
use crate::{AgentIdentity, ProviderKind};

fn request(input: Vec<ResponseItem>, tools: Vec<ToolSpec>) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::root(),
            nickname: None,
            role: "default".to_string(),
        },
        provider: None,
        model: "llama3".to_string(),
        reasoning_effort: None,
        instructions: "be brief".into(),
        input: input.into(),
        tools: tools.into(),
        parallel_tool_calls: false,
        max_output_tokens: None,
    }
}

fn sse(chunks: &[Value]) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

fn decode_text(text: &str) -> Result<ModelResponse, ModelError> {
    decode_stream(ProviderKind::Chat, [text.as_bytes()]).map(|d| d.response)
}

fn delta(delta: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage() -> Value {
    json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 8}}})
}

fn call(call_id: &str, name: &str, arguments: &str) -> ResponseItem {
    ResponseItem::FunctionCall {
        call_id: call_id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[test]
fn the_history_becomes_messages_with_tool_calls_and_tool_results() {
    let input = vec![
        ResponseItem::Message {
            role: "user".into(),
            content: "hi".into(),
        },
        ResponseItem::Message {
            role: "developer".into(),
            content: "note".into(),
        },
        ResponseItem::Reasoning {
            summary: vec![],
            encrypted_content: Some("x".into()),
            thinking: None,
        },
        ResponseItem::Message {
            role: "assistant".into(),
            content: "looking".into(),
        },
        call("c1", "a", "{}"),
        call("c2", "b", "{\"x\":1}"),
        ResponseItem::FunctionCallOutput {
            call_id: "c1".into(),
            output: "one".into(),
        },
        ResponseItem::FunctionCallOutput {
            call_id: "c2".into(),
            output: "two".into(),
        },
        call("c3", "a", "{}"),
    ];
    let tools = vec![ToolSpec {
        name: "a".into(),
        description: "does a".into(),
        parameters: json!({"type": "object"}),
    }];
    let body = request_body(&request(input, tools), LimitField::MaxTokens);
    assert_eq!(
        body,
        json!({
            "model": "llama3",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "system", "content": "note"},
                {"role": "assistant", "content": "looking", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{\"x\":1}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "one"},
                {"role": "tool", "tool_call_id": "c2", "content": "two"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c3", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                ]},
            ],
            "tools": [{"type": "function", "function": {"name": "a", "description": "does a", "parameters": {"type": "object"}}}],
            "tool_choice": "auto",
            "parallel_tool_calls": false,
        })
    );
}

#[test]
fn content_deltas_and_usage() {
    let text = sse(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"content": "hel"})),
        delta(json!({"content": "lo"})),
        finish("stop"),
        usage(),
    ]);
    assert_eq!(
        decode_text(&text),
        Ok(ModelResponse {
            items: vec![ResponseItem::Message {
                role: "assistant".into(),
                content: "hello".into()
            }],
            usage: Some(Usage {
                input_tokens: 20,
                cached_input_tokens: 8,
                output_tokens: 5,
                compaction_tokens: 0,
                cache_write_tokens: 0,
            }),
            finish: Finish::Completed,
            served_by: None,
        })
    );
}

#[test]
fn tool_calls_are_gathered_by_index() {
    let text = sse(&[
        delta(json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "spawn_agent", "arguments": ""}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"task"}}]})),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_agents", "arguments": ""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "_name\":\"w\"}"}}]})),
        finish("tool_calls"),
    ]);
    let decoded = decode_stream(ProviderKind::Chat, [text.as_bytes()]).expect("decodes");
    assert_eq!(
        decoded.response.items,
        [
            call("call_a", "spawn_agent", "{\"task_name\":\"w\"}"),
            call("call_b", "list_agents", "{}")
        ]
    );
    assert_eq!(decoded.items_reported, 2);
    assert_eq!(decoded.response.usage, None);
}

#[test]
fn calls_without_index_or_id_still_come_out_whole() {
    let text = sse(&[
        delta(json!({"tool_calls": [{"function": {"name": "a", "arguments": "{\"x\":"}}]})),
        delta(json!({"tool_calls": [{"function": {"arguments": "1}"}}]})),
        delta(
            json!({"tool_calls": [{"id": "call_2", "function": {"name": "b", "arguments": "{}"}}]}),
        ),
    ]);
    let items = decode_text(&text).expect("decodes").items;
    assert_eq!(items.len(), 2);
    match &items[0] {
        ResponseItem::FunctionCall {
            call_id,
            name,
            arguments,
        } => {
            assert!(call_id.starts_with("call_"), "{call_id}");
            assert_eq!((name.as_str(), arguments.as_str()), ("a", "{\"x\":1}"));
        }
        other => panic!("not a call: {other:?}"),
    }
    assert_eq!(items[1], call("call_2", "b", "{}"));
}

#[test]
fn the_end_of_the_stream_after_a_finish_reason_is_complete_without_done() {
    let text = format!(
        "data: {}\n\ndata: {}\n\n",
        delta(json!({"content": "ok"})),
        finish("stop")
    );
    assert_eq!(decode_text(&text).expect("decodes").items.len(), 1);
    let cut = format!("data: {}\n\n", delta(json!({"content": "ok"})));
    assert_eq!(
        decode_text(&cut),
        Err(ModelError::Transport(
            "the stream ended before the response finished".into()
        ))
    );
}

#[test]
fn errors_in_the_stream_and_bad_finishes() {
    let error = |body: Value| decode_text(&format!("data: {body}\n\n"));
    assert_eq!(
        error(json!({"error": {"message": "busy", "code": "rate_limit_exceeded"}})),
        Err(ModelError::RateLimited)
    );
    assert_eq!(
        error(json!({"error": {"message": "too long", "type": "invalid_request_error"}})),
        Err(ModelError::Failed("invalid_request_error: too long".into()))
    );
    assert_eq!(
        error(json!({"error": "model crashed"})),
        Err(ModelError::Transport(
            "the server reported an error: model crashed".into()
        ))
    );
    assert_eq!(
        decode_text(&sse(&[
            delta(json!({"content": "hidden"})),
            finish("content_filter")
        ])),
        Err(ModelError::Failed(
            "the response was filtered (finish_reason content_filter)".into()
        ))
    );
}

#[test]
fn the_output_limit_goes_out_as_the_field_the_server_reads() {
    let mut limited = request(vec![call("c1", "a", "{}")], Vec::new());
    limited.max_output_tokens = Some(512);
    let body = request_body(&limited, LimitField::MaxTokens);
    assert_eq!(
        (&body["max_tokens"], body.get("max_completion_tokens")),
        (&json!(512), None)
    );
    let body = request_body(&limited, LimitField::MaxCompletionTokens);
    assert_eq!(
        (body.get("max_tokens"), &body["max_completion_tokens"]),
        (None, &json!(512))
    );
    let body = request_body(&request(Vec::new(), Vec::new()), LimitField::MaxTokens);
    assert!(body.get("max_tokens").is_none(), "{body}");
    for (url, field) in [
        ("https://api.openai.com/v1", LimitField::MaxCompletionTokens),
        (
            "https://API.OpenAI.com:443/v1/",
            LimitField::MaxCompletionTokens,
        ),
        ("http://127.0.0.1:8080/v1", LimitField::MaxTokens),
        ("https://openrouter.ai/api/v1", LimitField::MaxTokens),
        (
            "https://api.openai.com.example.net/v1",
            LimitField::MaxTokens,
        ),
    ] {
        assert_eq!(LimitField::for_base_url(url), field, "{url}");
    }
}

#[test]
fn arguments_that_are_not_json_go_back_as_an_object_holding_the_text() {
    let cut = "{\"cmd\": \"sed -i s/fetch_data/";
    let body = request_body(
        &request(vec![call("c1", "exec_command", cut)], Vec::new()),
        LimitField::MaxTokens,
    );
    let sent = body["messages"][1]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .expect("arguments are text");
    assert_eq!(
        serde_json::from_str::<Value>(sent).expect("json"),
        json!({"invalid_json": cut})
    );
}

#[test]
fn calls_are_keyed_by_id_before_index() {
    // A server that numbers every call 0 but gives each its own id.
    let text = sse(&[
        delta(json!({"content": "two calls"})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "a", "arguments": "{\"x\""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_b", "function": {"name": "b", "arguments": "{}"}}]}),
        ),
        // The same id again, without an index: it continues call_a, it does not add a call.
        delta(json!({"tool_calls": [{"id": "call_a", "function": {"arguments": ""}}]})),
        finish("tool_calls"),
    ]);
    assert_eq!(
        decode_text(&text).expect("decodes").items,
        [
            ResponseItem::Message {
                role: "assistant".into(),
                content: "two calls".into()
            },
            call("call_a", "a", "{\"x\":1}"),
            call("call_b", "b", "{}"),
        ]
    );
}

#[test]
fn a_length_finish_keeps_text_and_calls() {
    let text = sse(&[
        delta(json!({"content": "renaming"})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}}]}),
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "exec_command", "arguments": "{\"cmd\":\"sed -i s/a/"}}]}),
        ),
        finish("length"),
    ]);
    let response = decode_text(&text).expect("decodes");
    assert_eq!(response.finish, Finish::OutputLimit);
    assert_eq!(
        response.items,
        [
            ResponseItem::Message {
                role: "assistant".into(),
                content: "renaming".into()
            },
            call("call_a", "exec_command", "{\"cmd\":\"ls\"}"),
            call("call_b", "exec_command", "{\"cmd\":\"sed -i s/a/"),
        ]
    );
}
