//! A merge asks for approval where a patch of the files it writes would (a `prompt` rule,
//! `untrusted`): the approver sees the merge's unified diff, a denial writes nothing, and an
//! approval merges.

use arbor_guardian::DENIED_SENTENCE;
use arbor_orchestrator::{TerminalAnswer, action_diff};
use arbor_tests::Session;
use serde_json::json;

use super::{FILE, git_repo, parsed, replace, spawn_worktree, worker};

const MERGES_OF_F_ASK: &str =
    "[[rule]]\npattern = [\"apply_patch\", \"f.txt\"]\ndecision = \"prompt\"\n";

#[tokio::test]
async fn a_merge_that_a_rule_makes_ask_shows_its_diff_and_waits_for_the_answer() {
    let merge = json!([{"call": "merge_agent", "args": {"target": "worker_a"}}]);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [spawn_worktree("worker_a", "change line two")],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            merge.clone(),
            merge,
            [{"say": "merged"}]]},
        worker("/root/worker_a", &replace("two", "TWO by a"), "a done"),
    ]});
    let mut s = Session::with_workspace(
        script,
        |dir| {
            git_repo(dir, &[("f.txt", FILE)]);
            std::fs::create_dir_all(dir.join(".arbor/rules")).expect("rules dir");
            std::fs::write(dir.join(".arbor/rules/merge.toml"), MERGES_OF_F_ASK).expect("rule");
        },
        |config| {
            config.approval_terminal = true;
            config.approval_wait = None;
        },
    )
    .await;
    let mut prompts = s.orch.take_approval_prompts().expect("terminal");
    let answered = tokio::spawn(async move {
        let mut asked = Vec::new();
        for answer in [TerminalAnswer::Deny, TerminalAnswer::ApproveOnce] {
            let prompt = prompts.recv().await.expect("a prompt");
            asked.push(prompt.action.clone());
            prompt.answer(answer).await.expect("answered");
        }
        asked
    });
    s.run("merge a's work").await;
    let asked = answered.await.expect("prompter");
    let action = &asked[0];
    assert_eq!(action["tool"], "merge_agent");
    assert_eq!(action["paths"], json!(["f.txt"]));
    assert!(
        action["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("merge_agent /root/worker_a into ")),
        "{action}"
    );
    let diff = action_diff(action).expect("the merge's diff");
    assert!(
        diff.contains("-two\n") && diff.contains("+TWO by a\n"),
        "{diff}"
    );
    let merges: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "merge_agent")
        .map(|(_, output)| output)
        .collect();
    assert!(merges[0].starts_with(DENIED_SENTENCE), "{}", merges[0]);
    assert_eq!(
        parsed(&merges[1])["merged"],
        json!(["f.txt"]),
        "{}",
        merges[1]
    );
    let merged = std::fs::read_to_string(s.workspace().join("f.txt")).expect("f.txt");
    assert!(merged.contains("TWO by a"), "{merged}");
}
