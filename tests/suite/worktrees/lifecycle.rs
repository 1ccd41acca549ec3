//! Worktree workers evicted and revived keep working in their own worktrees; closing them
//! removes the worktrees whose changes were merged and keeps the unmerged one with its branch.

use arbor_protocol::Event;
use arbor_tests::Session;
use serde_json::{Value, json};

use super::{FILE, git, git_repo, parsed, replace, spawn_worktree};

/// A worker that edits in its first turn and shows where it is and what it holds in its
/// second.
fn twice(path: &str, edit: &str) -> Value {
    json!({"match": path, "responses": [
        [{"call": "exec_command", "args": {"cmd": edit}}],
        [{"say": "edited"}],
        [{"call": "exec_command", "args": {"cmd": "pwd && cat f.txt"}}],
        [{"say": "shown"}]
    ]})
}

#[tokio::test]
async fn revived_workers_keep_their_worktrees_and_close_keeps_only_the_unmerged() {
    let all = json!({"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}});
    let again = |name: &str| json!({"call": "followup_task", "args": {"target": name, "message": "show it"}});
    let close = |name: &str| json!({"call": "close_agent", "args": {"target": name}});
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [spawn_worktree("worker_a", "a"), spawn_worktree("worker_b", "b"), spawn_worktree("worker_c", "c")],
            [all.clone()],
            [again("worker_a"), again("worker_b"), again("worker_c")],
            [all.clone()],
            [{"call": "merge_agent", "args": {"target": "worker_a"}}],
            [{"call": "merge_agent", "args": {"target": "worker_b"}}],
            [close("worker_a"), close("worker_b"), close("worker_c")],
            [{"say": "done"}]
        ]},
        twice("/root/worker_a", &replace("two", "TWO by a")),
        twice("/root/worker_b", &replace("eight", "EIGHT by b")),
        twice("/root/worker_c", &replace("five", "FIVE by c")),
    ]});
    let mut s = Session::with_workspace(
        script,
        |dir| git_repo(dir, &[("f.txt", FILE)]),
        |config| config.max_resident = 1,
    )
    .await;
    s.run("evict and close").await;

    let evicted = |who: &str| {
        s.seen
            .iter()
            .any(|line| matches!(&line.event, Event::AgentEvicted { path } if path.as_str() == who))
    };
    let revived = |who: &str| {
        s.seen
            .iter()
            .any(|line| matches!(&line.event, Event::AgentRevived { path } if path.as_str() == who))
    };
    let mut dirs = Vec::new();
    for (name, edit) in [
        ("worker_a", "TWO by a"),
        ("worker_b", "EIGHT by b"),
        ("worker_c", "FIVE by c"),
    ] {
        let path = format!("/root/{name}");
        // One runtime at a time: a and b are evicted by their later siblings and revived for
        // their second task.
        if name != "worker_c" {
            assert!(
                evicted(&path) && revived(&path),
                "{path} was not evicted and revived"
            );
        }
        let shown: Vec<Value> = s
            .tool_results(&path)
            .into_iter()
            .map(|(_, output)| parsed(&output))
            .collect();
        let out = shown[1]["stdout"].as_str().expect("stdout");
        let (pwd, text) = out.split_once('\n').expect("pwd, then the file");
        assert!(
            pwd.ends_with(&format!("/worktrees/{}/{name}", s.orch.session_id())),
            "{path} ran in {pwd}"
        );
        assert!(text.contains(edit), "{path}: {text}");
        assert_eq!(
            text.matches(" by ").count(),
            1,
            "{path} sees another's edit: {text}"
        );
        dirs.push(std::path::PathBuf::from(pwd));
    }

    let closes: Vec<Value> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "close_agent")
        .map(|(_, output)| parsed(&output))
        .collect();
    assert!(
        closes[0]["worktree"]["removed"].is_string(),
        "{}",
        closes[0]
    );
    assert!(
        closes[1]["worktree"]["removed"].is_string(),
        "{}",
        closes[1]
    );
    let kept = &closes[2]["worktree"];
    assert_eq!(
        kept["changes"], "1 file changed, +1 -1, not committed",
        "{kept}"
    );
    assert_eq!(kept["reason"], "1 file(s) not merged");
    assert!(
        !dirs[0].exists() && !dirs[1].exists(),
        "merged worktrees stay"
    );
    assert!(
        dirs[2].join("f.txt").exists(),
        "the unmerged worktree is gone"
    );

    let branches = git(
        s.workspace(),
        &["branch", "--list", "arbor/*", "--format=%(refname:short)"],
    );
    let branch = kept["branch"].as_str().expect("branch");
    assert_eq!(branches, branch, "only the kept branch is left");
    let top = git(
        s.workspace(),
        &["log", "-1", "--format=%an <%ae>|%s", branch],
    );
    assert_eq!(
        top,
        "arbor </root/worker_c>|arbor: work of /root/worker_c, kept when it was closed"
    );
    let merged = std::fs::read_to_string(s.workspace().join("f.txt")).expect("f.txt");
    assert_eq!(
        merged,
        FILE.replace("two", "TWO by a")
            .replace("eight", "EIGHT by b")
    );
    let gone: Vec<_> = s
        .seen
        .iter()
        .filter_map(|line| match &line.event {
            Event::WorktreeRemoved { path, .. } => Some(path.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(gone, ["/root/worker_a", "/root/worker_b"]);
}
