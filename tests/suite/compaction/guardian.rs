//! The guardian compacts like any agent: a session with 500 reviews keeps working, and every
//! review request stays within the guardian's window.

use arbor_guardian::Budgets;
use arbor_orchestrator::config::RoleModel;
use arbor_orchestrator::{COMPACTION_PROMPT, SUMMARY_HEADER};
use arbor_protocol::{AgentStatus, ApprovalsReviewer, Event, ResponseItem};
use arbor_tests::Session;
use serde_json::{Value, json};

const ALLOW: &str = r#"{"outcome": "allow", "risk_level": "low", "rationale": "a no-op"}"#;
const WINDOW: u64 = 20_000;

fn bytes(items: &[ResponseItem]) -> usize {
    arbor_model::window::item_bytes(items)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guardian_reviewing_500_approvals_compacts_and_never_errors() {
    // 50 responses of 10 escalated no-op commands each: 500 reviews in one turn.
    let mut responses: Vec<Value> = (0..50)
        .map(|batch| {
            json!(
                (0..10)
                    .map(|i| json!({"call": "exec_command", "args": {
                        "cmd": format!("true {batch}-{i}"),
                        "sandbox_permissions": "require_escalated",
                        "justification": "the task needs it"
                    }}))
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    responses.push(json!([{"say": "all 500 ran"}]));
    let script = json!({"agents": [
        {"match": "/root", "responses": responses},
        {"match": "role:guardian", "repeat": true, "responses": [[{"say": ALLOW}]]}
    ]});
    let mut s = Session::new(script, |config| {
        config.reviewer = ApprovalsReviewer::Guardian;
        config.role_models.insert(
            "guardian".into(),
            RoleModel {
                model_context_window: Some(WINDOW),
                ..RoleModel::default()
            },
        );
    })
    .await;
    s.run("run the 500 no-ops").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("all 500 ran".into()))
    );
    let records = crate::approvals::log(&s);
    assert_eq!(records.len(), 500);
    assert!(
        records.iter().all(|r| r.outcome.as_str() == "allow"
            && r.decided_by.map(|by| by.as_str()) == Some("guardian")),
        "every review was the guardian's allow"
    );
    let guardian = Session::path("/root/guardian");
    assert!(
        matches!(
            s.orch.agent(&guardian).await.expect("guardian").status,
            AgentStatus::Completed(_)
        ),
        "the guardian never errored"
    );

    let requests = s.model.requests_for(&guardian);
    let compactions = requests
        .iter()
        .filter(|r| {
            matches!(r.input.last(), Some(ResponseItem::Message { content, .. }) if content == COMPACTION_PROMPT)
        })
        .count();
    assert!(
        compactions >= 2,
        "the guardian compacted {compactions} times"
    );
    assert_eq!(requests.len(), 500 + compactions);
    let compacted_events = s
        .seen
        .iter()
        .filter(|l| matches!(&l.event, Event::AgentCompacted { path, .. } if *path == guardian))
        .count();
    assert_eq!(compacted_events, compactions);
    let limit = Budgets::default().max_rendered_bytes();
    for request in requests.iter().filter(|r| {
        !matches!(r.input.last(), Some(ResponseItem::Message { content, .. }) if content == COMPACTION_PROMPT)
    }) {
        // Each review is bounded, and no review request outgrew the guardian's window.
        let Some(ResponseItem::Message { content, .. }) = request.input.last() else {
            panic!("a review request ends with the review");
        };
        assert!(content.len() <= limit, "{} > {limit}", content.len());
        let tokens = (request.instructions.len() + bytes(&request.input)).div_ceil(4) as u64;
        assert!(tokens < WINDOW, "a review request of about {tokens} tokens");
    }
    // After a compaction the guardian's requests start with its summary.
    let last = requests.last().expect("a request");
    assert!(
        matches!(&last.input[0], ResponseItem::Message { content, .. } if content.starts_with(SUMMARY_HEADER)),
        "{:?}",
        last.input[0]
    );
}
