//! Spawning: spawn and summarise, spawn checks, addressing, and roles that only narrow.

use serde_json::json;

use arbor_tests::Session;

use super::{completed, json_of};

#[tokio::test]
async fn root_spawns_workers_waits_and_summarises() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "worker_a", "agent_type": "worker", "message": "task a"}},
             {"call": "spawn_agent", "args": {"task_name": "worker_b", "agent_type": "worker", "message": "task b"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "both workers are done"}]
        ]},
        {"match": "/root/worker_*", "responses": [
            [{"call": "list_agents", "args": {}}],
            [{"say": "done with {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("refactor").await;
    assert_eq!(
        s.orch.root_status().await,
        completed("both workers are done")
    );
    for (name, task) in [("worker_a", "task a"), ("worker_b", "task b")] {
        let worker = s
            .orch
            .agent(&Session::path(&format!("/root/{name}")))
            .await
            .expect("worker");
        assert_eq!(worker.status, completed(&format!("done with {task}")));
        assert_eq!(worker.role, "worker");
        assert!(worker.nickname.is_some());
    }
    let spawned = json_of(&s.tool_results("/root")[0].1);
    assert_eq!(spawned["task_name"], "/root/worker_a");
    // The root's last request carried both results.
    let mut finals = s.mail_in_request("/root", 2, "FINAL_ANSWER");
    finals.sort();
    assert_eq!(finals, ["done with task a", "done with task b"]);
}

#[tokio::test]
async fn spawn_depth_duplicates_and_names_are_checked() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "go deeper"}}],
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "again"}},
             {"call": "spawn_agent", "args": {"task_name": "Bad-Name", "message": "x"}},
             {"call": "spawn_agent", "args": {"task_name": "guardian", "message": "x"}},
             {"call": "spawn_agent", "args": {"task_name": "b", "message": "  "}},
             {"call": "spawn_agent", "args": {"task_name": "c", "message": "x", "agent_type": "nope"}},
             {"call": "spawn_agent", "args": {"task_name": "d", "message": "x", "agent_type": "guardian"}},
             {"call": "spawn_agent", "args": {"task_name": "e", "message": "x", "colour": "red"}},
             {"call": "spawn_agent", "args": {"task_name": "f", "message": "x", "fork_turns": "0"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "checked"}]
        ]},
        {"match": "/root/a", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "deepest"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "a done"}]
        ]},
        {"match": "/root/a/b", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "c", "message": "too deep"}}],
            [{"say": "b done"}]
        ]}
    ]});
    let mut s = Session::new(script, |c| c.max_depth = 2).await;
    s.run("check spawning").await;
    assert_eq!(s.orch.root_status().await, completed("checked"));
    let root = s.tool_results("/root");
    let errors: Vec<&str> = root[1..9].iter().map(|(_, o)| o.as_str()).collect();
    assert_eq!(errors[0], "agent path `/root/a` already exists");
    assert_eq!(
        errors[1],
        "agent_name must use only lowercase letters, digits, and underscores"
    );
    assert_eq!(errors[2], "agent path `/root/guardian` already exists");
    assert_eq!(errors[3], "Empty message can't be sent to an agent");
    assert_eq!(errors[4], "unknown agent_type 'nope'");
    assert_eq!(
        errors[5],
        "agent_type 'guardian' is internal and cannot be spawned"
    );
    assert!(
        errors[6].starts_with("invalid arguments for spawn_agent: unknown field `colour`"),
        "{}",
        errors[6]
    );
    assert!(errors[7].starts_with("fork_turns must be"), "{}", errors[7]);
    assert_eq!(
        s.tool_output("/root/a/b", "spawn_agent"),
        "agent depth limit reached: max depth is 2"
    );
    assert_eq!(
        s.orch
            .agent(&Session::path("/root/a/b"))
            .await
            .expect("b")
            .status,
        completed("b done")
    );
}

#[tokio::test]
async fn relative_names_reach_descendants_and_siblings_need_absolute_paths() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "first"}}],
            [{"call": "wait_agent", "args": {"targets": ["a"], "mode": "all"}}],
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "second"}}],
            [{"call": "wait_agent", "args": {"targets": ["b"], "mode": "all"}}],
            [{"say": "ok"}]
        ]},
        {"match": "/root/a", "responses": [[{"say": "a idle"}]]},
        {"match": "/root/b", "responses": [
            [{"call": "send_message", "args": {"target": "a", "message": "relative"}},
             {"call": "send_message", "args": {"target": "/root/a", "message": "absolute"}},
             {"call": "send_message", "args": {"target": "../a", "message": "dots"}}],
            [{"say": "b done"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("addressing").await;
    let outputs: Vec<String> = s
        .tool_results("/root/b")
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    assert_eq!(
        outputs,
        [
            "live agent path `/root/b/a` not found",
            "",
            "agent_name `..` is reserved"
        ]
    );
    let a = s.orch.agent(&Session::path("/root/a")).await.expect("a");
    assert_eq!(a.unread, 1, "the absolute message waits, unread");
}

#[tokio::test]
async fn roles_narrow_and_never_widen() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "lead", "agent_type": "lead", "message": "delegate"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/lead", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "wide", "agent_type": "wide", "message": "try"}},
             {"call": "apply_patch", "args": {"patch": "*** Begin Patch\n*** End Patch"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "lead done"}]
        ]},
        {"match": "/root/lead/wide", "responses": [
            [{"call": "apply_patch", "args": {"patch": "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"}}],
            [{"say": "wide done"}]
        ]}
    ]});
    let setup = |cwd: &std::path::Path| {
        let roles = cwd.join(".arbor/roles");
        std::fs::create_dir_all(&roles).expect("roles dir");
        std::fs::write(
            roles.join("lead.toml"),
            "name = \"lead\"\ndescription = \"plans\"\ndeveloper_instructions = \"delegate\"\ntools = [\"spawn_agent\", \"wait_agent\", \"list_agents\"]\n",
        )
        .expect("lead role");
        std::fs::write(
            roles.join("wide.toml"),
            "name = \"wide\"\ndescription = \"wants more\"\ndeveloper_instructions = \"edit\"\nsandbox_mode = \"danger-full-access\"\ntools = [\"apply_patch\", \"exec_command\", \"list_agents\"]\n",
        )
        .expect("wide role");
    };
    let mut s = Session::with_workspace(script, setup, |c| {
        c.max_depth = 2;
        c.sandbox = arbor_protocol::SandboxMode::ReadOnly;
    })
    .await;
    s.run("narrowing").await;
    let wide = s
        .orch
        .agent(&Session::path("/root/lead/wide"))
        .await
        .expect("wide");
    assert_eq!(wide.sandbox, "read-only");
    let tools: Vec<String> = s.model.requests_for(&Session::path("/root/lead/wide"))[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(tools, ["list_agents"]);
    assert_eq!(
        s.tool_output("/root/lead", "apply_patch"),
        "tool `apply_patch` is not available to this agent"
    );
    assert_eq!(
        s.tool_output("/root/lead/wide", "apply_patch"),
        "tool `apply_patch` is not available to this agent"
    );
    assert!(!s.workspace().join("x.txt").exists());
}
