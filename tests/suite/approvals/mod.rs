//! Approvals (behaviour §7): the command policy through a session, policy `never`, the user as
//! reviewer (terminal, headless, for the session) and the audit. The guardian, the real
//! binary have their own modules.

mod cli;
mod guardian;
mod headless;
mod overrides;

use std::path::Path;

use arbor_agent_graph::{ApprovalRecord, Store};
use arbor_guardian::{DENIED_SENTENCE, NO_APPROVER_SENTENCE, POLICY_NEVER_SENTENCE};
use arbor_orchestrator::{FORBIDDEN_SENTENCE, Orchestrator, RunConfig, TerminalAnswer};
use arbor_protocol::{AgentStatus, ApprovalPolicy, Event, ResponseItem, RolloutItem};
use arbor_rollout::read_rollout;
use arbor_tests::Session;
use serde_json::{Value, json};

use crate::sandbox::{exec_result, outside_dir};

/// An `exec_command` call that asks to run outside the sandbox.
pub fn escalated(cmd: &str) -> Value {
    json!({"call": "exec_command", "args": {
        "cmd": cmd,
        "sandbox_permissions": "require_escalated",
        "justification": "the task needs it"
    }})
}

/// The root makes each call in its own response, then answers.
pub fn root_calls(calls: &[Value]) -> Value {
    let mut responses: Vec<Value> = calls.iter().map(|call| json!([call])).collect();
    responses.push(json!([{"say": "done"}]));
    json!({"match": "/root", "responses": responses})
}

/// The session's approval log, as the store holds it once everything so far is written.
pub fn log(s: &Session) -> Vec<ApprovalRecord> {
    s.orch
        .flush_blocking()
        .expect("the session's files are written");
    s.orch
        .store()
        .approvals(s.orch.session_id())
        .expect("approval log")
}

/// Every request is complete in the log (a decided one names who decided, when and how) and
/// in its requester's rollout (one `approval_requested` and one `approval_decided` line).
pub fn assert_audit_complete(store: &Store, records: &[ApprovalRecord]) {
    for record in records {
        assert!(record.action["command"].is_string(), "{record:?}");
        assert!(record.decided_at.is_some(), "undecided: {record:?}");
        assert!(record.decided_by.is_some(), "no decider: {record:?}");
        assert!(record.decided_at >= Some(record.requested_at), "{record:?}");
        let thread = store
            .thread(record.requester_id)
            .expect("thread")
            .expect("requester indexed");
        let home = store.path().parent().expect("the store's home");
        let read = read_rollout(&home.join(&thread.rollout_path)).expect("rollout");
        let requested = read
            .items()
            .filter(|item| matches!(item, RolloutItem::ApprovalRequested(r) if r.request_id == record.id))
            .count();
        let decided: Vec<&RolloutItem> = read
            .items()
            .filter(
                |item| matches!(item, RolloutItem::ApprovalDecided(d) if d.request_id == record.id),
            )
            .collect();
        assert_eq!(requested, 1, "{} requested lines", record.id);
        assert_eq!(decided.len(), 1, "{} decided lines", record.id);
        if let RolloutItem::ApprovalDecided(line) = decided[0] {
            assert_eq!(line.outcome, record.outcome.as_str());
            assert_eq!(
                line.decided_by.as_deref(),
                record.decided_by.map(|by| by.as_str())
            );
        }
    }
}

/// `(outcome, decided_by)` of every request, in order.
pub fn outcomes(records: &[ApprovalRecord]) -> Vec<(String, String)> {
    records
        .iter()
        .map(|r| {
            (
                r.outcome.as_str().to_string(),
                r.decided_by.map_or("-", |by| by.as_str()).to_string(),
            )
        })
        .collect()
}

fn pair(outcome: &str, by: &str) -> (String, String) {
    (outcome.to_string(), by.to_string())
}

const RULES: &str = r#"
[[rule]]
pattern = ["git"]
decision = "allow"

[[rule]]
pattern = ["git", ["push", "fetch"]]
decision = "prompt"
justification = "talks to the remote"
match = ["git push origin main"]
not_match = ["git status"]

[[rule]]
pattern = ["rm", "-rf"]
decision = "forbidden"
"#;

fn with_rules(dir: &Path) {
    std::fs::create_dir_all(dir.join(".arbor/rules")).expect("rules dir");
    std::fs::write(dir.join(".arbor/rules/git.toml"), RULES).expect("rules");
}

