//! Behaviour of the scripted model: matching, cursors, delays, templates, records and usage.

use std::time::Duration;

use arbor_protocol::{AgentPath, Mail, MailKind, ResponseItem, ThreadId, ToolSpec, Usage};
use serde_json::json;
use tokio::sync::mpsc;

use super::ScriptedModel;
use crate::{AgentIdentity, ModelClient, ModelEvent, ModelRequest, ModelResponse};

fn model(script: serde_json::Value) -> ScriptedModel {
    ScriptedModel::from_json(&script.to_string()).expect("valid script")
}

/// A request from the agent at `path` with `role` and history `input` (shared with the
/// validation tests).
pub(super) fn request(path: &str, role: &str, input: Vec<ResponseItem>) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::parse(path).expect("path"),
            nickname: None,
            role: role.to_string(),
        },
        provider: None,
        model: "scripted".to_string(),
        reasoning_effort: None,
        instructions: "".into(),
        input: input.into(),
        tools: Default::default(),
        parallel_tool_calls: true,
        max_output_tokens: None,
    }
}

fn user(text: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "user".to_string(),
        content: text.to_string(),
    }
}

fn say(text: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "assistant".to_string(),
        content: text.to_string(),
    }
}

async fn respond(model: &ScriptedModel, request: &ModelRequest) -> Result<ModelResponse, String> {
    let (events, _rx) = mpsc::unbounded_channel();
    model
        .respond(request, &events)
        .await
        .map_err(|error| error.to_string())
}

/// The assistant text of the next response for an agent with no history.
async fn says(model: &ScriptedModel, path: &str, role: &str) -> Result<String, String> {
    let response = respond(model, &request(path, role, Vec::new())).await?;
    match response.items.as_slice() {
        [ResponseItem::Message { content, .. }] => Ok(content.clone()),
        other => Err(format!("unexpected items {other:?}")),
    }
}

#[tokio::test]
async fn the_first_fitting_entry_wins() {
    let model = model(json!({"agents": [
        {"match": "/root/a", "repeat": true, "responses": [[{"say": "exact a"}]]},
        {"match": "/root/worker_*", "repeat": true, "responses": [[{"say": "glob worker"}]]},
        {"match": "role:worker", "repeat": true, "responses": [[{"say": "role worker"}]]},
        {"match": "/root/*/x", "repeat": true, "responses": [[{"say": "glob x"}]]},
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "any child"}]]},
        {"match": "/root/worker_a", "repeat": true, "responses": [[{"say": "never"}]]},
    ]}));
    let cases = [
        ("/root/a", "worker", "exact a"),
        ("/root/worker_a", "worker", "glob worker"),
        ("/root/worker_", "explorer", "glob worker"),
        ("/root/b", "worker", "role worker"),
        ("/root/b/c/d", "worker", "role worker"),
        ("/root/b/x", "explorer", "glob x"),
        ("/root/b", "explorer", "any child"),
    ];
    for (path, role, expect) in cases {
        assert_eq!(
            says(&model, path, role).await.as_deref(),
            Ok(expect),
            "{path} {role}"
        );
    }
}

#[tokio::test]
async fn a_glob_star_stays_within_one_segment() {
    let model = model(json!({"agents": [
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "child"}]]},
    ]}));
    assert_eq!(says(&model, "/root/a", "w").await.as_deref(), Ok("child"));
    assert_eq!(
        says(&model, "/root/a/b", "w").await,
        Err("no script entry matches /root/a/b".to_string())
    );
    assert_eq!(
        says(&model, "/root", "w").await,
        Err("no script entry matches /root".to_string())
    );
}

#[tokio::test]
async fn an_agent_no_entry_fits_gets_a_script_error() {
    let model = model(json!({"agents": [
        {"match": "/root/x", "responses": [[{"say": "x"}]]},
    ]}));
    let error = model
        .respond(
            &request("/root/y", "worker", Vec::new()),
            &mpsc::unbounded_channel().0,
        )
        .await
        .expect_err("no entry");
    assert_eq!(
        error,
        crate::ModelError::Script("no script entry matches /root/y".to_string())
    );
}

#[tokio::test]
async fn cursors_are_per_agent_and_run_out() {
    let model = model(json!({"agents": [
        {"match": "/root/*", "responses": [[{"say": "one {{task_name}}"}], [{"say": "two {{task_name}}"}]]},
    ]}));
    assert_eq!(says(&model, "/root/x", "w").await.as_deref(), Ok("one x"));
    assert_eq!(says(&model, "/root/z", "w").await.as_deref(), Ok("one z"));
    assert_eq!(says(&model, "/root/x", "w").await.as_deref(), Ok("two x"));
    assert_eq!(
        says(&model, "/root/x", "w").await,
        Err("script exhausted for /root/x".to_string())
    );
    assert_eq!(
        says(&model, "/root/x", "w").await,
        Err("script exhausted for /root/x".to_string())
    );
    assert_eq!(says(&model, "/root/z", "w").await.as_deref(), Ok("two z"));
}

