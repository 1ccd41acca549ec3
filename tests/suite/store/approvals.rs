//! The approval log as the projection of approval lines: requests, the first decision, and
//! what is still pending.

use arbor_agent_graph::{ApprovalOutcome, DecidedBy};
use arbor_protocol::{ApprovalDecided, ApprovalRequested, RolloutItem};

use super::{Seed, open_store, tid};

fn asked(id: &str, justification: Option<&str>) -> RolloutItem {
    RolloutItem::ApprovalRequested(ApprovalRequested {
        request_id: id.into(),
        action: serde_json::json!({"type": "exec", "cmd": ["rm", "-rf", "build"]}),
        justification: justification.map(str::to_string),
    })
}

fn decided(id: &str, outcome: &str, by: &str) -> RolloutItem {
    RolloutItem::ApprovalDecided(Box::new(ApprovalDecided {
        request_id: id.into(),
        outcome: outcome.into(),
        decided_by: Some(by.into()),
        risk_level: Some("high".into()),
        rationale: Some("deletes files".into()),
        tokens: Some(1234),
    }))
}

#[test]
fn approvals_are_logged_with_their_first_decision() {
    let (_dir, store) = open_store();
    let mut seed = Seed::new(1);
    seed.spawn(1, None, "/root")
        .spawn(2, Some(1), "/root/w")
        .line(2, asked("req-1", Some("clean the build")))
        .line(1, asked("req-2", None))
        .commit(&store);
    let pending = store.pending_approvals(tid(1)).expect("pending");
    assert_eq!(
        pending.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["req-1", "req-2"]
    );
    assert_eq!(pending[0].requester_id, tid(2));
    assert_eq!(pending[0].requester.as_str(), "/root/w");
    assert_eq!(pending[0].justification.as_deref(), Some("clean the build"));

    seed.line(2, decided("req-1", "deny", "guardian"))
        .line(2, decided("req-1", "allow", "user"))
        .line(2, decided("req-9", "allow", "user"))
        .commit(&store);
    let all = store.approvals(tid(1)).expect("list");
    assert_eq!(all.len(), 2);
    let first = &all[0];
    assert_eq!(
        first.outcome,
        ApprovalOutcome::Deny,
        "the first decision stands"
    );
    assert_eq!(first.decided_by, Some(DecidedBy::Guardian));
    assert_eq!(first.risk_level.as_deref(), Some("high"));
    assert_eq!(first.rationale.as_deref(), Some("deletes files"));
    assert_eq!(first.tokens, Some(1234));
    assert!(first.decided_at.is_some_and(|t| t >= first.requested_at));
    let ids: Vec<_> = store
        .pending_approvals(tid(1))
        .expect("pending")
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(ids, ["req-2"]);
    assert_eq!(store.approval("req-9").expect("read"), None);
}