#[tokio::test]
async fn the_strictest_rule_wins_and_bash_lc_is_split() {
    let script = json!({"agents": [root_calls(&[
        json!({"call": "exec_command", "args": {"cmd": "git status || true"}}),
        json!({"call": "exec_command", "args": {"cmd": "bash -lc \"git status && git push origin main\""}}),
        json!({"call": "exec_command", "args": {"cmd": "bash -lc 'echo hi; rm -rf build'"}}),
    ])]});
    let mut s = Session::with_workspace(script, with_rules, |_| {}).await;
    s.run("use git").await;
    let results = s.tool_results("/root");
    assert!(
        exec_result(&results[0].1)["exit_code"].is_number(),
        "allowed: {}",
        results[0].1
    );
    assert_eq!(
        results[1].1, NO_APPROVER_SENTENCE,
        "the prompt rule beats the allow rule"
    );
    assert_eq!(
        results[2].1,
        format!("{FORBIDDEN_SENTENCE} Matched rule `rm -rf`.")
    );
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [pair("no_approver", "policy"), pair("deny", "policy")]
    );
    assert_eq!(
        records[0].action["approval_reason"],
        "rule `git [push|fetch]` (talks to the remote) asks for approval"
    );
    assert_audit_complete(s.orch.store(), &records);
}

#[tokio::test]
async fn a_rule_whose_examples_disagree_refuses_to_start() {
    let home = tempfile::tempdir().expect("home");
    let cwd = tempfile::tempdir().expect("cwd");
    std::fs::create_dir_all(cwd.path().join(".arbor/rules")).expect("rules dir");
    let bad = cwd.path().join(".arbor/rules/bad.toml");
    std::fs::write(
        &bad,
        "[[rule]]\npattern = [\"git\", \"push\"]\ndecision = \"prompt\"\nnot_match = [\"git push --force\"]\n",
    )
    .expect("rules");
    let model = std::sync::Arc::new(
        arbor_model::ScriptedModel::from_json(
            r#"{"agents": [{"match": "/root", "responses": [[{"say": "hi"}]]}]}"#,
        )
        .expect("script"),
    );
    let config = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
    let err = Orchestrator::new(config, model)
        .await
        .map(|_| ())
        .expect_err("a bad rules file stops the session");
    assert_eq!(
        err.to_string(),
        format!(
            "rules file {}: rule 1: example \"git push --force\" should not match but does",
            bad.display()
        )
    );
}

#[tokio::test]
async fn never_refuses_and_tells_the_model() {
    let outside = outside_dir();
    let target = outside.path().join("never.txt");
    let script =
        json!({"agents": [root_calls(&[escalated(&format!("echo x > {}", target.display()))])]});
    let mut s = Session::new(script, |config| {
        config.approval_policy = ApprovalPolicy::Never;
        config.approval_terminal = true;
        config.approval_wait = None;
    })
    .await;
    let mut prompts = s.orch.take_approval_prompts().expect("terminal");
    s.run("try").await;
    assert_eq!(
        s.tool_output("/root", "exec_command"),
        POLICY_NEVER_SENTENCE
    );
    assert!(!target.exists());
    assert!(prompts.try_recv().is_err(), "nobody is asked under never");
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("deny", "policy")]);
    assert_audit_complete(s.orch.store(), &records);
}

#[tokio::test]
async fn headless_user_gives_no_approver_to_the_requester_and_its_parent() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "escalate"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
            [{"say": "root saw {{input}}"}],
            [{"say": "root saw {{input}}"}]]},
        {"match": "/root/w", "responses": [
            [escalated("touch /never-written")],
            [{"say": "w: {{last_output}}"}]]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("delegate").await;
    assert_eq!(
        s.tool_output("/root/w", "exec_command"),
        NO_APPROVER_SENTENCE
    );
    let waited = s.seen.iter().any(|line| {
        matches!(
            &line.event,
            Event::AgentStatus {
                status: AgentStatus::AwaitingApproval,
                ..
            }
        )
    });
    assert!(!waited, "nobody can be asked, so nobody waits");
    let root = s.orch.agent(&Session::path("/root")).await.expect("root");
    let result_mail = root.history.iter().any(|item| {
        matches!(item, ResponseItem::Message { role, content }
            if role == "user" && content.contains(&format!("w: {NO_APPROVER_SENTENCE}")))
    });
    assert!(
        result_mail,
        "the parent reads the outcome: {:?}",
        root.history
    );
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("no_approver", "policy")]);
    assert_eq!(records[0].requester.as_str(), "/root/w");
    assert_audit_complete(s.orch.store(), &records);
}

