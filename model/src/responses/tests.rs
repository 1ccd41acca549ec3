//! The Responses API: request bodies, and decoding of recorded event streams.

use arbor_protocol::{AgentPath, ThreadId, ToolSpec};

use super::*;
use crate::recorded::decode_stream;
use crate::sse::SseEvent;
use crate::stream::Decoder;
use crate::{AgentIdentity, Finish, ProviderKind};

fn request(input: Vec<ResponseItem>, tools: Vec<ToolSpec>, effort: Option<&str>) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::root(),
            nickname: None,
            role: "default".to_string(),
        },
        provider: None,
        model: "gpt-test".to_string(),
        reasoning_effort: effort.map(str::to_string),
        instructions: "be brief".into(),
        input: input.into(),
        tools: tools.into(),
        parallel_tool_calls: true,
        max_output_tokens: None,
    }
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn decode(events: &[Value]) -> Result<ModelResponse, ModelError> {
    decode_stream(ProviderKind::OpenAi, [sse(events).as_bytes()]).map(|d| d.response)
}

fn completed(output: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "output": output,
        "usage": {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3}}})
}

fn call_item(call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name,
        "arguments": arguments, "status": "completed"})
}

#[test]
fn the_body_is_stateless_streamed_and_carries_the_whole_history() {
    let input = vec![
        ResponseItem::Message {
            role: "user".into(),
            content: "hi".into(),
        },
        ResponseItem::Reasoning {
            summary: vec!["thought".into()],
            encrypted_content: Some("opaque".into()),
            thinking: None,
        },
        ResponseItem::Reasoning {
            summary: vec!["lost".into()],
            encrypted_content: None,
            thinking: None,
        },
        ResponseItem::Message {
            role: "assistant".into(),
            content: "calling".into(),
        },
        ResponseItem::FunctionCall {
            call_id: "c1".into(),
            name: "list_agents".into(),
            arguments: "{}".into(),
        },
        ResponseItem::FunctionCallOutput {
            call_id: "c1".into(),
            output: "[]".into(),
        },
    ];
    let tools = vec![ToolSpec {
        name: "list_agents".into(),
        description: "list".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }];
    let body = request_body(&request(input, tools, Some("high")));
    assert_eq!(
        body,
        json!({
            "model": "gpt-test",
            "instructions": "be brief",
            "stream": true,
            "store": false,
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "opaque"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "calling"}]},
                {"type": "function_call", "call_id": "c1", "name": "list_agents", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "[]"},
            ],
            "tools": [{"type": "function", "name": "list_agents", "description": "list",
                       "parameters": {"type": "object", "properties": {}}, "strict": false}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"effort": "high"},
            "include": ["reasoning.encrypted_content"],
        })
    );
}

#[test]
fn without_tools_or_reasoning_the_body_leaves_them_out() {
    let body = request_body(&request(Vec::new(), Vec::new(), None));
    for key in [
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "include",
    ] {
        assert!(body.get(key).is_none(), "{key} in {body}");
    }
}

#[test]
fn a_text_answer_with_usage() {
    let response = decode(&[
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "hel"}),
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "lo"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "hello"}]}}),
        completed(json!([])),
    ])
    .expect("decodes");
    assert_eq!(
        response,
        ModelResponse {
            items: vec![ResponseItem::Message {
                role: "assistant".into(),
                content: "hello".into()
            }],
            usage: Some(Usage {
                input_tokens: 12,
                cached_input_tokens: 4,
                output_tokens: 3,
                compaction_tokens: 0,
                cache_write_tokens: 0,
            }),
            finish: Finish::Completed,
            served_by: None,
        }
    );
}

