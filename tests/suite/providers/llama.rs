//! Exchanges recorded with a real llama.cpp server (`tests/fixtures/llama-server/`), replayed
//! by the mock server: a `/v1/responses` stream without `output_index`, a tool call whose
//! arguments were cut mid-string, and the 500 the server gives to every history holding it.

use arbor_model::{ModelError, ProviderKind};
use arbor_protocol::{AgentStatus, Event};
use arbor_tests::mock_http::{MockServer, Output, Reply, responses_events, split_every};
use serde_json::{Value, json};

use super::{Run, config, events, respond, retries};

/// The APIs llama-server speaks.
const KINDS: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Chat];

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../tests/fixtures/llama-server/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// The server's recorded answer to a history with broken arguments.
fn parse_error_500() -> Value {
    serde_json::from_str(&fixture("chat-request-with-malformed-arguments.500.txt")).expect("json")
}

fn reader(cwd: &std::path::Path) {
    std::fs::create_dir_all(cwd.join("src")).expect("mkdir");
    std::fs::write(
        cwd.join("src/reader.py"),
        "def fetch_data(path):\n    return open(path).read()\n",
    )
    .expect("write");
}

/// How many tool results the history of a request of either API holds.
fn outputs_in(body: &Value) -> usize {
    let chat = body["messages"].as_array().into_iter().flatten();
    let responses = body["input"].as_array().into_iter().flatten();
    chat.filter(|m| m["role"] == "tool").count()
        + responses
            .filter(|i| i["type"] == "function_call_output")
            .count()
}

