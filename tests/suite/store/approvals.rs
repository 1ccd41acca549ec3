//! The approval log: requests, decisions, and what is still pending.

use arbor_agent_graph::{ApprovalDecision, ApprovalOutcome, ApprovalRecord, DecidedBy, StoreError};
use arbor_protocol::AgentPath;

use super::{open_store, path, seed_threads, tid};

#[test]
fn approvals_are_logged_with_their_decisions() {
    let (_dir, store) = open_store();
    seed_threads(&store, 1, &[(1, None, "/root"), (2, Some(1), "/root/w")]);
    let action = serde_json::json!({"type": "exec", "cmd": ["rm", "-rf", "build"]});
    let first = ApprovalRecord::pending(
        "req-1".into(),
        tid(1),
        tid(2),
        path("/root/w"),
        action.clone(),
        Some("clean the build".into()),
    );
    let second = ApprovalRecord::pending(
        "req-2".into(),
        tid(1),
        tid(1),
        AgentPath::root(),
        action,
        None,
    );
    store
        .record_approval_request(first.clone())
        .wait()
        .expect("request 1");
    store
        .record_approval_request(second.clone())
        .wait()
        .expect("request 2");
    assert_eq!(
        store.pending_approvals(tid(1)).expect("pending"),
        [first.clone(), second.clone()]
    );

    let decision = ApprovalDecision {
        outcome: ApprovalOutcome::Deny,
        decided_by: DecidedBy::Guardian,
        risk_level: Some("high".into()),
        rationale: Some("deletes files".into()),
        tokens: Some(1234),
    };
    store
        .decide_approval("req-1", decision)
        .wait()
        .expect("decide");
    let all = store.approvals(tid(1)).expect("list");
    assert_eq!(all.len(), 2);
    let decided = &all[0];
    assert_eq!(decided.id, "req-1");
    assert_eq!(decided.outcome, ApprovalOutcome::Deny);
    assert_eq!(decided.decided_by, Some(DecidedBy::Guardian));
    assert_eq!(decided.risk_level.as_deref(), Some("high"));
    assert_eq!(decided.rationale.as_deref(), Some("deletes files"));
    assert_eq!(decided.tokens, Some(1234));
    assert!(decided.decided_at.is_some_and(|t| t >= first.requested_at));
    assert_eq!(
        (&decided.action, &decided.justification),
        (&first.action, &first.justification)
    );
    assert_eq!(
        (decided.requester_id, &decided.requester),
        (tid(2), &first.requester)
    );
    assert_eq!(all[1], second);
    assert_eq!(store.pending_approvals(tid(1)).expect("pending"), [second]);

    let nobody = ApprovalDecision {
        outcome: ApprovalOutcome::Allow,
        decided_by: DecidedBy::User,
        risk_level: None,
        rationale: None,
        tokens: None,
    };
    let err = store
        .decide_approval("req-9", nobody)
        .wait()
        .expect_err("unknown");
    assert!(matches!(err, StoreError::UnknownApproval(_)), "{err}");
}
