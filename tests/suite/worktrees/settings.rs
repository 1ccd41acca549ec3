//! Which children get a worktree: the config default falls back to the shared checkout outside
//! a git repository (with a notice), an explicit ask fails there; a role that says `worktree`
//! cannot be spawned `shared`; read-only children stay in the shared checkout.

use arbor_protocol::{Event, Isolation};
use arbor_tests::Session;
use serde_json::json;

use super::{git_repo, parsed, spawn_worktree};

#[tokio::test]
async fn outside_a_repository_the_default_falls_back_and_an_explicit_ask_fails() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "worker_a", "agent_type": "worker", "message": "where am I"}}],
            [spawn_worktree("worker_b", "and me")],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/worker_a", "responses": [
            [{"call": "exec_command", "args": {"cmd": "pwd"}}],
            [{"say": "here"}]
        ]}
    ]});
    let mut s = Session::new(script, |config| {
        config.worker_isolation = Isolation::Worktree
    })
    .await;
    let workspace = std::fs::canonicalize(s.workspace()).expect("workspace");
    s.run("spawn two").await;
    let spawns: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "spawn_agent")
        .map(|(_, output)| output)
        .collect();
    let a = parsed(&spawns[0]);
    assert!(a.get("worktree").is_none(), "{a}");
    let notice = format!(
        "worker_isolation = \"worktree\" does not apply to /root/worker_a: {} is not inside a \
         git repository, so it works in the shared checkout",
        s.workspace().display()
    );
    assert_eq!(a["notice"], notice);
    assert!(
        s.seen.iter().any(|line| line.event
            == Event::Notice {
                message: notice.clone()
            }),
        "no notice event"
    );
    let pwd = parsed(&s.tool_output("/root/worker_a", "exec_command"));
    let pwd = pwd["stdout"].as_str().expect("stdout").trim().to_string();
    assert_eq!(std::fs::canonicalize(pwd).expect("pwd"), workspace);
    assert_eq!(
        spawns[1],
        format!(
            "isolation \"worktree\" needs a git repository, and {} is not inside one (start the \
             session in a git repository, or spawn with isolation \"shared\")",
            s.workspace().display()
        )
    );
    assert!(
        s.orch
            .agent(&Session::path("/root/worker_b"))
            .await
            .is_none()
    );
}

#[tokio::test]
async fn a_worktree_role_cannot_be_spawned_shared_and_readers_stay_shared() {
    let role = "name = \"fixer\"\ndescription = \"fixes\"\ndeveloper_instructions = \"fix\"\n\
                isolation = \"worktree\"\n";
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "f1", "agent_type": "fixer", "message": "fix", "isolation": "shared"}}],
            [{"call": "spawn_agent", "args": {"task_name": "f2", "agent_type": "fixer", "message": "fix"}}],
            [{"call": "spawn_agent", "args": {"task_name": "e", "agent_type": "explorer", "message": "look"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/f2", "responses": [[{"say": "fixed"}]]},
        {"match": "/root/e", "responses": [[{"say": "seen"}]]}
    ]});
    let mut s = Session::with_workspace(
        script,
        |dir| {
            git_repo(dir, &[("a.txt", "a\n")]);
            std::fs::create_dir_all(dir.join(".arbor/roles")).expect("roles dir");
            std::fs::write(dir.join(".arbor/roles/fixer.toml"), role).expect("role");
        },
        |config| config.worker_isolation = Isolation::Worktree,
    )
    .await;
    s.run("spawn").await;
    let spawns: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "spawn_agent")
        .map(|(_, output)| output)
        .collect();
    assert_eq!(
        spawns[0],
        "role 'fixer' works in a git worktree of its own (isolation = \"worktree\"), so it \
         cannot be spawned with isolation \"shared\""
    );
    assert!(
        parsed(&spawns[1])["worktree"]["path"].is_string(),
        "{}",
        spawns[1]
    );
    assert!(
        parsed(&spawns[2]).get("worktree").is_none(),
        "{}",
        spawns[2]
    );
}
