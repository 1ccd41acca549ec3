//! HTTP model providers on Restate workers: workers started with `--provider` answer a session
//! without a script from a mock model server over real HTTP (Responses and Chat Completions),
//! the session's model name in every request and each response asked for once; a session
//! without a script on workers without a provider fails its turn with the sentence naming
//! the fix.

use std::process::{Command, Stdio};
use std::time::Duration;

use arbor_tests::mock_http::{MockServer, Output, Recorded, Reply, chat_events, responses_events};
use serde_json::{Value, json};

use super::cluster::{Cluster, Run};

const KEY: &str = "sk-test-restate-worker-4d9e2b";
const MODEL: &str = "mock-restate-model";
const PROMPT: &str = "ROOT-PROMPT: ask a child";
const CHILD_TASK: &str = "child task: say hello";

/// The text of a message's content: a string, or the first part's `text`.
fn content_text(content: &Value) -> String {
    content
        .as_str()
        .or_else(|| content[0]["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// How a tool output is found in one format's items.
type OutputOf = fn(&Value) -> Option<String>;

/// `(agent, tool outputs so far, tool outputs' text)` of a request in either format: the agent
/// is told by its first user message (the root's prompt or the child's spawn mail).
fn who(body: &Value) -> (&'static str, usize, String) {
    let (items, output_of): (Vec<Value>, OutputOf) = if let Some(items) = body["input"].as_array() {
        (items.clone(), |item| {
            (item["type"] == "function_call_output")
                .then(|| item["output"].as_str().unwrap_or_default().to_string())
        })
    } else {
        (
            body["messages"].as_array().cloned().unwrap_or_default(),
            |item| (item["role"] == "tool").then(|| content_text(&item["content"])),
        )
    };
    let first = items
        .iter()
        .find(|item| item["role"] == "user")
        .map(|item| content_text(&item["content"]))
        .unwrap_or_default();
    let agent = if first.contains(PROMPT) {
        "root"
    } else {
        "child"
    };
    let outputs: Vec<String> = items.iter().filter_map(output_of).collect();
    (agent, outputs.len(), outputs.join("\n"))
}

/// What the mock model answers: the root spawns `w`, waits for it, then reports what it saw.
fn answer(body: &Value) -> Vec<Output> {
    match who(body) {
        ("root", 0, _) => vec![Output::call(
            "call_spawn",
            "spawn_agent",
            &json!({"task_name": "w", "message": CHILD_TASK}),
        )],
        ("root", 1, _) => vec![Output::call(
            "call_wait",
            "wait_agent",
            &json!({"mode": "all", "timeout_ms": 60000}),
        )],
        ("root", _, outputs) if outputs.contains("hello from the child") => {
            vec![Output::text("root saw the child's hello")]
        }
        ("root", _, outputs) => vec![Output::text(&format!("root saw no hello: {outputs}"))],
        _ => vec![Output::text("hello from the child")],
    }
}

/// A mock server answering in the Responses (`chat == false`) or Chat Completions format.
fn mock(runtime: &tokio::runtime::Runtime, chat: bool) -> MockServer {
    runtime.block_on(MockServer::start(move |request| {
        let outputs = answer(&request.body);
        Reply::sse(if chat {
            chat_events(&outputs)
        } else {
            responses_events(&outputs)
        })
    }))
}

/// `arbor exec --engine restate --json --model MODEL` (no script) to its end.
fn exec_model(cluster: &Cluster, home: &std::path::Path) -> Run {
    let child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["exec", "--engine", "restate", "--json", "--restate-url"])
        .arg(cluster.server.ingress_url())
        .args(["--model", MODEL, "--cwd"])
        .arg(cluster.dir.path())
        .arg(PROMPT)
        .env("ARBOR_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start arbor exec");
    Run::finish(child, Duration::from_secs(120))
}

/// Starts workers with `provider` against a mock server, runs the tree, checks the requests.
fn tree_over_http(provider: &str, workers: usize) {
    let home = tempfile::tempdir().expect("home");
    let home_path = home.path().to_str().expect("utf-8 home");
    // The mock serves on a runtime of its own, started first: the workers need its address.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let server = mock(&runtime, provider == "chat");
    let base_url = server.base_url();
    let cluster = Cluster::start_with(
        workers,
        &[
            "--provider",
            provider,
            "--model",
            MODEL,
            "--base-url",
            &base_url,
        ],
        &[("ARBOR_HOME", home_path), ("OPENAI_API_KEY", KEY)],
    );

    let run = exec_model(&cluster, home.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.final_message().as_deref(),
        Some("root saw the child's hello")
    );
    let requests: Vec<Recorded> = server.requests();
    let mut asked: Vec<(&str, usize)> = requests
        .iter()
        .map(|request| {
            let (agent, outputs, _) = who(&request.body);
            (agent, outputs)
        })
        .collect();
    asked.sort_unstable();
    assert_eq!(
        asked,
        [("child", 0), ("root", 0), ("root", 1), ("root", 2)],
        "each response is asked for once"
    );
    let path = if provider == "chat" {
        "/v1/chat/completions"
    } else {
        "/v1/responses"
    };
    for request in &requests {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, path);
        assert_eq!(request.body["model"], MODEL, "{}", request.raw_body);
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    // The key stays on the workers: the session's stored settings never hold it.
    let session = run.session();
    let rows = cluster.agents(&session);
    assert!(rows.iter().any(|row| row.path.as_str() == "/root/w"));
    let history = cluster.history(&session, &rows[0].path);
    let dump = serde_json::to_string(&history.items).expect("json");
    assert!(!dump.contains(KEY));
}

#[test]
fn a_tree_answers_from_the_workers_responses_provider() {
    tree_over_http("openai", 2);
}

#[test]
fn a_tree_answers_from_the_workers_chat_provider() {
    tree_over_http("chat", 1);
}

#[test]
fn a_session_without_a_script_on_workers_without_a_provider_fails_with_the_fix() {
    let home = tempfile::tempdir().expect("home");
    let cluster = Cluster::start(1);
    let run = exec_model(&cluster, home.path());
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    let text = serde_json::to_string(&run.events).expect("json") + &run.stderr;
    assert!(
        text.contains("start the workers with --provider openai|chat"),
        "{text}"
    );
}