#[tokio::test]
async fn repeat_starts_the_list_again() {
    let model = model(json!({"agents": [
        {"match": "role:guardian", "repeat": true, "responses": [[{"say": "a"}], [{"say": "b"}]]},
    ]}));
    let mut heard = Vec::new();
    for _ in 0..5 {
        heard.push(says(&model, "/root/g", "guardian").await.expect("repeats"));
    }
    assert_eq!(heard, ["a", "b", "a", "b", "a"]);
}

#[tokio::test(start_paused = true)]
async fn a_delay_is_waited_and_dropping_the_future_cancels_it() {
    let model = model(json!({"agents": [
        {"match": "/root", "responses": [
            {"delay_ms": 50, "items": [{"say": "slow"}]},
            {"delay_ms": 50, "items": [{"say": "cancelled"}]},
            [{"say": "fast"}],
        ]},
    ]}));
    let (events, mut rx) = mpsc::unbounded_channel();
    let req = request("/root", "default", Vec::new());

    let start = tokio::time::Instant::now();
    let response = model.respond(&req, &events).await.expect("slow");
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    assert_eq!(response.items, [say("slow")]);
    assert_eq!(rx.try_recv(), Ok(ModelEvent::ItemDone(say("slow"))));

    let cut = tokio::time::timeout(Duration::from_millis(20), model.respond(&req, &events)).await;
    assert!(cut.is_err(), "the second response waits 50 ms");
    assert!(
        rx.try_recv().is_err(),
        "a cancelled response reports nothing"
    );

    // The cancelled request consumed its response: the next one is the third.
    let start = tokio::time::Instant::now();
    let response = model.respond(&req, &events).await.expect("fast");
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(response.items, [say("fast")]);
}

#[tokio::test]
async fn calls_carry_rendered_args_and_deterministic_unique_ids() {
    let script = json!({"agents": [
        {"match": "/root/*", "repeat": true, "responses": [[
            {"say": "working"},
            {"call": "exec_command", "args": {"cmd": "sed -i s/foo/bar/g {{task_name}}.txt",
                                               "n": 3, "flags": ["{{role}}", true, null],
                                               "nested": {"who": "{{path}}"}}},
            {"call": "wait_agent"},
        ]]},
    ]});
    let first = model(script.clone());
    let (events, mut rx) = mpsc::unbounded_channel();
    let response = first
        .respond(&request("/root/w", "worker", Vec::new()), &events)
        .await
        .expect("calls");
    let [message, exec, wait] = response.items.as_slice() else {
        panic!("three items: {:?}", response.items);
    };
    assert_eq!(*message, say("working"));
    let ResponseItem::FunctionCall {
        call_id: exec_id,
        name,
        arguments,
    } = exec
    else {
        panic!("a call: {exec:?}");
    };
    assert_eq!(name, "exec_command");
    let arguments: serde_json::Value = serde_json::from_str(arguments).expect("json arguments");
    assert_eq!(
        arguments,
        json!({"cmd": "sed -i s/foo/bar/g w.txt", "n": 3, "flags": ["worker", true, null],
               "nested": {"who": "/root/w"}})
    );
    let ResponseItem::FunctionCall {
        call_id: wait_id,
        name,
        arguments,
    } = wait
    else {
        panic!("a call: {wait:?}");
    };
    assert_eq!((name.as_str(), arguments.as_str()), ("wait_agent", "{}"));
    let base = exec_id
        .strip_suffix("_0")
        .expect("the first call of the history");
    assert!(base.starts_with("call_"), "{exec_id}");
    assert_eq!(*wait_id, format!("{base}_1"));
    for item in &response.items {
        assert_eq!(rx.try_recv(), Ok(ModelEvent::ItemDone(item.clone())));
    }

    // The next request carries the earlier calls in its history: ids count on from there.
    let history = vec![user("go"), exec.clone(), wait.clone()];
    let again = first
        .respond(&request("/root/w", "worker", history.clone()), &events)
        .await
        .expect("again");
    let ids = call_ids(&again.items);
    assert_eq!(ids, [format!("{base}_2"), format!("{base}_3")]);

    // Another agent's ids differ; another process with the same script gives the same ids.
    let other = first
        .respond(&request("/root/v", "worker", Vec::new()), &events)
        .await
        .expect("other");
    assert!(
        call_ids(&other.items)
            .iter()
            .all(|id| id != exec_id && id != wait_id)
    );
    let second = model(script);
    let replay = second
        .respond(&request("/root/w", "worker", history), &events)
        .await
        .expect("replay");
    assert_eq!(call_ids(&replay.items), ids);
}

