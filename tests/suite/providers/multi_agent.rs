//! A multi-agent run through the mock Responses server: requests, the retry, no key on disk.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use arbor_model::{ProviderKind, build_provider};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{ApprovalPolicy, Event};
use arbor_tests::mock_http::{MockServer, Output, Reply, responses_events, split_every};
use serde_json::{Value, json};

use super::{KEY, config};

/// `(agent, step)` for a request of the multi-agent run: which agent sent it (its first input
/// tells: the root's prompt or a worker's spawn mail) and how many tool results it holds.
fn who(body: &Value) -> (String, usize) {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let first = input
        .first()
        .and_then(|item| item["content"][0]["text"].as_str())
        .unwrap_or_default();
    let agent = ["worker_a", "worker_b"]
        .into_iter()
        .find(|name| first.contains(&format!("Task name: /root/{name}")))
        .unwrap_or("root");
    let outputs = input
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .count();
    (agent.to_string(), outputs)
}

/// The worker results (mail payloads) present in a request's input.
fn results_in(body: &Value) -> Vec<String> {
    let mut found: Vec<String> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["content"][0]["text"].as_str())
        .filter(|text| text.contains("Sender: /root/worker_"))
        .map(|text| arbor_tests::payload(text).to_string())
        .collect();
    found.sort();
    found
}

/// What the mock model answers in the multi-agent run.
fn script(body: &Value) -> Vec<Output> {
    match who(body) {
        (agent, 0) if agent == "root" => vec![
            Output::call(
                "call_root_1",
                "spawn_agent",
                &json!({"task_name": "worker_a", "agent_type": "worker", "message": "list the agents"}),
            ),
            Output::call(
                "call_root_2",
                "spawn_agent",
                &json!({"task_name": "worker_b", "agent_type": "worker", "message": "say hello"}),
            ),
        ],
        (agent, 2) if agent == "root" => vec![Output::call(
            "call_root_3",
            "wait_agent",
            &json!({"mode": "all", "timeout_ms": 60000}),
        )],
        (agent, _) if agent == "root" => vec![Output::text(&format!(
            "both workers are done: {}",
            results_in(body).join(" | ")
        ))],
        (agent, 0) if agent == "worker_a" => {
            vec![Output::call("call_a_1", "list_agents", &json!({}))]
        }
        (_, 0) => vec![Output::call(
            "call_b_1",
            "exec_command",
            &json!({"cmd": "echo hello from b"}),
        )],
        (agent, _) => vec![Output::text(&format!("{agent} finished"))],
    }
}

fn files_under(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_agent_run_through_the_responses_api() {
    let failed_once = AtomicBool::new(false);
    let server = MockServer::start(move |request| {
        let (agent, step) = who(&request.body);
        // worker_a's first attempt meets a server error: the retry shows in the event stream.
        if agent == "worker_a" && step == 0 && !failed_once.swap(true, Ordering::SeqCst) {
            return Reply::json(500, &json!({"error": {"message": "try again"}}));
        }
        Reply::sse(split_every(
            &responses_events(&script(&request.body)).concat(),
            97,
        ))
    })
    .await;
    let model = build_provider(ProviderKind::OpenAi, config(&server)).expect("provider");
    let home = tempfile::TempDir::new().expect("home");
    let cwd = tempfile::TempDir::new().expect("cwd");
    let mut run = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
    run.model = "mock-model".to_string();
    run.approval_policy = ApprovalPolicy::Never;
    let orch = Orchestrator::new(run, model).await.expect("session");
    let mut events = orch.subscribe();
    orch.start("coordinate two workers").await.expect("start");
    orch.wait_quiescent().await;

    assert_eq!(
        orch.root_last_message().await.as_deref(),
        Some("both workers are done: worker_a finished | worker_b finished")
    );
    let paths: HashSet<String> = orch
        .agents()
        .await
        .iter()
        .map(|agent| agent.path.to_string())
        .collect();
    let expected: HashSet<String> = ["/root", "/root/worker_a", "/root/worker_b"]
        .map(String::from)
        .into();
    assert_eq!(paths, expected);
    let mut seen = Vec::new();
    while let Ok(line) = events.try_recv() {
        seen.push(line.event);
    }
    let retried: Vec<&Event> = seen
        .iter()
        .filter(|e| matches!(e, Event::AgentRetrying { .. }))
        .collect();
    assert_eq!(retried.len(), 1, "{retried:?}");
    assert!(
        matches!(retried[0], Event::AgentRetrying { path, reason, .. }
            if path.as_str() == "/root/worker_a" && reason.starts_with("http 500: try again")),
        "{retried:?}"
    );

    // What the server received, per agent, in arrival order.
    let mut by_agent: HashMap<String, Vec<Value>> = HashMap::new();
    for request in server.requests() {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = request.body;
        assert_eq!(
            (body["stream"].as_bool(), body["store"].as_bool()),
            (Some(true), Some(false))
        );
        by_agent.entry(who(&body).0).or_default().push(body);
    }
    let counts: HashMap<&str, usize> = by_agent
        .iter()
        .map(|(a, r)| (a.as_str(), r.len()))
        .collect();
    // The root: spawn, wait, answer. Workers: a tool call, an answer (worker_a once more: the 500).
    assert_eq!(
        counts,
        HashMap::from([("root", 3), ("worker_a", 3), ("worker_b", 2)])
    );
    let root_tools: Vec<&str> = by_agent["root"][0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| {
            assert_eq!(tool["type"], "function");
            assert!(tool["parameters"].is_object());
            tool["name"].as_str().expect("name")
        })
        .collect();
    for tool in ["spawn_agent", "wait_agent", "list_agents", "exec_command"] {
        assert!(root_tools.contains(&tool), "{tool} not in {root_tools:?}");
    }
    let own_prefix = |agent: &str| match agent {
        "root" => "call_root_",
        "worker_a" => "call_a_",
        _ => "call_b_",
    };
    for (agent, requests) in &by_agent {
        for (n, body) in requests.iter().enumerate() {
            let input = body["input"].as_array().expect("input");
            let mut calls = HashSet::new();
            for item in input {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                match item["type"].as_str() {
                    Some("function_call") => {
                        assert!(
                            call_id.starts_with(own_prefix(agent)),
                            "{agent} sent {item}"
                        );
                        calls.insert(call_id.to_string());
                    }
                    Some("function_call_output") => {
                        assert!(
                            calls.contains(call_id),
                            "{agent}: output before its call: {item}"
                        );
                    }
                    _ => {}
                }
            }
            // History only grows: each request starts with the previous one's input.
            if let Some(previous) = n.checked_sub(1).map(|p| &requests[p]["input"]) {
                let previous = previous.as_array().expect("input");
                assert!(
                    input.starts_with(previous),
                    "{agent} request {n} rewrote history"
                );
            }
        }
    }
    let worker_b_output = by_agent["worker_b"][1]["input"]
        .as_array()
        .expect("input")
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .and_then(|item| item["output"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        worker_b_output.contains("hello from b"),
        "{worker_b_output}"
    );

    orch.shutdown("test over").await;
    let mut files = Vec::new();
    files_under(home.path(), &mut files);
    assert!(!files.is_empty());
    for file in files {
        let bytes = std::fs::read(&file).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY), "the key is in {}", file.display());
    }
}
