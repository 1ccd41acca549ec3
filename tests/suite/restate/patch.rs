//! `apply_patch` on the Restate engine: a worker's patch lands in the session's cwd once, an
//! explorer (read-only) is refused as on the local engine, and a patch escaping the cwd is
//! refused with the local engine's text.

use std::time::Duration;

use serde_json::json;

use super::cluster::Cluster;

#[test]
fn a_workers_patch_lands_in_the_cwd_and_read_only_agents_are_refused() {
    let cluster = Cluster::start(2);
    let add = |file: &str, line: &str| {
        format!("*** Begin Patch\n*** Add File: {file}\n+{line}\n*** End Patch")
    };
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "edit"}},
             {"call": "spawn_agent", "args": {"task_name": "e", "agent_type": "explorer", "message": "look"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "patched"}]
        ]},
        {"match": "/root/w", "responses": [
            [{"call": "apply_patch", "args": {"patch": add("notes.txt", "from the worker")}},
             {"call": "apply_patch", "args": {"patch": add("../outside.txt", "no")}}],
            [{"say": "w done"}]
        ]},
        {"match": "/root/e", "responses": [
            [{"call": "apply_patch", "args": {"patch": add("explorer.txt", "no")}}],
            [{"say": "e done"}]
        ]}
    ]});
    let run = cluster.exec(&script, "patch it", Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.final_message().as_deref(), Some("patched"));
    let cwd = cluster.dir.path();
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).expect("the worker's file"),
        "from the worker\n"
    );
    let outputs = run.outputs("/root/w", "apply_patch");
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert!(outputs[0].contains("notes.txt"), "{outputs:?}");
    assert_eq!(
        outputs[1],
        "apply_patch: path escapes the working directory: ../outside.txt"
    );
    assert!(!cwd.join("../outside.txt").exists());
    let explorer = run.outputs("/root/e", "apply_patch");
    assert_eq!(explorer.len(), 1, "{explorer:?}");
    assert!(!cwd.join("explorer.txt").exists(), "{explorer:?}");
    // The patch step ran once in all: its journaled summary is what the model read.
    let applied: usize = cluster
        .workers
        .iter()
        .map(|worker| {
            super::cluster::step_lines(&worker.log)
                .iter()
                .filter(|line| line.step == "apply_patch" && line.phase == "ask")
                .count()
        })
        .sum();
    assert_eq!(applied, 2, "the worker's two patches, each run once");
}
