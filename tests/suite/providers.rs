//! The HTTP providers (`openai`: Responses, `chat`: Chat Completions) against local mock
//! servers: stream framing, tool calls, retries, errors, cancellation, key hygiene, and a full
//! multi-agent run through the mock Responses server.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arbor_model::{
    AgentIdentity, HttpProviderConfig, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ProviderKind, RetryPolicy, build_provider,
};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentPath, ApprovalPolicy, Event, ResponseItem, ThreadId, ToolSpec, Usage};
use arbor_tests::mock_http::{
    MockServer, Output, Reply, USAGE, chat_events, responses_events, split_every,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const KEY: &str = "sk-test-SECRET-7f3a9c1e5b";
const KEY_ENV: &str = "ARBOR_TEST_API_KEY";
const KINDS: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Chat];

fn config(server: &MockServer) -> HttpProviderConfig {
    HttpProviderConfig {
        base_url: server.base_url(),
        api_key: Some(KEY.to_string()),
        api_key_env: KEY_ENV.to_string(),
        request_timeout: Duration::from_secs(20),
        extra_headers: vec![("x-arbor-test".to_string(), "providers".to_string())],
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
    }
}

fn request(input: Vec<ResponseItem>) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::root(),
            nickname: None,
            role: "default".to_string(),
        },
        model: "mock-model".to_string(),
        reasoning_effort: None,
        instructions: "you are a test".to_string(),
        input: input.into(),
        tools: std::sync::Arc::new(vec![ToolSpec {
            name: "list_agents".to_string(),
            description: "List the agents.".to_string(),
            parameters: json!({"type": "object", "properties": {}}),
        }]),
        parallel_tool_calls: true,
    }
}

fn user(text: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "user".to_string(),
        content: text.to_string(),
    }
}

/// The events of a stream answering with `outputs`, in `kind`'s wire format.
fn events(kind: ProviderKind, outputs: &[Output]) -> Vec<String> {
    match kind {
        ProviderKind::OpenAi => responses_events(outputs),
        ProviderKind::Chat => chat_events(outputs),
    }
}

fn stream_text(kind: ProviderKind, outputs: &[Output]) -> String {
    events(kind, outputs).concat()
}

/// The items the provider should return for `outputs`.
fn items(outputs: &[Output]) -> Vec<ResponseItem> {
    outputs
        .iter()
        .map(|output| match output {
            Output::Text(text) => ResponseItem::Message {
                role: "assistant".to_string(),
                content: text.clone(),
            },
            Output::Call(call_id, name, arguments) => ResponseItem::FunctionCall {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
        })
        .collect()
}

fn usage() -> Option<Usage> {
    let (input_tokens, cached_input_tokens, output_tokens) = USAGE;
    Some(Usage {
        input_tokens,
        cached_input_tokens,
        output_tokens,
    })
}

/// Runs one request against `server` and collects the events the provider sent.
async fn respond(
    kind: ProviderKind,
    config: HttpProviderConfig,
) -> (Result<ModelResponse, ModelError>, Vec<ModelEvent>) {
    let provider = build_provider(kind, config).expect("provider");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider.respond(&request(vec![user("hi")]), &tx).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (result, events)
}

fn retries(events: &[ModelEvent]) -> Vec<(String, u64)> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::Retrying {
                reason,
                retry_in_ms,
            } => Some((reason.clone(), *retry_in_ms)),
            ModelEvent::ItemDone(_) => None,
        })
        .collect()
}

fn endpoint(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "/v1/responses",
        ProviderKind::Chat => "/v1/chat/completions",
    }
}

fn tool_calls() -> Vec<Output> {
    vec![
        Output::text("Spawning both."),
        Output::call(
            "call_1",
            "spawn_agent",
            &json!({"task_name": "worker_a", "message": "rename foo to bar in every file of src/"}),
        ),
        Output::call(
            "call_2",
            "exec_command",
            &json!({"cmd": "grep -rn 'foo' src/ | head -n 50", "timeout_ms": 10000}),
        ),
        Output::call("call_3", "list_agents", &json!({})),
    ]
}

