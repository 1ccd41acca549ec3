//! Three workers edit one file in worktrees of their own, in parallel: nothing is lost, two
//! disjoint changes merge, the third reports its conflict and leaves the parent's checkout as
//! it was; a strategy then resolves it. With `auto_merge`, clean children merge at completion.

use arbor_protocol::Event;
use arbor_tests::Session;
use serde_json::json;

use super::{FILE, files, git, git_repo, parsed, replace, spawn_worktree, worker};

/// Worker a waits until c's worktree exists (so c forks from the state before a's merge).
const WAIT_FOR_C: &str = "until git worktree list | grep -q worker_c; do sleep 0.02; done; ";

/// What the root runs to record its checkout's bytes between merges.
const FINGERPRINT: &str = "sha256sum f.txt && ls -A | sort";

fn three_workers(root_after_spawn: Vec<serde_json::Value>, a_first: &str) -> serde_json::Value {
    let mut responses = vec![json!([
        spawn_worktree("worker_a", "change line two"),
        spawn_worktree("worker_b", "change line eight"),
        spawn_worktree("worker_c", "change line two too"),
    ])];
    responses.extend(root_after_spawn);
    json!({"agents": [
        {"match": "/root", "responses": responses},
        worker(
            "/root/worker_a",
            &format!("{a_first}{}", replace("two", "TWO by a")),
            "a done"
        ),
        worker("/root/worker_b", &replace("eight", "EIGHT by b"), "b done"),
        worker("/root/worker_c", &replace("two", "2 by c"), "c done"),
    ]})
}

#[tokio::test]
async fn three_parallel_workers_lose_nothing_and_the_overlap_changes_nothing() {
    let script = three_workers(
        vec![
            json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}]),
            json!([{"call": "list_agents", "args": {}}]),
            json!([{"call": "merge_agent", "args": {"target": "worker_a"}}]),
            json!([{"call": "merge_agent", "args": {"target": "worker_b"}}]),
            json!([{"call": "exec_command", "args": {"cmd": FINGERPRINT}}]),
            json!([{"call": "merge_agent", "args": {"target": "worker_c"}}]),
            json!([{"call": "exec_command", "args": {"cmd": FINGERPRINT}}]),
            json!([{"call": "diff_agent", "args": {"target": "worker_c"}}]),
            json!([{"call": "merge_agent", "args": {"target": "worker_c", "strategy": "theirs"}}]),
            json!([{"say": "merged"}]),
        ],
        "",
    );
    let mut s =
        Session::with_workspace(script, |dir| git_repo(dir, &[("f.txt", FILE)]), |_| {}).await;
    s.run("three edits of one file").await;

    // Each worker edited its own copy: every edit is there, none overwrote another.
    let spawned: Vec<_> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "spawn_agent")
        .map(|(_, output)| parsed(&output))
        .collect();
    assert_eq!(spawned.len(), 3);
    let edits = ["TWO by a", "EIGHT by b", "2 by c"];
    for (spawn, edit) in spawned.iter().zip(edits) {
        let dir = spawn["worktree"]["path"].as_str().expect("a worktree path");
        let text = std::fs::read_to_string(std::path::Path::new(dir).join("f.txt")).expect("file");
        assert!(text.contains(edit), "{dir}: {text}");
        assert_eq!(text.lines().count(), 9, "{text}");
        assert!(
            spawn["worktree"]["branch"]
                .as_str()
                .is_some_and(|b| b.starts_with("arbor/")),
            "{spawn}"
        );
    }
    let listed = parsed(&s.tool_output("/root", "list_agents"));
    let changes: Vec<_> = listed["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter(|agent| agent["agent_name"] != "/root")
        .map(|agent| agent["changes"].clone())
        .collect();
    assert_eq!(changes.len(), 3);
    for change in &changes {
        assert_eq!(
            change,
            &json!({"files": 1, "added": 1, "removed": 1, "committed": false, "merged": false})
        );
    }

    let merges: Vec<_> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "merge_agent")
        .map(|(_, output)| parsed(&output))
        .collect();
    assert_eq!(merges[0]["merged"], json!(["f.txt"]), "{}", merges[0]);
    assert_eq!(merges[1]["merged"], json!(["f.txt"]), "{}", merges[1]);
    assert_eq!(merges[2]["merged"], json!([]), "{}", merges[2]);
    let conflicts = merges[2]["conflicts"].as_array().expect("conflicts");
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0]["path"], "f.txt");
    let hunk = conflicts[0]["hunks"][0].as_str().expect("a hunk");
    assert!(
        hunk.contains("<<<<<<< /root") && hunk.contains("TWO by a") && hunk.contains("2 by c"),
        "{hunk}"
    );

    // The checkout was byte for byte the same before and after the conflicting merge.
    let prints: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "exec_command")
        .map(|(_, output)| {
            parsed(&output)["stdout"]
                .as_str()
                .expect("stdout")
                .to_string()
        })
        .collect();
    assert_eq!(prints.len(), 2);
    assert_eq!(prints[0], prints[1]);
    assert!(prints[0].contains("f.txt"), "{}", prints[0]);

    let diff = s.tool_output("/root", "diff_agent");
    assert!(diff.contains("-two\n+2 by c\n"), "{diff}");
    // `theirs` resolves the conflict for the child's side.
    assert_eq!(merges[3]["merged"], json!(["f.txt"]), "{}", merges[3]);
    let merged = std::fs::read_to_string(s.workspace().join("f.txt")).expect("f.txt");
    assert_eq!(
        merged,
        FILE.replace("two", "2 by c").replace("eight", "EIGHT by b")
    );
    // Only the file changed in the checkout: no stray files, nothing staged.
    assert_eq!(
        files(s.workspace()).keys().collect::<Vec<_>>(),
        ["f.txt"],
        "stray files in the checkout"
    );
    assert_eq!(git(s.workspace(), &["diff", "--cached", "--name-only"]), "");
    // The children's work is committed on their branches, by arbor as each child.
    let log = git(
        s.workspace(),
        &[
            "log",
            "-1",
            "--format=%an <%ae>",
            "--glob=refs/heads/arbor/*/worker_a",
        ],
    );
    assert_eq!(log, "arbor </root/worker_a>");
}