fn call_ids(items: &[ResponseItem]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCall { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn templates_read_identity_input_and_last_output() {
    let model = model(json!({"agents": [
        {"match": "/root/w", "repeat": true, "responses": [[
            {"say": "{{path}}|{{task_name}}|{{nickname}}|{{role}}|{{input}}|{{last_output}}"},
        ]]},
    ]}));
    let mail = Mail::new(
        AgentPath::root(),
        AgentPath::parse("/root/w").expect("path"),
        MailKind::Spawn,
        "rename foo\nin a.txt".to_string(),
    );
    let mut req = request(
        "/root/w",
        "worker",
        vec![
            user("older task"),
            ResponseItem::FunctionCallOutput {
                call_id: "c1".to_string(),
                output: "first output".to_string(),
            },
            user(&mail.model_text()),
            say("thinking"),
            ResponseItem::FunctionCallOutput {
                call_id: "c2".to_string(),
                output: "newest output".to_string(),
            },
        ],
    );
    req.agent.nickname = Some("Ada".to_string());
    let text = |response: ModelResponse| match response.items.as_slice() {
        [ResponseItem::Message { content, .. }] => content.clone(),
        other => panic!("one message: {other:?}"),
    };
    assert_eq!(
        text(respond(&model, &req).await.expect("mail")),
        "/root/w|w|Ada|worker|rename foo\nin a.txt|newest output"
    );

    std::sync::Arc::make_mut(&mut req.input).push(user("plain followup"));
    std::sync::Arc::make_mut(&mut req.input).push(ResponseItem::Message {
        role: "developer".to_string(),
        content: "not input".to_string(),
    });
    assert_eq!(
        text(respond(&model, &req).await.expect("plain")),
        "/root/w|w|Ada|worker|plain followup|newest output"
    );

    std::sync::Arc::make_mut(&mut req.input).clear();
    req.agent.nickname = None;
    assert_eq!(
        text(respond(&model, &req).await.expect("empty")),
        "/root/w|w||worker||"
    );
}

#[tokio::test]
async fn every_request_is_recorded_in_arrival_order() {
    let model = model(json!({"agents": [
        {"match": "/root", "responses": [[{"say": "a"}]]},
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "b"}]]},
    ]}));
    let first = request("/root", "default", vec![user("hello")]);
    let second = request("/root/w", "worker", vec![user("task")]);
    let third = request("/root", "default", vec![user("again")]);
    let stray = request("/root/a/b", "worker", Vec::new());
    respond(&model, &first).await.expect("first");
    respond(&model, &second).await.expect("second");
    respond(&model, &third).await.expect_err("exhausted");
    respond(&model, &stray).await.expect_err("no entry");
    assert_eq!(
        model.requests(),
        [first.clone(), second.clone(), third.clone(), stray]
    );
    assert_eq!(model.requests_for(&AgentPath::root()), [first, third]);
    assert_eq!(
        model.requests_for(&AgentPath::parse("/root/w").expect("path")),
        [second]
    );
    assert_eq!(model.provider(), "script");
}

#[tokio::test]
async fn usage_is_estimated_from_characters() {
    let model = model(json!({"agents": [
        {"match": "/root", "responses": [[{"say": "12345"}, {"call": "f", "args": {"a": 1}}]]},
    ]}));
    let mut req = request("/root", "default", vec![user("abcdefgh")]);
    req.instructions = "1234".into();
    std::sync::Arc::make_mut(&mut req.tools).push(ToolSpec {
        name: "f".to_string(),
        description: "abc".to_string(),
        parameters: json!({}),
    });
    let response = respond(&model, &req).await.expect("answer");
    // Input: 4 instructions + 8 message + (1 + 3 + 2) tool = 18 chars; output: 5 + 1 + 7 = 13.
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 5,
            cached_input_tokens: 0,
            output_tokens: 4,
            compaction_tokens: 0,
            cache_write_tokens: 0,
        })
    );
}

#[tokio::test]
async fn a_response_reports_the_usage_its_script_gives() {
    let model = model(json!({"agents": [
        {"match": "/root", "responses": [
            {"items": [{"say": "big"}], "usage": {"input_tokens": 9000, "output_tokens": 7}},
            {"items": [{"say": "cached"}], "usage": {"input_tokens": 10, "output_tokens": 1, "cached_input_tokens": 4}}
        ]}
    ]}));
    let req = request("/root", "default", vec![user("hi")]);
    let first = respond(&model, &req).await.expect("answer");
    assert_eq!(
        first.usage,
        Some(Usage {
            input_tokens: 9000,
            cached_input_tokens: 0,
            output_tokens: 7,
            compaction_tokens: 0,
            cache_write_tokens: 0,
        })
    );
    let second = respond(&model, &req).await.expect("answer");
    assert_eq!(second.usage.map(|u| u.cached_input_tokens), Some(4));
}