#[tokio::test]
async fn a_plain_text_answer_in_any_framing() {
    let outputs = [Output::text("Hello there, this is a streamed answer.")];
    for kind in KINDS {
        let text = stream_text(kind, &outputs);
        let framings = [
            vec![text.clone().into_bytes()],
            split_every(&text, 7),
            split_every(&text, 1),
        ];
        for chunks in framings {
            let reads = chunks.len();
            let server = MockServer::with_replies(vec![Reply::sse(chunks)]).await;
            let (result, events) = respond(kind, config(&server)).await;
            let response = result.unwrap_or_else(|e| panic!("{kind} in {reads} reads: {e}"));
            assert_eq!(response.items, items(&outputs), "{kind} in {reads} reads");
            assert_eq!(response.usage, usage(), "{kind}");
            assert_eq!(events, [ModelEvent::ItemDone(items(&outputs)[0].clone())]);
            let requests = server.requests();
            assert_eq!(requests.len(), 1);
            let sent = &requests[0];
            assert_eq!(
                (sent.method.as_str(), sent.path.as_str()),
                ("POST", endpoint(kind))
            );
            assert_eq!(
                sent.header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
            assert_eq!(sent.header("x-arbor-test"), Some("providers"));
            assert_eq!(sent.body["model"], "mock-model");
            assert_eq!(sent.body["stream"], true);
        }
    }
}

#[tokio::test]
async fn one_and_several_parallel_tool_calls_with_arguments_in_pieces() {
    let one = vec![Output::call(
        "call_9",
        "list_agents",
        &json!({"path_prefix": "/root"}),
    )];
    for kind in KINDS {
        for outputs in [one.clone(), tool_calls()] {
            let text = stream_text(kind, &outputs);
            let server = MockServer::with_replies(vec![Reply::sse(split_every(&text, 11))]).await;
            let (result, events) = respond(kind, config(&server)).await;
            let response = result.unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(response.items, items(&outputs), "{kind}");
            let done: Vec<ResponseItem> = events
                .into_iter()
                .filter_map(|e| match e {
                    ModelEvent::ItemDone(item) => Some(item),
                    ModelEvent::Retrying { .. } => None,
                })
                .collect();
            assert_eq!(
                done,
                items(&outputs),
                "{kind}: every item reported once, in order"
            );
        }
    }
}

#[tokio::test]
async fn keep_alive_comments_and_unknown_events_are_skipped() {
    let outputs = tool_calls();
    for kind in KINDS {
        let unknown = match kind {
            ProviderKind::OpenAi => {
                "event: response.some_future_event\ndata: {\"type\":\"response.some_future_event\",\"x\":1}\n\n"
            }
            ProviderKind::Chat => "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        };
        let mut text = String::from(": connected\r\n\r\n");
        for event in events(kind, &outputs) {
            text.push_str(&event);
            text.push_str(": keep-alive\n\n");
            text.push_str(unknown);
        }
        let server = MockServer::with_replies(vec![Reply::sse(split_every(&text, 13))]).await;
        let (result, _) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
    }
}

#[tokio::test]
async fn a_tool_call_is_reported_before_the_stream_ends_and_dropping_the_request_closes_it() {
    let outputs = [Output::call("call_early", "list_agents", &json!({}))];
    for kind in KINDS {
        // Everything up to (not including) the completion, then silence.
        let all = events(kind, &outputs);
        let keep = match kind {
            ProviderKind::OpenAi => all.len() - 1,
            // The chat call is done at its finish chunk; usage and [DONE] never come.
            ProviderKind::Chat => all.len() - 2,
        };
        let server =
            MockServer::with_replies(vec![Reply::sse(all[..keep].to_vec()).then_stall()]).await;
        let provider = build_provider(kind, config(&server)).expect("provider");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let request = request(vec![user("hi")]);
            provider.respond(&request, &tx).await
        });
        let first = rx.recv().await.expect("an event before the end");
        assert_eq!(
            first,
            ModelEvent::ItemDone(items(&outputs)[0].clone()),
            "{kind}"
        );
        assert!(
            !task.is_finished(),
            "{kind}: the response is still streaming"
        );
        task.abort();
        assert!(task.await.expect_err("aborted").is_cancelled());
        // The server sees the connection close: the interrupt reached the socket.
        server.wait_for_clients_to_leave(1).await;
    }
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    let outputs = [Output::text("after the wait")];
    for kind in KINDS {
        let limited = Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "1");
        let ok = Reply::sse(split_every(&stream_text(kind, &outputs), 64));
        let server = MockServer::with_replies(vec![limited, ok]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
        assert_eq!(
            retries(&events),
            [(
                "http 429: Rate limit reached (attempt 1 of 3)".to_string(),
                1000
            )],
            "{kind}"
        );
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_500_then_success() {
    let outputs = [Output::text("recovered")];
    for kind in KINDS {
        let failing = Reply::json(
            500,
            &json!({"error": {"message": "The server had an error"}}),
        );
        let ok = Reply::sse([stream_text(kind, &outputs)]);
        let server = MockServer::with_replies(vec![failing, ok]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{kind}: {retries:?}");
        assert_eq!(
            retries[0].0,
            "http 500: The server had an error (attempt 1 of 3)"
        );
        assert!(retries[0].1 <= 20, "backoff within max_delay: {retries:?}");
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_retried_from_the_start() {
    let outputs = tool_calls();
    for kind in KINDS {
        let all = events(kind, &outputs);
        let text = all.concat();
        // Cut in the middle of an event, then the connection drops.
        let dropped = Reply::sse(split_every(&text[..text.len() / 2], 50)).then_drop();
        // A body that ends cleanly, but early, is as incomplete as a dropped one.
        let ended = Reply::sse(all[..all.len() / 2].to_vec());
        let ok = Reply::sse(split_every(&text, 50));
        let server = MockServer::with_replies(vec![dropped, ended, ok]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
        let reasons: Vec<String> = retries(&events).into_iter().map(|r| r.0).collect();
        assert_eq!(reasons.len(), 2, "{kind}: {reasons:?}");
        assert!(
            reasons[0].starts_with("the stream broke"),
            "{kind}: {reasons:?}"
        );
        assert!(
            reasons[1].starts_with("the stream ended before"),
            "{kind}: {reasons:?}"
        );
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn running_out_of_attempts() {
    for kind in KINDS {
        let limited = || Reply::json(429, &json!({"error": {"message": "slow down"}}));
        let server = MockServer::with_replies(vec![limited(), limited(), limited()]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result, Err(ModelError::RateLimited), "{kind}");
        assert_eq!((retries(&events).len(), server.requests().len()), (2, 3));

        let down = || Reply::json(503, &json!({"error": {"message": "overloaded"}}));
        let server = MockServer::with_replies(vec![down(), down(), down()]).await;
        let (result, _) = respond(kind, config(&server)).await;
        assert_eq!(
            result,
            Err(ModelError::Transport(
                "http 503: overloaded (gave up after 3 attempts)".to_string()
            )),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let server = MockServer::with_replies(Vec::new()).await;
    let mut config = config(&server);
    drop(server);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    config.base_url = format!("http://127.0.0.1:{port}/v1");
    config.retry.max_attempts = 2;
    for kind in KINDS {
        let (result, events) = respond(kind, config.clone()).await;
        assert_eq!(retries(&events).len(), 1);
        match result {
            Err(ModelError::Transport(reason)) => {
                assert!(reason.contains("gave up after 2 attempts"), "{reason}");
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_400_surfaces_the_server_message_without_retrying() {
    for kind in KINDS {
        let bad = Reply::json(
            400,
            &json!({"error": {"message": "Invalid value for 'model': 'nope'.", "type": "invalid_request_error", "param": "model"}}),
        );
        let server = MockServer::with_replies(vec![bad]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(
            result,
            Err(ModelError::Http {
                status: 400,
                message: "Invalid value for 'model': 'nope'.".to_string()
            }),
            "{kind}"
        );
        assert!(retries(&events).is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_json_answer_to_a_streamed_request_is_not_retried() {
    for kind in KINDS {
        let json = Reply::json(
            200,
            &json!({"error": {"message": "streaming is not supported"}}),
        );
        let server = MockServer::with_replies(vec![json]).await;
        let (result, _) = respond(kind, config(&server)).await;
        assert_eq!(
            result,
            Err(ModelError::Failed(
                "the server answered with json, not an event stream: streaming is not supported"
                    .to_string()
            )),
            "{kind}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_rejected_key_names_the_variable_and_never_the_key() {
    for kind in KINDS {
        let rejected = Reply::json(
            401,
            &json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "code": "invalid_api_key"}}),
        );
        let server = MockServer::with_replies(vec![rejected]).await;
        let (result, _) = respond(kind, config(&server)).await;
        let error = result.expect_err("401");
        let text = format!("{error} {error:?}");
        assert!(
            matches!(error, ModelError::Http { status: 401, .. }),
            "{text}"
        );
        assert!(text.contains("api key was rejected"), "{text}");
        assert!(text.contains(KEY_ENV), "{text}");
        assert!(!text.contains(KEY), "{text}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn the_key_never_shows_in_debug_errors_or_retry_events() {
    for kind in KINDS {
        // A server that echoes the key in every kind of error.
        let echo = json!({"error": {"message": format!("bad key {KEY}")}});
        let replies = vec![
            Reply::json(500, &echo),
            Reply::sse([format!(
                "data: {{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"{KEY}\"}}\n\n"
            )]),
            Reply::json(403, &echo),
        ];
        let server = MockServer::with_replies(replies).await;
        let config = config(&server);
        let (result, events) = respond(kind, config.clone()).await;
        let text = format!("{config:?} {result:?} {events:?}");
        assert!(
            matches!(result, Err(ModelError::Http { status: 403, .. })),
            "{text}"
        );
        assert!(!text.contains(KEY), "{kind}: {text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}

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
        orch.root_last_message().as_deref(),
        Some("both workers are done: worker_a finished | worker_b finished")
    );
    let paths: HashSet<String> = orch
        .agents()
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
