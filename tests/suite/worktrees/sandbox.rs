//! The sandbox of a worktree worker: its worktree is writable (although it lies in the
//! read-only arbor home), the shared checkout it forked from is not.

use arbor_protocol::SandboxMode;
use arbor_tests::Session;
use serde_json::json;

use super::{FILE, git_repo, parsed, spawn_worktree};

/// The main checkout, as git inside the worktree names it.
const MAIN: &str = "\"$(git worktree list --porcelain | sed -n '1s/^worktree //p')\"";

#[tokio::test]
async fn a_worktree_worker_cannot_write_the_shared_checkout() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [spawn_worktree("worker_a", "try to write everywhere")],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/worker_a", "responses": [
            [{"call": "exec_command", "args": {"cmd": "echo mine > mine.txt && sed -i s/one/ONE/ f.txt && cat mine.txt"}}],
            [{"call": "exec_command", "args": {"cmd": format!("echo theirs > {MAIN}/f.txt")}}],
            [{"call": "exec_command", "args": {"cmd": format!("touch {MAIN}/new.txt")}}],
            [{"call": "apply_patch", "args": {"patch": "*** Begin Patch\n*** Add File: patched.txt\n+p\n*** End Patch"}}],
            [{"say": "tried"}]
        ]}
    ]});
    let mut s =
        Session::with_workspace(script, |dir| git_repo(dir, &[("f.txt", FILE)]), |_| {}).await;
    s.run("sandbox").await;
    let results: Vec<serde_json::Value> = s
        .tool_results("/root/worker_a")
        .into_iter()
        .filter(|(name, _)| name == "exec_command")
        .map(|(_, output)| parsed(&output))
        .collect();
    assert_eq!(results[0]["exit_code"], 0, "{}", results[0]);
    assert_eq!(results[0]["stdout"], "mine\n");
    let status = arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    if !status.enforced {
        assert_eq!(results[1]["sandbox"], "none");
        return;
    }
    for denied in &results[1..] {
        assert_ne!(denied["exit_code"], 0, "{denied}");
        let stderr = denied["stderr"].as_str().unwrap_or_default();
        assert!(
            stderr.contains("Read-only file system") || stderr.contains("Permission denied"),
            "{denied}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("f.txt")).expect("f.txt"),
        FILE,
        "the shared checkout was written"
    );
    assert!(!s.workspace().join("new.txt").exists());
    assert!(!s.workspace().join("mine.txt").exists());
    let patched = s.tool_output("/root/worker_a", "apply_patch");
    assert!(patched.contains("patched.txt"), "{patched}");
    assert!(!s.workspace().join("patched.txt").exists());
}
