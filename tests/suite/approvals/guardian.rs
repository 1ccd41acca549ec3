//! The guardian as reviewer: allow, deny, a malformed verdict (prose, a fence, an array, an
//! unknown key), a verdict past the deadline, a 503 retried once, the denial breaker, an
//! override after a denial, and what the guardian is shown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arbor_guardian::{Budgets, DENIED_SENTENCE, REVIEW_UNAVAILABLE_SENTENCE};
use arbor_model::{
    BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse, ScriptedModel,
};
use arbor_orchestrator::{RunConfig, TerminalAnswer};
use arbor_protocol::{AgentStatus, ApprovalsReviewer, ResponseItem};
use arbor_tests::Session;
use serde_json::{Value, json};

use super::{assert_audit_complete, escalated, log, outcomes, pair, root_calls};
use crate::sandbox::{exec_result, outside_dir};

const ALLOW: &str = r#"{"outcome": "allow", "risk_level": "low", "user_authorization": "high", "rationale": "writes one report file"}"#;
const DENY: &str =
    r#"{"outcome": "deny", "risk_level": "high", "rationale": "it reaches outside the task"}"#;

/// The guardian answers `verdicts` in turn (then again from the first).
fn guardian(verdicts: &[Value]) -> Value {
    let responses: Vec<Value> = verdicts.iter().map(|v| json!([v])).collect();
    json!({"match": "role:guardian", "repeat": true, "responses": responses})
}

fn say(text: &str) -> Value {
    json!({"say": text})
}

fn with_guardian(config: &mut RunConfig) {
    config.reviewer = ApprovalsReviewer::Guardian;
}

async fn guardian_session(script: Value, configure: impl FnOnce(&mut RunConfig)) -> Session {
    Session::new(script, |config| {
        with_guardian(config);
        configure(config);
    })
    .await
}

fn guardian_requests(s: &Session) -> Vec<ModelRequest> {
    s.model.requests_for(&Session::path("/root/guardian"))
}

#[tokio::test]
async fn an_allow_runs_the_escalation_and_the_guardian_stays_internal() {
    let outside = outside_dir();
    let target = outside.path().join("report.txt");
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "write the report"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
            [{"call": "list_agents", "args": {}}],
            [{"call": "spawn_agent", "args": {"task_name": "guardian", "message": "hi"}}],
            [say("root done")],
            [say("root done")]]},
        {"match": "/root/w", "responses": [
            [escalated(&format!("echo report > {}", target.display()))],
            [say("w: {{last_output}}")]]},
        guardian(&[say(ALLOW)])
    ]});
    let mut s = guardian_session(script, |config| config.max_running = 1).await;
    s.run("Write the quarterly report").await;
    let result = exec_result(&s.tool_output("/root/w", "exec_command"));
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("report"),
        "report\n"
    );
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("allow", "guardian")]);
    assert_eq!(records[0].risk_level.as_deref(), Some("low"));
    assert_eq!(
        records[0].rationale.as_deref(),
        Some("writes one report file")
    );
    assert!(records[0].tokens.is_some_and(|t| t > 0), "{records:?}");
    assert_audit_complete(s.orch.store(), &records);
    // Internal: not listed, not spawnable, no result mail; but it exists and kept its turn.
    let listed = s.tool_output("/root", "list_agents");
    assert!(!listed.contains("guardian"), "{listed}");
    let spawns: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(name, _)| name == "spawn_agent")
        .map(|(_, output)| output)
        .collect();
    assert_eq!(spawns[1], "agent path `/root/guardian` already exists");
    let guardian = s
        .orch
        .agent(&Session::path("/root/guardian"))
        .await
        .expect("the guardian was spawned");
    assert_eq!(guardian.role, "guardian");
    assert_eq!(guardian.sandbox, "read-only");
    assert!(matches!(guardian.status, AgentStatus::Completed(_)));
}

