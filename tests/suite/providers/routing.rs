//! Named providers through the binary: a tree whose root and explorer use different providers
//! (two mock servers, each request with its own key), a spawn naming an unknown provider, keys
//! kept out of files and commands, and a fallback from a provider overloaded for good whose
//! history the fallback's API takes.

use std::path::Path;

use arbor_tests::mock_http::{
    MockServer, Output, Reply, check_request, messages_error, messages_events, responses_events,
};
use serde_json::{Value, json};

use crate::cli::{Workspace, text};

const CLAUDE_KEY: &str = "sk-ant-test-7c41d9e0aa";
const GPT_KEY: &str = "sk-gpt-test-52b8f31c9d";

/// The text of the first user message of a Messages or Responses request.
fn first_user_text(body: &Value) -> String {
    let list = body["messages"].as_array().or(body["input"].as_array());
    list.into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn count(body: &Value, kind: &str) -> usize {
    body.to_string().matches(&format!("\"{kind}\"")).count()
}

/// Runs `arbor exec --json PROMPT` in the workspace with both keys in the environment.
async fn exec(ws: &Workspace, prompt: &str) -> std::process::Output {
    let mut cmd = ws.arbor();
    cmd.args(["exec", "--json", "--approval-policy", "never", "--cwd"])
        .arg(ws.project())
        .arg(prompt)
        .env("ARBOR_TEST_CLAUDE_KEY", CLAUDE_KEY)
        .env("ARBOR_TEST_GPT_KEY", GPT_KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    tokio::task::spawn_blocking(move || cmd.output().expect("arbor runs"))
        .await
        .expect("joined")
}

fn write_config(ws: &Workspace, text: &str) {
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(ws.home().join("config.toml"), text).expect("config");
}

/// Every file under `dir`, read as text.
fn contents(dir: &Path, found: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            contents(&path, found);
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            found.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
}

/// The session a `--json` run started.
fn session_of(stdout: &[u8]) -> String {
    events(stdout)
        .iter()
        .find(|e| e["type"] == "session.started")
        .and_then(|e| e["session_id"].as_str())
        .expect("a session.started event")
        .to_string()
}

/// The `--json` events of a run, parsed.
fn events(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_and_its_explorer_on_two_providers_each_with_its_key() {
    let claude = MockServer::messages(|request| {
        let outputs = match count(&request.body, "tool_result") {
            0 => vec![
                Output::call(
                    "toolu_scout",
                    "spawn_agent",
                    &json!({"task_name": "scout", "agent_type": "explorer", "message": "look around"}),
                ),
                Output::call(
                    "toolu_bad",
                    "spawn_agent",
                    &json!({"task_name": "lost", "message": "x", "model": "nope/some-model"}),
                ),
                Output::call("toolu_env", "exec_command", &json!({"cmd": "env"})),
            ],
            3 => vec![Output::call(
                "toolu_wait",
                "wait_agent",
                &json!({"mode": "all", "timeout_ms": 60000}),
            )],
            _ => vec![Output::text("root done")],
        };
        Reply::sse(messages_events(&outputs))
    })
    .await;
    let gpt = MockServer::start(|_| Reply::sse(responses_events(&[Output::text("scouted")]))).await;
    let ws = Workspace::new();
    write_config(
        &ws,
        &format!(
            "provider = \"claude\"\nmodel = \"claude-mock\"\n\
             [providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"ARBOR_TEST_CLAUDE_KEY\"\n\
             [providers.gpt]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"ARBOR_TEST_GPT_KEY\"\n\
             [roles.explorer]\nmodel = \"gpt/gpt-mock-mini\"\n",
            claude.base_url(),
            gpt.base_url()
        ),
    );
    let out = exec(&ws, "scout the project").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    // Each server saw only its agents, with its own key and model.
    let root_requests = claude.requests();
    assert!(root_requests.len() >= 3, "{root_requests:?}");
    for request in &root_requests {
        assert_eq!(check_request(request), Ok(()), "{}", request.raw_body);
        assert_eq!(request.header("x-api-key"), Some(CLAUDE_KEY));
        assert_eq!(request.body["model"], "claude-mock");
        assert!(!first_user_text(&request.body).contains("Task name: /root/scout"));
    }
    let scout_requests = gpt.requests();
    assert_eq!(scout_requests.len(), 1);
    let scout = &scout_requests[0];
    assert_eq!(
        scout.header("authorization"),
        Some(format!("Bearer {GPT_KEY}").as_str())
    );
    assert!(scout.header("x-api-key").is_none());
    assert_eq!(scout.body["model"], "gpt-mock-mini");
    assert!(first_user_text(&scout.body).contains("Task name: /root/scout"));

    // The spawn naming an unknown provider was refused, and no agent made.
    let results: Vec<(String, String)> = events(&out.stdout)
        .iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| {
            (
                e["call_id"].as_str().unwrap_or_default().to_string(),
                e["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let refused = results
        .iter()
        .find(|(id, _)| id == "toolu_bad")
        .map(|(_, output)| output.as_str())
        .unwrap_or_default();
    assert!(
        refused.contains("invalid arguments for spawn_agent: field `model`: unknown provider `nope` in `nope/some-model`, expected one of claude, gpt"),
        "{refused}"
    );
    // The commands agents run see neither key nor its variable.
    let env = results
        .iter()
        .find(|(id, _)| id == "toolu_env")
        .map(|(_, output)| output.as_str())
        .unwrap_or_default();
    assert!(env.contains("PATH="), "{env}");
    for secret in [
        CLAUDE_KEY,
        GPT_KEY,
        "ARBOR_TEST_CLAUDE_KEY",
        "ARBOR_TEST_GPT_KEY",
    ] {
        assert!(!env.contains(secret), "{secret} in {env}");
    }

    // The agents record their providers; usage lines say who served them; no key on disk.
    let session = session_of(&out.stdout);
    let agents = ws.run(&["agents", &session, "--json"]);
    let agents: Value = serde_json::from_slice(&agents.stdout).expect("agents json");
    let by_path = |path: &str| {
        agents
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["path"] == path)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        (
            by_path("/root")["provider"].clone(),
            by_path("/root")["model"].clone()
        ),
        (json!("claude"), json!("claude-mock"))
    );
    assert_eq!(
        (
            by_path("/root/scout")["provider"].clone(),
            by_path("/root/scout")["model"].clone()
        ),
        (json!("gpt"), json!("gpt-mock-mini"))
    );
    let log = text(&ws.run(&["log", &session, "/root/scout"]).stdout);
    assert!(log.contains("from gpt/gpt-mock-mini"), "{log}");
    let mut files = Vec::new();
    contents(&ws.home(), &mut files);
    assert!(files.len() > 3);
    for (path, content) in files {
        assert!(
            !content.contains(CLAUDE_KEY) && !content.contains(GPT_KEY),
            "a key in {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_falls_back_from_an_overloaded_provider_and_finishes_on_the_other() {
    // The primary answers the turn's first request (reasoning and a call), then is
    // overloaded for good.
    let gpt = MockServer::start(|request| {
        if count(&request.body, "function_call_output") == 0 {
            Reply::sse(responses_events(&[
                Output::thinking("first look"),
                Output::call(
                    "call_1",
                    "exec_command",
                    &json!({"cmd": "echo one >> steps.txt"}),
                ),
            ]))
        } else {
            messages_error(529, "overloaded_error", "Overloaded")
        }
    })
    .await;
    let claude = MockServer::messages(|request| {
        let outputs = match count(&request.body, "tool_result") {
            1 => vec![
                Output::thinking("take over"),
                Output::call(
                    "toolu_2",
                    "exec_command",
                    &json!({"cmd": "echo two >> steps.txt"}),
                ),
            ],
            _ => vec![Output::text("finished on the fallback")],
        };
        Reply::sse(messages_events(&outputs))
    })
    .await;
    let ws = Workspace::new();
    write_config(
        &ws,
        &format!(
            "provider = \"gpt\"\nmodel = \"gpt-mock\"\nreasoning_effort = \"low\"\n\
             fallbacks = [\"claude/claude-mock\"]\n\
             [providers.gpt]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"ARBOR_TEST_GPT_KEY\"\nmax_retries = 1\n\
             [providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"ARBOR_TEST_CLAUDE_KEY\"\n",
            gpt.base_url(),
            claude.base_url()
        ),
    );
    let out = exec(&ws, "do two steps").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let steps = std::fs::read_to_string(ws.project().join("steps.txt")).expect("steps");
    assert_eq!(steps, "one\ntwo\n");

    // The primary: its answer, then one request and its one retry; while it cools down the
    // turn's last request does not go there.
    assert_eq!(gpt.requests().len(), 3);
    let requests = claude.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(check_request(request), Ok(()), "{}", request.raw_body);
        assert_eq!(request.body["model"], "claude-mock");
    }
    // The first request the fallback got: the call and its output as its API has them, the
    // other API's reasoning left out, and thinking off for a tool loop it did not begin.
    let first = &requests[0].body;
    assert!(!requests[0].raw_body.contains("enc:first look"));
    assert!(first.get("thinking").is_none(), "{first}");
    assert_eq!(first["messages"][1]["content"][0]["id"], "call_1");
    assert_eq!(first["messages"][2]["content"][0]["tool_use_id"], "call_1");
    // Its own loop goes on with thinking.
    assert_eq!(requests[1].body["thinking"]["type"], "enabled");

    let fallbacks: Vec<Value> = events(&out.stdout)
        .into_iter()
        .filter(|e| e["type"] == "model.fallback")
        .collect();
    assert_eq!(fallbacks.len(), 2, "{fallbacks:?}");
    assert_eq!(fallbacks[0]["from"], "gpt/gpt-mock");
    assert_eq!(fallbacks[0]["to"], "claude/claude-mock");
    assert!(
        fallbacks[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("http 529: Overloaded (gave up after 2 attempts)")),
        "{fallbacks:?}"
    );
    assert_eq!(
        fallbacks[0]["note"],
        "1 reasoning item of the history left out: the anthropic API cannot take it"
    );
    assert!(
        fallbacks[1]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("it failed less than 60 s ago")),
        "{fallbacks:?}"
    );
    let session = session_of(&out.stdout);
    let log = text(&ws.run(&["log", &session]).stdout);
    assert!(
        log.contains("fallback: gpt/gpt-mock -> claude/claude-mock"),
        "{log}"
    );
    assert!(log.contains("from claude/claude-mock"), "{log}");
    assert!(log.contains("from gpt/gpt-mock"), "{log}");
}