#[tokio::test]
async fn auto_merge_merges_clean_children_at_completion_and_leaves_the_conflict() {
    let script = three_workers(
        vec![
            json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}]),
            json!([{"say": "all done"}]),
        ],
        WAIT_FOR_C,
    );
    // One child turn at a time, in spawn order: a and b merge before c completes, and c forks
    // before a merges (a waits until c's worktree exists).
    let mut s = Session::with_workspace(
        script,
        |dir| git_repo(dir, &[("f.txt", FILE)]),
        |config| {
            config.auto_merge = true;
            config.max_running = 1;
        },
    )
    .await;
    s.run("three edits of one file").await;
    let merged = std::fs::read_to_string(s.workspace().join("f.txt")).expect("f.txt");
    assert_eq!(
        merged,
        FILE.replace("two", "TWO by a")
            .replace("eight", "EIGHT by b")
    );
    let requests = s.model.requests_for(&Session::path("/root"));
    let last = requests.last().expect("requests");
    let results = arbor_tests::mail_payloads(&last.input, "FINAL_ANSWER");
    let of = |who: &str| {
        results
            .iter()
            .find(|text| text.starts_with(who))
            .unwrap_or_else(|| panic!("no result from {who}: {results:?}"))
            .clone()
    };
    let a = of("a done");
    assert!(a.contains("1 file changed, +1 -1, merged."), "{a}");
    assert!(
        a.contains("Auto-merge: merged into /root's checkout"),
        "{a}"
    );
    let c = of("c done");
    assert!(
        c.contains("1 file changed, +1 -1, committed, not merged."),
        "{c}"
    );
    assert!(
        c.contains("Auto-merge: not merged, /root's checkout is unchanged; conflicts in f.txt."),
        "{c}"
    );
    let events: Vec<_> = s
        .seen
        .iter()
        .filter_map(|line| match &line.event {
            Event::WorktreeMerged {
                path, conflicts, ..
            } => Some((path.to_string(), conflicts.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        events,
        [
            ("/root/worker_a".to_string(), vec![]),
            ("/root/worker_b".to_string(), vec![]),
            ("/root/worker_c".to_string(), vec!["f.txt".to_string()]),
        ]
    );
}