#[tokio::test]
async fn a_deny_is_a_risk_denial() {
    let script = json!({"agents": [
        root_calls(&[escalated("touch /never-written")]),
        guardian(&[say(DENY)])
    ]});
    let mut s = guardian_session(script, |_| {}).await;
    s.run("do it").await;
    assert_eq!(
        s.tool_output("/root", "exec_command"),
        format!("{DENIED_SENTENCE} Reason: it reaches outside the task")
    );
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("deny", "guardian")]);
    assert_eq!(records[0].risk_level.as_deref(), Some("high"));
    assert_audit_complete(s.orch.store(), &records);
}

#[tokio::test]
async fn a_malformed_verdict_is_review_unavailable_without_a_retry() {
    let script = json!({"agents": [
        root_calls(&[escalated("true")]),
        guardian(&[say("Looks fine to me!")])
    ]});
    let mut s = guardian_session(script, |_| {}).await;
    s.run("do it").await;
    let output = s.tool_output("/root", "exec_command");
    assert!(output.starts_with(REVIEW_UNAVAILABLE_SENTENCE), "{output}");
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("review_unavailable", "guardian")]);
    assert_eq!(records[0].risk_level, None, "never a risk denial");
    assert!(
        records[0]
            .rationale
            .as_deref()
            .is_some_and(|r| r.starts_with("malformed verdict")),
        "{records:?}"
    );
    assert_eq!(
        guardian_requests(&s).len(),
        1,
        "a malformed answer is not retried"
    );
}

/// An allow wrapped in anything but one bare object with the known keys is not a verdict: the
/// action does not run, and the log says why the review failed.
#[tokio::test]
async fn an_allow_that_is_not_one_bare_object_fails_closed() {
    let outside = outside_dir();
    let target = outside.path().join("allowed.txt");
    let cases = [
        (format!("Verdict: {ALLOW}"), "text before the json object"),
        (format!("```json\n{ALLOW}\n```"), "code fence"),
        (format!("[{ALLOW}]"), "json array"),
        (
            r#"{"outcome": "allow", "risk_level": "low", "approved_by": "user"}"#.to_string(),
            "unknown field `approved_by`",
        ),
    ];
    for (answer, reason) in cases {
        let script = json!({"agents": [
            root_calls(&[escalated(&format!("touch {}", target.display()))]),
            guardian(&[say(&answer)])
        ]});
        let mut s = guardian_session(script, |_| {}).await;
        s.run("do it").await;
        let output = s.tool_output("/root", "exec_command");
        assert!(
            output.starts_with(REVIEW_UNAVAILABLE_SENTENCE),
            "{answer}: {output}"
        );
        assert!(output.contains(reason), "{answer}: {output}");
        let records = log(&s);
        assert_eq!(outcomes(&records), [pair("review_unavailable", "guardian")]);
        let rationale = records[0].rationale.clone().unwrap_or_default();
        assert!(
            rationale.starts_with("malformed verdict") && rationale.contains(reason),
            "{answer}: {rationale}"
        );
        assert!(!target.exists(), "{answer}: the escalation ran");
    }
}

#[tokio::test]
async fn a_verdict_past_the_deadline_is_review_unavailable_after_one_retry() {
    let slow = json!({"delay_ms": 60_000, "items": [say(ALLOW)]});
    let script = json!({"agents": [
        root_calls(&[escalated("true")]),
        {"match": "role:guardian", "repeat": true, "responses": [slow]}
    ]});
    let mut s = guardian_session(script, |config| {
        config.review_deadline = Duration::from_millis(200);
    })
    .await;
    s.run("do it").await;
    let output = s.tool_output("/root", "exec_command");
    assert_eq!(
        output,
        format!("{REVIEW_UNAVAILABLE_SENTENCE} Reason: review timed out")
    );
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("review_unavailable", "guardian")]);
    assert_eq!(records[0].risk_level, None);
    assert_eq!(records[0].rationale.as_deref(), Some("review timed out"));
    assert_eq!(guardian_requests(&s).len(), 2, "one retry after a timeout");
}