#[test]
fn a_tool_call_is_reported_when_its_item_is_done_not_at_the_end() {
    let mut decoder = ResponsesDecoder::default();
    let mut done = Vec::new();
    let mut feed = |event: Value, done: &mut Vec<ResponseItem>| {
        decoder
            .on_event(
                SseEvent {
                    data: event.to_string(),
                    ..SseEvent::default()
                },
                done,
            )
            .expect("event")
    };
    feed(
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c1", "name": "spawn_agent", "arguments": ""}}),
        &mut done,
    );
    feed(
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"a\":"}),
        &mut done,
    );
    assert!(done.is_empty());
    feed(
        json!({"type": "response.output_item.done", "output_index": 0, "item": call_item("c1", "spawn_agent", "{\"a\":1}")}),
        &mut done,
    );
    assert_eq!(
        done,
        [ResponseItem::FunctionCall {
            call_id: "c1".into(),
            name: "spawn_agent".into(),
            arguments: "{\"a\":1}".into()
        }]
    );
}

#[test]
fn parallel_calls_keep_output_order_and_sparse_items_use_the_deltas() {
    let response = decode(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "summary": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning",
            "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "enc"}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "call_id": "c2", "name": "b"}}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "a"}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"x\""}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{}"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": ":2}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call"}}),
        json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"y\":1}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "a"}}),
        json!({"type": "response.some_future_event", "output_index": 1}),
        completed(json!([])),
    ])
    .expect("decodes");
    assert_eq!(
        response.items,
        [
            ResponseItem::Reasoning {
                summary: vec!["plan".into()],
                encrypted_content: Some("enc".into()),
                thinking: None,
            },
            ResponseItem::FunctionCall {
                call_id: "c1".into(),
                name: "a".into(),
                arguments: "{\"y\":1}".into()
            },
            ResponseItem::FunctionCall {
                call_id: "c2".into(),
                name: "b".into(),
                arguments: "{\"x\":2}".into()
            },
        ]
    );
}

#[test]
fn items_only_listed_in_the_completed_response_are_kept() {
    let response = decode(&[completed(json!([
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b"}]},
        call_item("c9", "list_agents", ""),
        {"type": "web_search_call", "id": "ws_1"},
    ]))])
    .expect("decodes");
    assert_eq!(
        response.items,
        [
            ResponseItem::Message {
                role: "assistant".into(),
                content: "ab".into()
            },
            ResponseItem::FunctionCall {
                call_id: "c9".into(),
                name: "list_agents".into(),
                arguments: "{}".into()
            },
        ]
    );
}

#[test]
fn failures_are_classified() {
    let failed = |code: &str, message: &str| {
        decode(&[
            json!({"type": "response.failed", "response": {"error": {"code": code, "message": message}}}),
        ])
    };
    assert_eq!(
        failed("rate_limit_exceeded", "slow down"),
        Err(ModelError::RateLimited)
    );
    assert_eq!(
        failed("server_error", "oops"),
        Err(ModelError::Transport(
            "the server reported server_error: oops".into()
        ))
    );
    assert_eq!(
        failed("context_length_exceeded", "too long"),
        Err(ModelError::Failed(
            "context_length_exceeded: too long".into()
        ))
    );
    assert_eq!(
        decode(&[
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "content_filter"}}})
        ]),
        Err(ModelError::Failed(
            "the response is incomplete (content_filter)".into()
        ))
    );
    assert_eq!(
        decode(&[json!({"type": "error", "code": "invalid_prompt", "message": "no"})]),
        Err(ModelError::Failed("invalid_prompt: no".into()))
    );
}

#[test]
fn a_stream_without_completion_or_with_garbage_is_a_transport_failure() {
    let text = sse(&[json!({"type": "response.created", "response": {}})]);
    assert_eq!(
        decode_stream(ProviderKind::OpenAi, [text.as_bytes()]).map(|d| d.response),
        Err(ModelError::Transport(
            "the stream ended before response.completed".into()
        ))
    );
    let garbage = decode_stream(ProviderKind::OpenAi, [&b"data: {\"type\": \"resp"[..]]);
    assert!(
        matches!(&garbage, Err(ModelError::Transport(m)) if m.starts_with("invalid stream event")),
        "{garbage:?}"
    );
}

/// The recorded llama.cpp stream: a message, then a call, no `output_index` anywhere, and the
/// call listed again in `response.completed`.
const LLAMA_STREAM: &str = include_str!(
    "../../../tests/fixtures/llama-server/responses-message-then-call-no-output-index.sse"
);

