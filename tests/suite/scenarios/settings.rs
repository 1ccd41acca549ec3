//! Model settings and roles at the edges: `spawn_agent`'s `reasoning_effort` and `model`
//! checked as a role file's are, the root narrowed by a user's `default` role, and a worker
//! whose final answer is empty.

use std::collections::BTreeMap;

use arbor_orchestrator::config::ModelSettings;
use arbor_protocol::AgentStatus;
use serde_json::json;

use arbor_tests::Session;

use super::completed;

const EFFORTS: &str = "none, minimal, low, medium, high, xhigh";

fn write_role(cwd: &std::path::Path, file: &str, text: &str) {
    let dir = cwd.join(".arbor/roles");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(file), text).expect("write role");
}

#[tokio::test]
async fn a_bad_reasoning_effort_or_unconfigured_model_spawns_no_child() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "x", "reasoning_effort": "default"}},
             {"call": "spawn_agent", "args": {"task_name": "b", "message": "x", "reasoning_effort": "0"}},
             {"call": "spawn_agent", "args": {"task_name": "c", "message": "x", "model": "gpt-9"}},
             {"call": "spawn_agent", "args": {"task_name": "d", "message": "x", "model": " "}},
             {"call": "spawn_agent", "args": {"task_name": "ok", "message": "x", "model": "small", "reasoning_effort": "low"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "checked"}]
        ]},
        {"match": "/root/ok", "responses": [[{"say": "fine"}]]}
    ]});
    let models = BTreeMap::from([
        ("scripted".to_string(), ModelSettings::default()),
        ("small".to_string(), ModelSettings::default()),
    ]);
    let mut s = Session::new(script, |c| c.models = models).await;
    s.run("spawn").await;
    assert_eq!(s.orch.root_status().await, completed("checked"));
    let errors: Vec<String> = s.tool_results("/root").into_iter().map(|r| r.1).collect();
    let invalid = "invalid arguments for spawn_agent: field";
    assert_eq!(
        errors[..4],
        [
            format!(
                "{invalid} `reasoning_effort`: unknown value `default`, expected one of {EFFORTS}"
            ),
            format!("{invalid} `reasoning_effort`: unknown value `0`, expected one of {EFFORTS}"),
            format!("{invalid} `model`: unknown value `gpt-9`, expected one of scripted, small"),
            format!("{invalid} `model`: must not be empty"),
        ]
    );
    let paths: Vec<String> = s
        .orch
        .agents()
        .await
        .iter()
        .map(|a| a.path.to_string())
        .collect();
    assert_eq!(paths, ["/root", "/root/ok"]);
    let ok = s.orch.agent(&Session::path("/root/ok")).await.expect("ok");
    assert_eq!(ok.model, "small");
}

#[tokio::test]
async fn a_role_file_gives_the_same_message_for_the_same_effort() {
    let role = "name = \"fast\"\ndescription = \"d\"\ndeveloper_instructions = \"i\"\nreasoning_effort = \"default\"\n";
    let home = tempfile::TempDir::new().expect("home");
    let cwd = tempfile::TempDir::new().expect("cwd");
    write_role(cwd.path(), "fast.toml", role);
    let err = arbor_roles::RoleSet::load(home.path(), cwd.path()).expect_err("bad effort");
    assert!(
        err.to_string().ends_with(&format!(
            "field `reasoning_effort`: unknown value `default`, expected one of {EFFORTS}"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn the_root_is_offered_exactly_the_tools_of_a_user_default_role() {
    let role = "name = \"default\"\ndescription = \"mine\"\ndeveloper_instructions = \"work alone\"\n\
                tools = [\"exec_command\", \"list_agents\", \"spawn_agent\"]\ncan_spawn = false\n\
                sandbox_mode = \"read-only\"\n";
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "x"}}],
            [{"say": "alone"}]
        ]}
    ]});
    let mut s =
        Session::with_workspace(script, |cwd| write_role(cwd, "default.toml", role), |_| {}).await;
    s.run("work").await;
    let requests = s.model.requests_for(&Session::path("/root"));
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    // can_spawn = false takes spawn_agent away even though the list names it.
    assert_eq!(offered, ["list_agents", "exec_command"]);
    assert!(requests[0].instructions.contains("work alone"));
    assert_eq!(
        s.tool_results("/root")[0].1,
        "tool `spawn_agent` is not available to this agent"
    );
    let root = s.orch.agent(&Session::path("/root")).await.expect("root");
    assert_eq!(root.sandbox, "read-only");
    assert_eq!(s.orch.agents().await.len(), 1);
}

#[tokio::test]
async fn a_default_role_cannot_widen_the_root() {
    let role = "name = \"default\"\ndescription = \"mine\"\ndeveloper_instructions = \"i\"\n\
                sandbox_mode = \"danger-full-access\"\n";
    let script = json!({"agents": [{"match": "/root", "responses": [[{"say": "ok"}]]}]});
    let mut s =
        Session::with_workspace(script, |cwd| write_role(cwd, "default.toml", role), |_| {}).await;
    s.run("work").await;
    let root = s.orch.agent(&Session::path("/root")).await.expect("root");
    assert_eq!(root.sandbox, "workspace-write");
    let requests = s.model.requests_for(&Session::path("/root"));
    assert_eq!(requests[0].tools.len(), arbor_roles::TOOL_NAMES.len());
}

#[tokio::test]
async fn an_empty_final_answer_becomes_a_result_saying_there_was_none() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "quiet", "message": "say nothing"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "heard back"}]
        ]},
        {"match": "/root/quiet", "responses": [[{"say": "  "}]]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("ask").await;
    let quiet = s
        .orch
        .agent(&Session::path("/root/quiet"))
        .await
        .expect("child");
    assert_eq!(quiet.status, AgentStatus::Completed(None));
    assert_eq!(
        s.mail_in_request("/root", 2, "FINAL_ANSWER"),
        ["(no answer: the agent ended its turn without a final message)"]
    );
}