/// Every tool-call argument text in a request body of either API.
fn call_arguments(body: &Value) -> Vec<String> {
    let chat = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|call| call["function"]["arguments"].clone());
    let responses = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call")
        .map(|item| item["arguments"].clone());
    chat.chain(responses)
        .map(|arguments| arguments.as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorded_responses_stream_runs_its_call_once_and_keeps_the_text() {
    let recorded = fixture("responses-message-then-call-no-output-index.sse");
    let server = MockServer::start(move |request| {
        if outputs_in(&request.body) == 0 {
            Reply::sse(split_every(&recorded, 113))
        } else {
            Reply::sse(responses_events(&[Output::text("done")]))
        }
    })
    .await;
    let run = Run::new(ProviderKind::OpenAi, &server, reader, |_| {}, "rename").await;

    assert_eq!(run.orch.root_last_message().await.as_deref(), Some("done"));
    let call_id = "call_6MoTpS6VmGLRufRYWWHiwhfvA0CaMn5i";
    assert_eq!(
        run.tool_calls(),
        [(call_id.to_string(), "exec_command".to_string())]
    );
    assert_eq!(run.tool_outputs().len(), 1, "the command ran once");
    let renamed = std::fs::read_to_string(run.cwd.path().join("src/reader.py")).expect("read");
    assert!(renamed.starts_with("def load_records(path)"), "{renamed}");
    // The text came before the call, in the events and in the history sent back.
    let message = run.events.iter().position(|e| {
        matches!(e, Event::AgentMessage { text, .. } if text == "Send this to your parent. Reply with this:\n")
    });
    let call = run.types().iter().position(|t| *t == "tool.call");
    assert!(
        matches!((message, call), (Some(m), Some(c)) if m < c),
        "{:?}",
        run.types()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let kinds: Vec<&str> = requests[1].body["input"]
        .as_array()
        .expect("input")
        .iter()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(requests[1].body["input"][1]["role"], "assistant");
    assert_eq!(requests[1].body["input"][2]["call_id"], call_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_mid_string_leaves_a_history_the_server_accepts() {
    let recorded: Value =
        serde_json::from_str(&fixture("chat-request-with-malformed-arguments.json")).expect("json");
    let prompt = recorded["messages"][1]["content"]
        .as_str()
        .expect("prompt")
        .to_string();
    let cut_call = &recorded["messages"][2]["tool_calls"][0];
    let (cut_id, cut_arguments) = (
        cut_call["id"].as_str().expect("id").to_string(),
        cut_call["function"]["arguments"]
            .as_str()
            .expect("arguments")
            .to_string(),
    );
    for kind in KINDS {
        let (id, arguments) = (cut_id.clone(), cut_arguments.clone());
        let refusal = parse_error_500();
        // Like llama-server: any history whose call arguments are not JSON gets the 500.
        let server = MockServer::start(move |request| {
            let bad = call_arguments(&request.body)
                .iter()
                .any(|a| serde_json::from_str::<Value>(a).is_err());
            if bad {
                return Reply::json(500, &refusal);
            }
            let outputs = match outputs_in(&request.body) {
                0 => vec![
                    Output::text("Send an agent to a child-agent:\n\n"),
                    Output::Call(id.clone(), "exec_command".into(), arguments.clone()),
                ],
                1 => vec![Output::call(
                    "call_again",
                    "exec_command",
                    &json!({"cmd": "sed -i s/fetch_data/load_records/g src/reader.py"}),
                )],
                _ => vec![Output::text("done")],
            };
            Reply::sse(events(kind, &outputs))
        })
        .await;
        let run = Run::new(kind, &server, reader, |_| {}, &prompt).await;

        assert_eq!(
            run.orch.root_status().await,
            AgentStatus::Completed(Some("done".into())),
            "{kind}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{kind}: no request met the 500");
        let outputs = run.tool_outputs();
        assert!(
            outputs[0].starts_with(
                "exec_command did not run: its arguments must be one JSON object, but the JSON \
                 text ends early (EOF while parsing a string at line 1 column 29)"
            ),
            "{kind}: {}",
            outputs[0]
        );
        let renamed = std::fs::read_to_string(run.cwd.path().join("src/reader.py")).expect("read");
        assert!(renamed.contains("load_records"), "{kind}: {renamed}");
        // The broken call goes back as an object holding the model's text.
        let wrapped = call_arguments(&requests[1].body);
        assert_eq!(
            serde_json::from_str::<Value>(&wrapped[0]).expect("json"),
            json!({"invalid_json": cut_arguments}),
            "{kind}"
        );
        if kind == ProviderKind::Chat {
            // The recorded request, but for the arguments and the tool's message.
            let sent = &requests[1].body["messages"];
            assert_eq!(sent[1], recorded["messages"][1]);
            let mut expected = recorded["messages"][2].clone();
            expected["tool_calls"][0]["function"]["arguments"] = json!(wrapped[0]);
            assert_eq!(sent[2], expected);
            assert_eq!(
                sent[3]["tool_call_id"],
                recorded["messages"][3]["tool_call_id"]
            );
        }
    }
}

#[tokio::test]
async fn the_same_500_forever_is_tried_twice_and_named() {
    let refusal = parse_error_500();
    for kind in KINDS {
        let body = refusal.clone();
        let server = MockServer::start(move |_| Reply::json(500, &body)).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(server.requests().len(), 2, "{kind}");
        assert_eq!(retries(&events).len(), 1, "{kind}");
        let error = result.expect_err("the server never answers");
        assert!(
            matches!(&error, ModelError::Http { status: 500, .. }),
            "{kind}: {error:?}"
        );
        let text = error.to_string();
        assert!(
            text.starts_with(
                "model error (http 500): Failed to parse tool call arguments as JSON: \
                 [json.exception.parse_error.101]"
            ) && text.ends_with("(the same answer to a retry; not retried again)"),
            "{kind}: {text}"
        );
    }
    // At the turn level the agent's error names the server's message.
    let server = MockServer::start(move |_| Reply::json(500, &refusal)).await;
    let run = Run::new(ProviderKind::Chat, &server, |_| {}, |_| {}, "hi").await;
    let status = run.orch.root_status().await;
    assert!(
        matches!(&status, AgentStatus::Errored(reason)
            if reason.starts_with("model error (http 500): Failed to parse tool call arguments")),
        "{status:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_announced_once_in_the_order_the_model_made_them() {
    // As gemma-3-270m answered through llama-server: text, a tree call, a slow call (which
    // starts while the stream goes on), another tree call.
    let first = [
        Output::text("working"),
        Output::call("c1", "list_agents", &json!({})),
        Output::call("c2", "exec_command", &json!({"cmd": "echo hi"})),
        Output::call("c3", "list_agents", &json!({})),
    ];
    for kind in KINDS {
        let first = first.clone();
        let server = MockServer::start(move |request| match outputs_in(&request.body) {
            0 => Reply::sse(events(kind, &first)),
            _ => Reply::sse(events(kind, &[Output::text("done")])),
        })
        .await;
        let run = Run::new(kind, &server, |_| {}, |_| {}, "go").await;
        assert_eq!(
            run.orch.root_last_message().await.as_deref(),
            Some("done"),
            "{kind}"
        );
        let announced: Vec<String> = run
            .events
            .iter()
            .filter_map(|event| match event {
                Event::AgentMessage { text, .. } => Some(format!("message {text}")),
                Event::ToolCall { call_id, .. } => Some(format!("call {call_id}")),
                _ => None,
            })
            .collect();
        assert_eq!(
            announced,
            [
                "message working",
                "call c1",
                "call c2",
                "call c3",
                "message done"
            ],
            "{kind}"
        );
        assert_eq!(run.tool_outputs().len(), 3, "{kind}");
    }
}
