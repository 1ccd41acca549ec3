//! Overrides: `arbor approve` after a guardian's denial, and after the requester stopped
//! waiting (its turn was interrupted while the request was pending). Either way the identical
//! retry runs once, without asking.

use arbor_guardian::DENIED_SENTENCE;
use arbor_orchestrator::answer_external;
use arbor_protocol::{ApprovalsReviewer, Event, MailKind};
use arbor_tests::Session;
use serde_json::json;

use super::{assert_audit_complete, escalated, log, outcomes, pair, root_calls};
use crate::sandbox::{exec_result, outside_dir};

const DENY: &str =
    r#"{"outcome": "deny", "risk_level": "high", "rationale": "it reaches outside the task"}"#;

fn guardian_denies() -> serde_json::Value {
    json!({"match": "role:guardian", "repeat": true, "responses": [[{"say": DENY}]]})
}

#[tokio::test]
async fn arbor_approve_after_a_denial_lets_the_identical_retry_through_once() {
    let outside = outside_dir();
    let target = outside.path().join("override.txt");
    let cmd = format!("echo again | tee -a {}", target.display());
    let script = json!({"agents": [
        root_calls(&[
            escalated(&cmd),
            json!({"call": "exec_command", "args": {"cmd": "while [ ! -f flag ]; do sleep 0.01; done", "timeout_ms": 600000}}),
            escalated(&format!("echo   again |  tee -a '{}'", target.display())),
            escalated(&cmd),
        ]),
        guardian_denies()
    ]});
    let mut s = Session::new(script, |config| {
        config.reviewer = ApprovalsReviewer::Guardian
    })
    .await;
    s.orch.start("append twice").await.expect("start");
    let Event::ApprovalDecided { id, outcome, .. } = s
        .wait_event(|e| matches!(e, Event::ApprovalDecided { .. }))
        .await
    else {
        unreachable!("matched above");
    };
    assert_eq!(outcome, "deny");
    // Another process reads what is durable: the request's lines first reach the disk (a user
    // sees the id only once they have, as the console prints events after their lines).
    s.orch
        .flush_blocking()
        .expect("the session's files are written");
    let home = s.home.path().to_path_buf();
    let session = s.orch.session_id().to_string();
    let answer = |id: String| {
        let (home, session) = (home.clone(), session.clone());
        tokio::task::spawn_blocking(move || answer_external(&home, &session, &id, true))
    };
    let answered = answer(id.clone()).await.expect("joined").expect("approved");
    assert!(answered.override_granted && !answered.decided);
    let again = answer(id.clone()).await.expect("joined");
    assert_eq!(
        again.map(|_| ()).map_err(|e| e.to_string()),
        Err(format!(
            "approval request {id} was already approved for one retry"
        ))
    );
    // The driver takes the answer in at its next look at the log and grants the override;
    // only then may the retry run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        s.orch
            .flush_blocking()
            .expect("the session's files are written");
        let granted = s
            .orch
            .store()
            .overrides(s.orch.session_id())
            .expect("overrides");
        if !granted.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the driver never granted the override"
        );
        tokio::task::yield_now().await;
    }
    std::fs::write(s.workspace().join("flag"), "").expect("flag");
    s.orch.wait_quiescent().await;
    s.drain();
    let results = s.tool_results("/root");
    assert_eq!(
        exec_result(&results[2].1)["exit_code"],
        0,
        "{}",
        results[2].1
    );
    assert!(
        results[3].1.starts_with(DENIED_SENTENCE),
        "only once: {}",
        results[3].1
    );
    assert_eq!(std::fs::read_to_string(&target).expect("file"), "again\n");
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [
            pair("deny", "guardian"),
            pair("allow", "user"),
            pair("deny", "guardian")
        ]
    );
    assert_eq!(
        records[1].rationale,
        Some(format!("override: the user approved request {id}"))
    );
    let overrides = s
        .orch
        .store()
        .overrides(s.orch.session_id())
        .expect("overrides");
    assert_eq!(
        overrides[0].used_by.as_deref(),
        Some(records[1].id.as_str())
    );
    assert_eq!(
        s.model.requests_for(&Session::path("/root/guardian")).len(),
        2,
        "the override skipped the guardian"
    );
    assert_audit_complete(s.orch.store(), &records);
    let decided = answer(records[1].id.clone()).await.expect("joined");
    assert_eq!(
        decided.map(|_| ()).map_err(|e| e.to_string()),
        Err(format!(
            "approval request {} is already decided: allow by user",
            records[1].id
        ))
    );
}

#[tokio::test]
async fn a_request_cut_short_is_an_orphan_whose_approval_lets_the_retry_through() {
    let outside = outside_dir();
    let target = outside.path().join("orphan.txt");
    let write = escalated(&format!("echo orphan | tee {}", target.display()));
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "escalate"}}],
            // The wait goes on while w waits for the user: at its deadline it says so, and
            // the root cuts w's turn short.
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 1000}}],
            [{"call": "interrupt_agent", "args": {"target": "w"}}],
            [{"say": "root stopped w"}],
            [{"say": "root got {{input}}"}],
            [{"say": "root got {{input}}"}]]},
        {"match": "/root/w", "responses": [[write.clone()], [write], [{"say": "w: {{last_output}}"}]]}
    ]});
    let mut s = Session::new(script, |config| config.approval_wait = None).await;
    s.run("delegate").await;
    let waited: serde_json::Value =
        serde_json::from_str(&s.tool_output("/root", "wait_agent")).expect("json");
    assert_eq!(
        waited,
        json!({"message": "timed out after 1000ms; /root/w is waiting for the user to answer \
                an approval request", "timed_out": true, "awaiting_approval": ["/root/w"]})
    );
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [pair("pending", "-")],
        "cut short, still pending"
    );
    let id = records[0].id.clone();
    let (home, session) = (s.home.path().to_path_buf(), s.orch.session_id().to_string());
    let answered = tokio::task::spawn_blocking(move || answer_external(&home, &session, &id, true))
        .await
        .expect("joined")
        .expect("approved");
    assert!(answered.decided && answered.override_granted);
    // The live driver notices the answer to a request nobody waits for.
    let decided = s
        .wait_event(|e| matches!(e, Event::ApprovalDecided { id, .. } if *id == records[0].id))
        .await;
    assert!(matches!(decided, Event::ApprovalDecided { outcome, .. } if outcome == "allow"));
    s.orch
        .send_from_user("/root/w", MailKind::Followup, "try again")
        .await
        .expect("follow-up");
    s.orch.wait_quiescent().await;
    s.drain();
    let outputs = s.tool_results("/root/w");
    let retry = exec_result(&outputs.last().expect("the retry").1);
    assert_eq!(retry["exit_code"], 0, "{retry}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("written"),
        "orphan\n"
    );
    let records = log(&s);
    assert_eq!(
        outcomes(&records),
        [pair("allow", "user"), pair("allow", "user")]
    );
    assert_audit_complete(s.orch.store(), &records);
}
