//! Histories as Messages API messages: sides, tool pairing, reasoning, thinking and the cache
//! breakpoints, checked on the JSON a request carries.

use arbor_protocol::{ResponseItem, Thinking};
use serde_json::{Value, json};

use super::*;

fn user(text: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "user".into(),
        content: text.into(),
    }
}

fn said(text: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "assistant".into(),
        content: text.into(),
    }
}

fn call(id: &str) -> ResponseItem {
    ResponseItem::FunctionCall {
        call_id: id.into(),
        name: "exec_command".into(),
        arguments: "{\"cmd\":\"ls\"}".into(),
    }
}

fn output(id: &str) -> ResponseItem {
    ResponseItem::FunctionCallOutput {
        call_id: id.into(),
        output: format!("out {id}"),
    }
}

fn thinking(signature: &str) -> ResponseItem {
    ResponseItem::Reasoning {
        summary: vec!["hmm".into()],
        encrypted_content: None,
        thinking: Some(Box::new(Thinking::Thinking {
            signature: signature.into(),
        })),
    }
}

fn check(history: &[ResponseItem]) -> (Value, bool) {
    let translated = translate(history);
    let value = serde_json::to_value(&translated.messages).expect("json");
    (value, translated.thinking_allowed)
}

/// `(role, [block types])` of every message.
fn shape(messages: &Value) -> Vec<(String, Vec<String>)> {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let types = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| b["type"].as_str().unwrap_or_default().to_string())
                .collect();
            (m["role"].as_str().unwrap_or_default().to_string(), types)
        })
        .collect()
}

fn owned(shape: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    shape
        .iter()
        .map(|(role, types)| {
            (
                role.to_string(),
                types.iter().map(|t| t.to_string()).collect(),
            )
        })
        .collect()
}

#[test]
fn sides_alternate_and_results_come_first() {
    let (messages, allowed) = check(&[
        user("task"),
        thinking("s1"),
        said("two calls"),
        call("a"),
        call("b"),
        output("a"),
        output("b"),
        user("mail that arrived meanwhile"),
        said("done"),
    ]);
    assert_eq!(
        shape(&messages),
        owned(&[
            ("user", &["text"]),
            ("assistant", &["thinking", "text", "tool_use", "tool_use"]),
            ("user", &["tool_result", "tool_result", "text"]),
            ("assistant", &["text"]),
        ])
    );
    assert_eq!(messages[1]["content"][2]["input"], json!({"cmd": "ls"}));
    assert!(allowed);
}

#[test]
fn calls_and_outputs_are_paired_whatever_the_history_holds() {
    let (messages, _) = check(&[
        said("from a forked answer"),
        user("mail first"),
        output("lost"),
        call("x"),
        user("no output for x"),
    ]);
    assert_eq!(
        shape(&messages),
        owned(&[
            ("user", &["text"]),
            ("assistant", &["text"]),
            ("user", &["text", "text"]),
            ("assistant", &["tool_use"]),
            ("user", &["tool_result", "text"]),
        ])
    );
    assert_eq!(
        messages[2]["content"][1]["text"],
        "Output of an earlier tool call (lost):\nout lost"
    );
    assert_eq!(messages[4]["content"][0]["tool_use_id"], "x");
    assert_eq!(messages[4]["content"][0]["content"], NO_OUTPUT);
}

#[test]
fn ids_are_mapped_alike_in_a_call_and_its_output_and_bad_arguments_are_wrapped() {
    let history = [
        user("task"),
        ResponseItem::FunctionCall {
            call_id: "call:1/x".into(),
            name: "exec_command".into(),
            arguments: "{\"cmd\": \"sed -i s/a/".into(),
        },
        output("call:1/x"),
    ];
    let (messages, _) = check(&history);
    assert_eq!(messages[1]["content"][0]["id"], "call_1_x");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "call_1_x");
    assert_eq!(
        messages[1]["content"][0]["input"],
        json!({"invalid_json": "{\"cmd\": \"sed -i s/a/"})
    );
}

#[test]
fn only_thinking_blocks_go_back_and_blank_text_stays_out() {
    let (messages, allowed) = check(&[
        user("task"),
        ResponseItem::Reasoning {
            summary: vec!["openai plan".into()],
            encrypted_content: Some("gAAAA".into()),
            thinking: None,
        },
        ResponseItem::Reasoning {
            summary: Vec::new(),
            encrypted_content: None,
            thinking: Some(Box::new(Thinking::RedactedThinking {
                data: "opaque".into(),
            })),
        },
        said("  "),
        call("a"),
        output("a"),
    ]);
    assert_eq!(
        shape(&messages),
        owned(&[
            ("user", &["text"]),
            ("assistant", &["redacted_thinking", "tool_use"]),
            ("user", &["tool_result"]),
        ])
    );
    assert_eq!(messages[1]["content"][0]["data"], "opaque");
    assert!(allowed, "the loop's assistant message starts with thinking");
    let (_, allowed) = check(&[user("task"), said("calling"), call("a"), output("a")]);
    assert!(!allowed, "a loop without thinking cannot turn it on");
    let (_, allowed) = check(&[
        user("task"),
        call("a"),
        output("a"),
        said("ok"),
        user("next"),
    ]);
    assert!(allowed, "a new turn may think again");
}

#[test]
fn the_history_end_and_the_previous_request_end_are_breakpoints() {
    let history = [
        user("task"),
        thinking("s"),
        call("a"),
        output("a"),
        said("more"),
        call("b"),
        output("b"),
    ];
    let (messages, _) = check(&history);
    let marked: Vec<(usize, usize)> = messages
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .flat_map(|(m, message)| {
            message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .filter(|(_, block)| block.get("cache_control").is_some())
                .map(move |(b, _)| (m, b))
                .collect::<Vec<_>>()
        })
        .collect();
    // The output of `a` ended the previous request; the output of `b` ends this one.
    assert_eq!(marked, [(2, 0), (4, 0)]);
    assert!(marked.len() + 2 <= MAX_CACHE_BREAKPOINTS);
}