#[tokio::test]
async fn approved_for_session_is_cached_per_command_and_cwd() {
    let script = json!({"agents": [root_calls(&[
        escalated("true"),
        escalated("'true'"),
        json!({"call": "exec_command", "args": {"cmd": "true", "workdir": "sub", "sandbox_permissions": "require_escalated"}}),
        escalated("false"),
    ])]});
    let mut s = Session::with_workspace(
        script,
        |dir| std::fs::create_dir(dir.join("sub")).expect("sub"),
        |config| {
            config.approval_terminal = true;
            config.approval_wait = None;
        },
    )
    .await;
    let mut prompts = s.orch.take_approval_prompts().expect("terminal");
    let answered = tokio::spawn(async move {
        let mut asked = Vec::new();
        for answer in [
            TerminalAnswer::ApproveForSession,
            TerminalAnswer::ApproveOnce,
            TerminalAnswer::Deny,
        ] {
            let prompt = prompts.recv().await.expect("a prompt");
            asked.push((
                prompt.path.to_string(),
                prompt.action["command"].as_str().unwrap_or("").to_string(),
                prompt.justification.clone(),
            ));
            prompt.answer(answer).await.expect("answered");
        }
        asked
    });
    s.run("run things").await;
    let asked = answered.await.expect("prompter");
    assert_eq!(
        asked.len(),
        3,
        "the identical command is not asked again: {asked:?}"
    );
    assert_eq!(asked[0].0, "/root");
    assert_eq!(asked[0].2.as_deref(), Some("the task needs it"));
    assert_eq!(asked[1].1, "true", "another cwd is another command");
    assert_eq!(asked[2].1, "false");
    let results = s.tool_results("/root");
    for (_, output) in &results[..3] {
        assert_eq!(exec_result(output)["sandbox"], "none", "{output}");
    }
    assert!(
        results[3].1.starts_with(DENIED_SENTENCE),
        "a user's deny: {}",
        results[3].1
    );
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [
            pair("allow", "user"),
            pair("allow", "user"),
            pair("allow", "user"),
            pair("deny", "user")
        ]
    );
    assert_eq!(
        records[1].rationale.as_deref(),
        Some("approved for the session")
    );
    assert_audit_complete(s.orch.store(), &records);
}

#[tokio::test]
async fn an_approved_prompt_rule_command_runs_inside_the_sandbox() {
    let outside = outside_dir();
    let target = outside.path().join("prompted.txt");
    let script = json!({"agents": [root_calls(&[
        json!({"call": "exec_command", "args": {"cmd": "touch inside.txt"}}),
        json!({"call": "exec_command", "args": {"cmd": format!("touch {}", target.display())}}),
    ])]});
    let rules = |dir: &Path| {
        std::fs::create_dir_all(dir.join(".arbor/rules")).expect("rules dir");
        std::fs::write(
            dir.join(".arbor/rules/touch.toml"),
            "[[rule]]\npattern = [\"touch\"]\ndecision = \"prompt\"\n",
        )
        .expect("rules");
    };
    let mut s = crate::sandbox::approving_session(script, rules, |_| {}).await;
    s.run("touch").await;
    let results: Vec<Value> = s
        .tool_results("/root")
        .iter()
        .map(|(_, output)| exec_result(output))
        .collect();
    assert_eq!(results[0]["exit_code"], 0, "{}", results[0]);
    assert!(s.workspace().join("inside.txt").exists());
    assert_eq!(
        outcomes(&log(&s)),
        [pair("allow", "user"), pair("allow", "user")]
    );
    let status = arbor_tools::sandbox_status(arbor_protocol::SandboxMode::WorkspaceWrite);
    assert_eq!(results[1]["sandbox"].as_str(), Some(status.label.as_str()));
    if status.enforced {
        assert_ne!(
            results[1]["exit_code"], 0,
            "approved, but still sandboxed: {}",
            results[1]
        );
        assert!(!target.exists());
    }
}