#[test]
fn a_stream_without_output_index_keeps_the_text_and_the_call_once() {
    let decoded = decode_stream(ProviderKind::OpenAi, [LLAMA_STREAM.as_bytes()]).expect("decodes");
    let expected = [
        ResponseItem::Message {
            role: "assistant".into(),
            content: "Send this to your parent. Reply with this:\n".into(),
        },
        ResponseItem::FunctionCall {
            call_id: "call_6MoTpS6VmGLRufRYWWHiwhfvA0CaMn5i".into(),
            name: "exec_command".into(),
            arguments: "{\"cmd\": \"sed -i s/fetch_data/load_records/g src/reader.py\"}".into(),
        },
    ];
    assert_eq!(decoded.response.items, expected);
    assert_eq!(decoded.items_reported, 2);
    assert_eq!(decoded.response.usage.map(|u| u.output_tokens), Some(58));
}

#[test]
fn items_are_reported_in_model_order_and_a_repeated_call_once() {
    let mut decoder = ResponsesDecoder::default();
    let mut feed = |event: Value| {
        let mut done = Vec::new();
        decoder
            .on_event(
                SseEvent {
                    data: event.to_string(),
                    ..SseEvent::default()
                },
                &mut done,
            )
            .expect("event");
        done
    };
    let text = json!({"type": "message", "id": "m1", "role": "assistant", "content": [{"type": "output_text", "text": "first"}]});
    feed(
        json!({"type": "response.output_item.added", "item": {"type": "message", "id": "m1", "content": []}}),
    );
    feed(
        json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc_c1", "call_id": "c1", "name": "a"}}),
    );
    // The call is done first, but the text before it is not: the call waits for it.
    assert!(
        feed(json!({"type": "response.output_item.done", "item": call_item("c1", "a", "{}")}))
            .is_empty()
    );
    let done = feed(json!({"type": "response.output_item.done", "item": text}));
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(matches!(&done[0], ResponseItem::Message { content, .. } if content == "first"));
    // The same call again, under another item id: dropped.
    feed(
        json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "f2", "call_id": "c1", "name": "a"}}),
    );
    assert!(feed(json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": "f2", "call_id": "c1", "name": "a", "arguments": "{}"}})).is_empty());
    feed(completed(json!([text, call_item("c1", "a", "{}")])));
    let response = decoder.finish().expect("complete");
    assert_eq!(response.items.len(), 2, "{:?}", response.items);
}

#[test]
fn an_answer_cut_at_the_output_limit_keeps_its_items() {
    let response = decode(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "f1", "call_id": "c1", "name": "a", "arguments": ""}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": call_item("c1", "a", "{\"n\":1}")}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "f2", "call_id": "c2", "name": "b", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "f2", "delta": "{\"cmd\": \"ec"}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
    ])
    .expect("decodes");
    assert_eq!(response.finish, Finish::OutputLimit);
    assert_eq!(
        response.items,
        [
            ResponseItem::FunctionCall {
                call_id: "c1".into(),
                name: "a".into(),
                arguments: "{\"n\":1}".into()
            },
            ResponseItem::FunctionCall {
                call_id: "c2".into(),
                name: "b".into(),
                arguments: "{\"cmd\": \"ec".into()
            },
        ]
    );
}

#[test]
fn the_limit_and_bad_arguments_in_the_request() {
    let cut = "{\"cmd\": \"sed -i s/fetch_data/";
    let mut limited = request(
        vec![ResponseItem::FunctionCall {
            call_id: "c1".into(),
            name: "exec_command".into(),
            arguments: cut.into(),
        }],
        Vec::new(),
        None,
    );
    limited.max_output_tokens = Some(300);
    let body = request_body(&limited);
    assert_eq!(body["max_output_tokens"], json!(300));
    let sent = body["input"][0]["arguments"].as_str().expect("text");
    assert_eq!(
        serde_json::from_str::<Value>(sent).expect("json"),
        json!({"invalid_json": cut})
    );
}
