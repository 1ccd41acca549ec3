//! The Messages API against a mock server that checks every request as the real API does
//! (`MockServer::messages`, a 400 for an invalid one): a turn through thinking, parallel
//! calls, a cut call, an error mid-stream and a 529; the cache breakpoints; two siblings'
//! identical prefixes; and the checks the mock makes, each shown to refuse.

use std::collections::VecDeque;
use std::sync::Mutex;

use arbor_model::{ProviderKind, build_provider};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentStatus, ApprovalPolicy, Event};
use arbor_tests::mock_http::{
    MockServer, Output, Recorded, Reply, check_request, messages_error, messages_events,
    messages_events_cut, messages_events_failing, split_every,
};
use serde_json::{Value, json};

use super::{Run, config};

/// A Messages server answering `replies` in order (each body split into reads of `split`
/// bytes), checking every request first.
async fn server(replies: Vec<Reply>) -> MockServer {
    let queue = Mutex::new(VecDeque::from(replies));
    MockServer::messages(move |_| {
        queue
            .lock()
            .expect("lock")
            .pop_front()
            .unwrap_or_else(|| messages_error(500, "api_error", "mock: no reply queued"))
    })
    .await
}

fn sse(events: Vec<String>, split: usize) -> Reply {
    Reply::sse(split_every(&events.concat(), split))
}

