//! Configuration and model selection through the binary: config.toml, provider flags against a
//! local mock server, missing keys, per-role models, usage totals and the token budget.

use arbor_protocol::{AgentStatus, Event};
use arbor_tests::Session;
use arbor_tests::mock_http::{MockServer, Output, Reply, chat_events, responses_events};
use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};

fn run_async(
    ws: &Workspace,
    args: Vec<String>,
    envs: Vec<(&'static str, String)>,
) -> tokio::task::JoinHandle<std::process::Output> {
    let mut cmd = ws.arbor();
    cmd.args(&args).env_remove("OPENAI_API_KEY");
    for (key, value) in envs {
        cmd.env(key, value);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("arbor runs"))
}

#[test]
fn missing_key_model_or_bad_config_is_refused_before_any_agent_starts() {
    let ws = Workspace::new();
    let project = ws.project().display().to_string();
    let no_key = ws
        .arbor()
        .env_remove("OPENAI_API_KEY")
        .args([
            "exec",
            "--provider",
            "openai",
            "--model",
            "m",
            "--cwd",
            &project,
            "hi",
        ])
        .output()
        .expect("runs");
    assert_eq!(no_key.status.code(), Some(2));
    assert!(
        text(&no_key.stderr).contains("OPENAI_API_KEY is not set"),
        "{}",
        text(&no_key.stderr)
    );
    let no_model = ws
        .arbor()
        .env("OPENAI_API_KEY", "k")
        .args(["exec", "--provider", "openai", "--cwd", &project, "hi"])
        .output()
        .expect("runs");
    assert_eq!(no_model.status.code(), Some(2));
    assert!(
        text(&no_model.stderr).contains("--model"),
        "{}",
        text(&no_model.stderr)
    );
    std::fs::create_dir_all(ws.project().join(".arbor")).expect("mkdir");
    std::fs::write(
        ws.project().join(".arbor/config.toml"),
        "provider = \"chat\"\nmodle = \"x\"\n",
    )
    .expect("write");
    let bad = ws
        .arbor()
        .args(["exec", "--cwd", &project, "hi"])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    let stderr = text(&bad.stderr);
    assert!(
        stderr.contains(".arbor/config.toml") && stderr.contains("modle"),
        "{stderr}"
    );
    // Nothing was created for a refused run.
    assert!(!ws.home().join("sessions").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_provider_from_flags_and_openai_from_config_answer_through_a_local_server() {
    let ws = Workspace::new();
    let chat =
        MockServer::start(|_| Reply::sse(chat_events(&[Output::text("hello from chat")]))).await;
    let project = ws.project().display().to_string();
    let args: Vec<String> = [
        "exec",
        "--provider",
        "chat",
        "--base-url",
        &chat.base_url(),
        "--model",
        "local-model",
        "--cwd",
        &project,
        "say hi",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_async(&ws, args, vec![]).await.expect("joined");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hello from chat");
    let request = &chat.requests()[0];
    assert_eq!(request.body["model"], "local-model");
    assert!(
        request.header("authorization").is_none(),
        "no key configured, none sent"
    );

    let responses = MockServer::start(|_| {
        Reply::sse(responses_events(&[Output::text("hello from responses")]))
    })
    .await;
    std::fs::create_dir_all(ws.project().join(".arbor")).expect("mkdir");
    std::fs::write(
        ws.project().join(".arbor/config.toml"),
        format!("provider = \"openai\"\nmodel = \"cfg-model\"\nbase_url = \"{}\"\napi_key_env = \"ARBOR_TEST_KEY\"\n[headers]\nx-team = \"arbor\"\n", responses.base_url()),
    )
    .expect("config");
    // A workspace's file may choose the provider, the URL, the key and headers once trusted.
    let trusted = ws.run(&["trust", &project]);
    assert_eq!(trusted.status.code(), Some(0), "{}", text(&trusted.stderr));
    let secret = "sk-test-secret-do-not-store".to_string();
    let args: Vec<String> = ["exec", "--cwd", &project, "say hi"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = run_async(&ws, args, vec![("ARBOR_TEST_KEY", secret.clone())])
        .await
        .expect("joined");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hello from responses");
    let request = &responses.requests()[0];
    assert_eq!(request.body["model"], "cfg-model");
    assert_eq!(request.header("x-team"), Some("arbor"));
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );
    // The key never reaches a file under ARBOR_HOME.
    for entry in walk(&ws.home()) {
        let bytes = std::fs::read(&entry).expect("read");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&secret),
            "key found in {}",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn per_role_models_from_config_and_usage_totals_in_read_commands() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(
        ws.home().join("config.toml"),
        "[roles.worker]\nmodel = \"worker-model\"\nreasoning_effort = \"low\"\n",
    )
    .expect("config");
    let out = ws.exec(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/script.json"),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let agents: Value =
        serde_json::from_slice(&ws.run(&["agents", &session, "--json"]).stdout).expect("json");
    assert_eq!(agents[0]["model"], "scripted");
    for worker in &agents.as_array().expect("array")[1..] {
        assert_eq!(worker["model"], "worker-model", "{worker}");
        assert!(worker["usage"]["input_tokens"].as_u64().expect("tokens") > 0);
    }
    let tree: Value =
        serde_json::from_slice(&ws.run(&["tree", &session, "--json"]).stdout).expect("json");
    let sum: u64 = agents
        .as_array()
        .expect("array")
        .iter()
        .map(|a| a["usage"]["output_tokens"].as_u64().expect("n"))
        .sum();
    assert_eq!(tree["tree_usage"]["output_tokens"].as_u64(), Some(sum));
}

#[tokio::test]
async fn a_spent_token_budget_starts_no_new_turn_and_names_who_was_stopped() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "one"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "two"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "never reached"}]]},
        {"match": "/root/*", "responses": [[{"say": "{{task_name}} done"}]]}
    ]});
    // Each scripted request costs about 1 700 input tokens. The root's first two requests and
    // a's one stay under 6 000; the root's third (which spawns b) crosses it, so b's first
    // turn is the one refused and the root's next request ends its turn.
    let mut s = Session::new(script, |c| c.budget_tokens = Some(6_000)).await;
    s.run("spend").await;
    let exhausted = s.seen.iter().find_map(|l| match &l.event {
        Event::BudgetExhausted { limit, used } => Some((*limit, *used)),
        _ => None,
    });
    let (limit, used) = exhausted.expect("budget.exhausted emitted");
    assert_eq!(limit, 6_000);
    assert!(used >= 6_000);
    let root = s.orch.root_status().await;
    assert!(
        matches!(&root, AgentStatus::Errored(reason) if reason == "token budget of 6000 reached"),
        "{root:?}"
    );
    let (total, stopped) = s.orch.usage_report().await;
    assert!(total.input_tokens + total.output_tokens >= 6_000);
    let stopped: Vec<String> = stopped.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        stopped,
        ["/root/b"],
        "the agent kept from its turn is named"
    );
    assert!(
        s.orch
            .agent(&Session::path("/root/b"))
            .await
            .is_none_or(|b| b.status != AgentStatus::Completed(Some("b done".into())))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_limits_and_the_model_list_come_from_config_toml() {
    let ws = Workspace::new();
    let chat = MockServer::start(|_| Reply::sse(chat_events(&[Output::text("limited")]))).await;
    let project = ws.project().display().to_string();
    std::fs::create_dir_all(ws.home()).expect("home");
    let write = |extra: &str| {
        std::fs::write(
            ws.home().join("config.toml"),
            format!(
                "provider = \"chat\"\nbase_url = \"{}\"\nmodel = \"local-model\"\n{extra}",
                chat.base_url()
            ),
        )
        .expect("config");
    };
    let exec = |extra: &[&str]| {
        let mut args: Vec<String> = ["exec", "--cwd", &project].map(String::from).to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push("hi".to_string());
        run_async(&ws, args, vec![])
    };
    write(
        "max_output_tokens = 200\n[models.local-model]\nmax_output_tokens = 90\n[models.other]\n",
    );
    let out = exec(&[]).await.expect("joined");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(chat.requests()[0].body["max_tokens"], 90);

    // A model outside the configured list is refused before anything runs.
    let out = exec(&["--model", "gpt-9"]).await.expect("joined");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("model: unknown value `gpt-9`, expected one of local-model, other"),
        "{}",
        text(&out.stderr)
    );
    for (extra, expect) in [
        (
            "max_output_tokens = 0\n",
            "`max_output_tokens` must be at least 1",
        ),
        (
            "[roles.worker]\nreasoning_effort = \"default\"\n",
            "`roles.worker.reasoning_effort`: unknown value `default`",
        ),
    ] {
        write(extra);
        let out = exec(&[]).await.expect("joined");
        assert_eq!(out.status.code(), Some(2), "{extra}");
        assert!(text(&out.stderr).contains(expect), "{}", text(&out.stderr));
    }
    assert_eq!(chat.requests().len(), 1);
}