/// Fails the guardian's first request with a 503 and hands everything else to the script.
#[derive(Debug)]
struct FlakyGuardian {
    script: Arc<ScriptedModel>,
    failed: AtomicBool,
}

impl ModelClient for FlakyGuardian {
    fn provider(&self) -> &str {
        "flaky"
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        if request.agent.path.as_str() == "/root/guardian"
            && !self.failed.swap(true, Ordering::SeqCst)
        {
            return Box::pin(async {
                Err(ModelError::Http {
                    status: 503,
                    message: "service unavailable".into(),
                })
            });
        }
        self.script.respond(request, events)
    }
}

#[tokio::test]
async fn a_503_is_retried_once() {
    let script = json!({"agents": [
        root_calls(&[escalated("true")]),
        guardian(&[say(ALLOW)])
    ]});
    let mut s = Session::with_model(
        script,
        |script| {
            Arc::new(FlakyGuardian {
                script,
                failed: AtomicBool::new(false),
            })
        },
        |_| {},
        with_guardian,
    )
    .await;
    s.run("do it").await;
    assert_eq!(
        exec_result(&s.tool_output("/root", "exec_command"))["exit_code"],
        0
    );
    assert_eq!(outcomes(&log(&s)), [pair("allow", "guardian")]);
    let asked = guardian_requests(&s);
    assert_eq!(asked.len(), 1, "the retry reached the script");
    let reviews = asked[0]
        .input
        .iter()
        .filter(|item| matches!(item, ResponseItem::Message { role, .. } if role == "user"))
        .count();
    assert_eq!(
        reviews, 1,
        "the retry asks again without repeating the request"
    );
}

fn four_escalations() -> Value {
    root_calls(&[
        escalated("echo 1"),
        escalated("echo 2"),
        escalated("echo 3"),
        escalated("echo 4"),
    ])
}

#[tokio::test]
async fn three_denials_in_a_turn_interrupt_it_when_no_human_is_reachable() {
    let script = json!({"agents": [four_escalations(), guardian(&[say(DENY)])]});
    let mut s = guardian_session(script, |_| {}).await;
    s.run("try four times").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Interrupted("approval denied three times in a row".into())
    );
    assert_eq!(guardian_requests(&s).len(), 3);
    let results = s.tool_results("/root");
    for (_, output) in &results[..3] {
        assert!(output.starts_with(DENIED_SENTENCE), "{output}");
    }
    assert_eq!(results.len(), 3, "the fourth call never ran");
    let root = s.orch.agent(&Session::path("/root")).await.expect("root");
    assert!(
        matches!(root.history.last(), Some(ResponseItem::FunctionCallOutput { output, .. })
            if output == "the turn ended before this call finished"),
        "{:?}",
        root.history.last()
    );
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [
            pair("deny", "guardian"),
            pair("deny", "guardian"),
            pair("deny", "guardian"),
            pair("deny", "policy")
        ]
    );
    assert_audit_complete(s.orch.store(), &records);
}

#[tokio::test]
async fn three_denials_in_a_turn_hand_the_next_request_to_the_human() {
    let script = json!({"agents": [four_escalations(), guardian(&[say(DENY)])]});
    let mut s = guardian_session(script, |config| {
        config.approval_terminal = true;
        config.approval_wait = None;
    })
    .await;
    let mut prompts = s.orch.take_approval_prompts().expect("terminal");
    let human = tokio::spawn(async move {
        let prompt = prompts.recv().await.expect("the fourth request");
        let command = prompt.action["command"].clone();
        prompt
            .answer(TerminalAnswer::ApproveOnce)
            .await
            .expect("answered");
        command
    });
    s.run("try four times").await;
    assert_eq!(human.await.expect("human"), "echo 4");
    assert_eq!(guardian_requests(&s).len(), 3);
    let results = s.tool_results("/root");
    assert_eq!(exec_result(&results[3].1)["stdout"], "4\n");
    let records = log(&s);
    assert_eq!(outcomes(&records)[3], pair("allow", "user"));
    assert!(
        records[3]
            .rationale
            .as_deref()
            .is_some_and(|r| r.contains("handed to the user")),
        "{records:?}"
    );
    assert!(matches!(
        s.orch.root_status().await,
        AgentStatus::Completed(_)
    ));
}