/// Where the cache breakpoints of a request are: `tools.N`, `system.N`, `messages.N.M`.
fn breakpoints(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for key in ["tools", "system"] {
        for (at, item) in body[key].as_array().into_iter().flatten().enumerate() {
            if item.get("cache_control").is_some() {
                found.push(format!("{key}.{at}"));
            }
        }
    }
    for (m, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if block.get("cache_control").is_some() {
                found.push(format!("messages.{m}.{b}"));
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_through_every_kind_of_stream_keeps_each_history_valid() {
    let replies = vec![
        // Thinking, text and two parallel calls, in reads of 7 bytes.
        sse(
            messages_events(&[
                Output::thinking("Two things to do: count the run, then list."),
                Output::text("Running both."),
                Output::call(
                    "toolu_a",
                    "exec_command",
                    &json!({"cmd": "echo ran >> runs.txt"}),
                ),
                Output::call("toolu_b", "list_agents", &json!({})),
            ]),
            7,
        ),
        // Thinking again, then the output limit cuts a call mid-way.
        sse(
            messages_events_cut(&[
                Output::thinking("Now write the file."),
                Output::text("Writing."),
                Output::Call(
                    "toolu_cut".into(),
                    "exec_command".into(),
                    "{\"cmd\": \"echo never > nev".into(),
                ),
            ]),
            13,
        ),
        // An error event mid-stream, then a 529, then the answer.
        sse(messages_events_failing("overloaded_error", "Overloaded"), 5),
        messages_error(529, "overloaded_error", "Overloaded"),
        sse(messages_events(&[Output::text("all done")]), 3),
    ];
    let server = server(replies).await;
    let run = Run::new(
        ProviderKind::Anthropic,
        &server,
        |_| {},
        |c| {
            c.reasoning_effort = Some("low".into());
            c.max_output_tokens = Some(4096);
        },
        "count and list",
    )
    .await;
    assert_eq!(
        run.orch.root_status().await,
        AgentStatus::Completed(Some("all done".into()))
    );
    // Every call ran once; the cut one not at all.
    let runs = std::fs::read_to_string(run.cwd.path().join("runs.txt")).expect("ran");
    assert_eq!(runs, "ran\n");
    assert!(!run.cwd.path().join("never.txt").exists());
    assert_eq!(
        run.tool_calls(),
        [
            ("toolu_a".to_string(), "exec_command".to_string()),
            ("toolu_b".to_string(), "list_agents".to_string()),
            ("toolu_cut".to_string(), "exec_command".to_string()),
        ]
    );
    let retried: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::AgentRetrying { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        retried,
        [
            "overloaded: Overloaded (attempt 1 of 3)",
            "http 529: Overloaded (attempt 2 of 3)"
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for request in &requests {
        assert_eq!(check_request(request), Ok(()), "{}", request.raw_body);
    }
    let second = &requests[1].body;
    // The tool loop goes on: the signed thinking block leads the assistant message, and
    // thinking stays on.
    assert_eq!(
        second["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        second["messages"][1]["content"][0]["thinking"],
        "Two things to do: count the run, then list."
    );
    let results = &second["messages"][2]["content"];
    assert_eq!(results[0]["tool_use_id"], "toolu_a");
    assert_eq!(results[1]["tool_use_id"], "toolu_b");
    // After the cut: the call goes back wrapped, its output says it did not run, the note
    // follows the results.
    let third = &requests[2].body;
    let cut = &third["messages"][3]["content"];
    assert_eq!(cut[0]["type"], "thinking");
    assert_eq!(
        cut[2]["input"],
        json!({"invalid_json": "{\"cmd\": \"echo never > nev"})
    );
    let after = &third["messages"][4]["content"];
    assert!(
        after[0]["content"]
            .as_str()
            .is_some_and(|o| o.starts_with("exec_command did not run")),
        "{after}"
    );
    assert_eq!(after[1]["type"], "text");
    // The cache: the last tool, the system prompt, the previous request's end, this one's.
    let last_tool = third["tools"].as_array().map_or(0, Vec::len) - 1;
    assert_eq!(
        breakpoints(third),
        [
            format!("tools.{last_tool}"),
            "system.0".into(),
            "messages.2.1".into(),
            "messages.4.1".into()
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_siblings_of_one_role_send_the_same_bytes_up_to_their_tasks() {
    let first_text = |body: &Value| {
        body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let server = MockServer::messages(move |request: &Recorded| {
        let task = first_text(&request.body);
        let results = request.body.to_string().matches("\"tool_result\"").count();
        let outputs = if task.contains("Task name: /root/") {
            vec![Output::text("sibling done")]
        } else if results == 0 {
            ["worker_a", "worker_b"]
                .iter()
                .enumerate()
                .map(|(n, name)| {
                    Output::call(
                        &format!("toolu_spawn_{n}"),
                        "spawn_agent",
                        &json!({"task_name": name, "agent_type": "worker", "message": format!("look at part {n}")}),
                    )
                })
                .collect()
        } else if results == 2 {
            vec![Output::call(
                "toolu_wait",
                "wait_agent",
                &json!({"mode": "all", "timeout_ms": 60000}),
            )]
        } else {
            vec![Output::text("both done")]
        };
        Reply::sse(split_every(&messages_events(&outputs).concat(), 29))
    })
    .await;
    let model = build_provider(ProviderKind::Anthropic, config(&server)).expect("provider");
    let home = tempfile::TempDir::new().expect("home");
    let cwd = tempfile::TempDir::new().expect("cwd");
    let mut run = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
    run.model = "mock-model".to_string();
    run.approval_policy = ApprovalPolicy::Never;
    let orch = Orchestrator::new(run, model).await.expect("session");
    orch.start("split the work").await.expect("start");
    orch.wait_quiescent().await;
    assert_eq!(orch.root_last_message().await.as_deref(), Some("both done"));

    let requests = server.requests();
    for request in &requests {
        assert_eq!(check_request(request), Ok(()), "{}", request.raw_body);
    }
    let sibling = |name: &str| {
        requests
            .iter()
            .find(|r| first_text(&r.body).contains(&format!("Task name: /root/{name}")))
            .unwrap_or_else(|| panic!("{name} sent a request"))
            .raw_body
            .clone()
    };
    let (a, b) = (sibling("worker_a"), sibling("worker_b"));
    let same = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let task = a.find("Task name: /root/worker_").expect("the task");
    assert_eq!(
        same,
        task + "Task name: /root/worker_".len(),
        "the bytes differ before the task: {}",
        &a[..same]
    );
    let body: Value = serde_json::from_str(&a).expect("json");
    let last_tool = body["tools"].as_array().map_or(0, Vec::len) - 1;
    assert_eq!(
        breakpoints(&body),
        [
            format!("tools.{last_tool}"),
            "system.0".to_string(),
            "messages.0.0".to_string()
        ]
    );
    // The root's later requests in its turn end where the one before ended, and at their own
    // end: the cache entry each request writes is read by the next.
    let root: Vec<Value> = requests
        .iter()
        .map(|r| r.body.clone())
        .filter(|body| !first_text(body).contains("Task name: /root/"))
        .collect();
    assert!(root.len() >= 3, "{root:?}");
    let messages = root[2]["messages"].as_array().cloned().unwrap_or_default();
    let end = |m: usize| {
        let blocks = messages[m]["content"].as_array().map_or(0, Vec::len);
        format!("messages.{m}.{}", blocks - 1)
    };
    let last = messages.len() - 1;
    let assistant = (0..last)
        .rfind(|m| messages[*m]["role"] == "assistant")
        .expect("an assistant message");
    assert_eq!(breakpoints(&root[2])[2..], [end(assistant - 1), end(last)]);
}

/// A valid request, then one change each: the mock answers the changed ones as the API would.
#[test]
fn the_mock_refuses_what_the_messages_api_refuses() {
    let body = json!({
        "model": "m", "max_tokens": 2000, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "list_agents", "description": "", "input_schema": {"type": "object"}}],
        "system": [{"type": "text", "text": "be brief"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": arbor_tests::mock_http::signature_of("t")},
                {"type": "tool_use", "id": "toolu_1", "name": "list_agents", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[]"},
                {"type": "text", "text": "and then?"}]},
        ],
    });
    let recorded = |body: &Value| Recorded {
        method: "POST".into(),
        path: "/v1/messages".into(),
        headers: vec![
            ("x-api-key".into(), "k".into()),
            ("anthropic-version".into(), "2023-06-01".into()),
        ],
        raw_body: body.to_string(),
        body: body.clone(),
    };
    assert_eq!(check_request(&recorded(&body)), Ok(()));
    let refused = |change: &dyn Fn(&mut Value), says: &str| {
        let mut changed = body.clone();
        change(&mut changed);
        let error = check_request(&recorded(&changed)).expect_err(says);
        assert!(error.contains(says), "{error}");
    };
    refused(
        &|b| {
            b["messages"][2]["content"]
                .as_array_mut()
                .expect("list")
                .reverse()
        },
        "must come first",
    );
    refused(
        &|b| b["messages"][2]["content"] = json!([{"type": "text", "text": "and then?"}]),
        "without `tool_result`",
    );
    refused(
        &|b| b["messages"][1]["content"][0]["thinking"] = json!("changed"),
        "Invalid `signature`",
    );
    refused(
        &|b| {
            drop(
                b["messages"][1]["content"]
                    .as_array_mut()
                    .expect("list")
                    .remove(0),
            )
        },
        "Expected `thinking`",
    );
    refused(
        &|b| b["thinking"]["budget_tokens"] = json!(100),
        "at least 1024",
    );
    refused(
        &|b| b["messages"][0]["content"][0]["text"] = json!(" "),
        "non-whitespace",
    );
    refused(
        &|b| b["messages"][1]["content"][1]["id"] = json!("call:1"),
        "should match pattern",
    );
    refused(
        &|b| {
            b["system"][0]["cache_control"] = json!({"type": "ephemeral"});
            for m in 0..3 {
                let blocks = b["messages"][m]["content"].as_array_mut().expect("list");
                for block in blocks.iter_mut().filter(|x| x["type"] != "thinking") {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
            }
        },
        "A maximum of 4 blocks",
    );
    refused(
        &|b| b["messages"][1]["content"][0]["cache_control"] = json!({"type": "ephemeral"}),
        "cannot be cached",
    );
}