#[tokio::test]
async fn the_guardian_sees_the_task_and_a_bounded_transcript() {
    // Twelve big tool outputs, then an escalation: more transcript than the budget holds.
    let mut calls: Vec<Value> = (0..12)
        .map(|i| json!({"call": "exec_command", "args": {"cmd": format!("echo marker_{i}; seq 1 20000")}}))
        .collect();
    calls.push(escalated("echo last"));
    let script = json!({"agents": [root_calls(&calls), guardian(&[say(ALLOW)])]});
    let mut s = guardian_session(script, |_| {}).await;
    let task = "Summarise the logs: the root user's task";
    s.run(task).await;
    let asked = guardian_requests(&s);
    assert_eq!(asked.len(), 1);
    let review = asked[0]
        .input
        .iter()
        .find_map(|item| match item {
            ResponseItem::Message { role, content } if role == "user" => Some(content.clone()),
            _ => None,
        })
        .expect("the review request");
    assert!(
        review.len() <= Budgets::default().max_rendered_bytes(),
        "{} bytes",
        review.len()
    );
    assert!(review.contains(task), "the root's task is shown");
    assert!(review.contains("/root"), "the requester is named");
    assert!(
        review.contains("marker_11"),
        "the newest transcript entries are shown"
    );
    assert!(!review.contains("marker_0\n"), "the oldest entries are cut");
    assert!(review.contains("older entries omitted"), "the cut is said");
    assert!(
        review.contains("\"sandbox_permissions\": \"require_escalated\""),
        "the exact action"
    );
    assert!(review.contains("the task needs it"), "the justification");
}

#[tokio::test]
async fn a_failed_review_goes_to_a_reachable_human() {
    let script = json!({"agents": [
        root_calls(&[escalated("echo by hand")]),
        guardian(&[say("not json")])
    ]});
    let mut s = guardian_session(script, |config| {
        config.approval_terminal = true;
        config.approval_wait = None;
    })
    .await;
    let mut prompts = s.orch.take_approval_prompts().expect("terminal");
    tokio::spawn(async move {
        while let Some(prompt) = prompts.recv().await {
            let _ = prompt.answer(TerminalAnswer::ApproveOnce).await;
        }
    });
    s.run("do it").await;
    assert_eq!(
        exec_result(&s.tool_output("/root", "exec_command"))["stdout"],
        "by hand\n"
    );
    let records = log(&s);
    assert_eq!(outcomes(&records), [pair("allow", "user")]);
    assert!(
        records[0]
            .rationale
            .as_deref()
            .is_some_and(|r| r.contains("the guardian's review failed (malformed verdict")),
        "{records:?}"
    );
}

#[tokio::test]
async fn the_guardian_cannot_ask_for_approval_and_its_decisions_are_not_cached() {
    let script = json!({"agents": [
        root_calls(&[escalated("true"), escalated("true")]),
        {"match": "role:guardian", "repeat": true, "responses": [
            [escalated("cat /etc/hostname")],
            [say(ALLOW)]]}
    ]});
    let mut s = guardian_session(script, |_| {}).await;
    s.run("twice").await;
    let own = s.tool_results("/root/guardian");
    assert_eq!(own.len(), 2, "{own:?}");
    for (_, output) in &own {
        assert_eq!(output, arbor_orchestrator::GUARDIAN_CANNOT_ASK_SENTENCE);
    }
    assert_eq!(
        guardian_requests(&s).len(),
        4,
        "each request is reviewed anew"
    );
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [pair("allow", "guardian"), pair("allow", "guardian")],
        "the guardian's own refused command is no request"
    );
    let guardians = s
        .orch
        .agents()
        .await
        .into_iter()
        .filter(|a| a.path.as_str() == "/root/guardian")
        .count();
    assert_eq!(guardians, 1, "one guardian, reused");
}
