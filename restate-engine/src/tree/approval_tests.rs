//! The approval and guardian decisions as sequences of operations, without a server.

use arbor_guardian::{DENIED_SENTENCE, NO_APPROVER_SENTENCE, POLICY_NEVER_SENTENCE};
use arbor_protocol::{
    AgentPath, AgentStatus, ApprovalPolicy, ApprovalsReviewer, Event, MailId, MailKind, ThreadId,
};
use serde_json::json;

use super::{Effect, Fresh, Tree, guardian_path};
use crate::approval::ApprovalKey;
use crate::wire::{
    AnswerRequest, ApprovalReply, ApprovalRequest, Decided, Input, SessionConfig, SpawnRequest,
    Timer, TurnEnded, TurnOutcome, WaitNow, WaitRequest,
};

fn fresh() -> Fresh {
    Fresh {
        thread_id: ThreadId::new().as_string(),
        mail_id: MailId::new().to_string(),
        now_ms: 0,
    }
}

fn path(text: &str) -> AgentPath {
    AgentPath::parse(text).expect("path")
}

const ALLOW: &str = r#"{"outcome": "allow", "risk_level": "low", "rationale": "one file"}"#;
const DENY: &str = r#"{"outcome": "deny", "risk_level": "high", "rationale": "too much"}"#;

/// A started tree (configured by `configure`) whose root has spawned `/root/w`; both run.
fn tree_with(configure: impl FnOnce(&mut SessionConfig)) -> Tree {
    let mut config = SessionConfig::new("/w");
    configure(&mut config);
    let session = ThreadId::new().as_string();
    let (mut tree, _) = Tree::start(&session, "the task".into(), config, &fresh());
    tree.drained(&AgentPath::root(), &[], true);
    let spawn = SpawnRequest {
        caller: AgentPath::root(),
        task_name: "w".into(),
        message: "work".into(),
        agent_type: None,
        fresh: None,
    };
    assert!(tree.spawn(&spawn, &fresh()).0.is_ok());
    take_inbox(&mut tree, "/root/w");
    tree
}

fn ask(tree: &mut Tree, at: &str, command: &str, awakeable: &str) -> (ApprovalReply, Vec<Effect>) {
    let request = ApprovalRequest {
        path: path(at),
        action: json!({"tool": "exec_command", "command": command, "cwd": "/w"}),
        justification: Some("the task needs it".into()),
        key: ApprovalKey {
            command: command.into(),
            cwd: "/w".into(),
            escalated: true,
        },
        review: Some(format!("review {command}")),
        awakeable: awakeable.into(),
    };
    tree.request_approval(&request, &fresh())
}

fn pending_id(reply: &ApprovalReply) -> String {
    match reply {
        ApprovalReply::Pending { id } => id.clone(),
        other => panic!("not pending: {other:?}"),
    }
}

fn answer(tree: &mut Tree, id: &str, approve: bool) -> (Result<String, String>, Vec<Effect>) {
    let request = AnswerRequest {
        id: id.into(),
        approve,
    };
    let (reply, effects) = tree.answer(&request);
    (
        reply.map(|r| format!("decided={} override={}", r.decided, r.override_granted)),
        effects,
    )
}

fn decided(effects: &[Effect], awakeable: &str) -> Option<Decided> {
    effects.iter().find_map(|effect| match effect {
        Effect::Decide {
            awakeable: a,
            decided,
        } if a == awakeable => Some(decided.clone()),
        _ => None,
    })
}

/// `(outcome, decided_by)` of every request, in order.
fn outcomes(tree: &Tree) -> Vec<(String, Option<String>)> {
    tree.approval_rows()
        .into_iter()
        .map(|row| (row.outcome, row.decided_by))
        .collect()
}

fn pair(outcome: &str, by: &str) -> (String, Option<String>) {
    (outcome.to_string(), Some(by.to_string()))
}

/// A turn of `at` starts and takes its unread mail.
fn take_inbox(tree: &mut Tree, at: &str) {
    let inputs: Vec<Input> = tree
        .mails
        .get(&path(at))
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mail| Input::Mail { mail })
        .collect();
    tree.drained(&path(at), &inputs, true);
}

fn end(tree: &mut Tree, at: &str, message: &str) -> Vec<Effect> {
    let ended = TurnEnded {
        path: path(at),
        outcome: TurnOutcome::Completed {
            last_message: Some(message.into()),
        },
        events: Vec::new(),
        fresh: None,
    };
    tree.turn_ended(&ended, &fresh())
}

#[test]
fn a_pending_request_holds_its_requester_and_the_tree_until_a_human_answers() {
    let mut tree = tree_with(|_| {});
    let wait = WaitRequest {
        caller: AgentPath::root(),
        targets: Vec::new(),
        all: true,
        awakeable: "root-wait".into(),
        unread_from: Vec::new(),
    };
    assert_eq!(tree.wait(&wait).0, WaitNow::Registered);
    let (reply, effects) = ask(&mut tree, "/root/w", "touch /x", "w-approval");
    let id = pending_id(&reply);
    let w = &tree.agents[&path("/root/w")];
    assert_eq!(w.status, AgentStatus::AwaitingApproval);
    assert_eq!(tree.rows()[1].pending_approvals, 1);
    // The requested event, then the status; the root's wait returns early, saying why.
    assert!(
        matches!(&effects[0], Effect::Event(Event::ApprovalRequested { id: i, .. }) if i == &id)
    );
    assert!(effects.contains(&Effect::Resolve {
        awakeable: "root-wait".into(),
        message: "/root/w is waiting for an approval".into(),
    }));
    // The root's turn ends; the tree is not complete while the request is pending.
    end(&mut tree, "/root", "root waited");
    assert!(!tree.completed);
    let (reply, effects) = answer(&mut tree, &id, true);
    assert_eq!(reply, Ok("decided=true override=true".into()));
    assert_eq!(
        decided(&effects, "w-approval"),
        Some(Decided {
            allow: true,
            message: None
        })
    );
    let decided_at = effects
        .iter()
        .position(|e| matches!(e, Effect::Event(Event::ApprovalDecided { .. })))
        .expect("decided event");
    let running = effects
        .iter()
        .position(|e| {
            matches!(
                e,
                Effect::Event(Event::AgentStatus {
                    status: AgentStatus::Running,
                    ..
                })
            )
        })
        .expect("running again");
    assert!(decided_at < running);
    assert_eq!(outcomes(&tree), [pair("allow", "user")]);
    let row = &tree.approval_rows()[0];
    assert_eq!(
        row.grant.as_ref().and_then(|g| g.used_by.as_deref()),
        Some(id.as_str()),
        "its waiter used the approval"
    );
    assert_eq!(
        answer(&mut tree, &id, true).0,
        Err(format!(
            "approval request {id} is already decided: allow by user"
        ))
    );
    assert_eq!(
        answer(&mut tree, "nope", false).0,
        Err(format!(
            "approval request `nope` not found in session {}",
            tree.session
        ))
    );
    // w ends; its result wakes the root once; then the tree completes.
    let effects = end(&mut tree, "/root/w", "w done");
    assert!(effects.contains(&Effect::Wake(AgentPath::root())));
    take_inbox(&mut tree, "/root");
    end(&mut tree, "/root", "all done");
    assert!(tree.completed);
}

#[test]
fn a_denial_can_be_overridden_once_for_the_identical_retry() {
    let mut tree = tree_with(|_| {});
    let id = pending_id(&ask(&mut tree, "/root/w", "touch /x", "a1").0);
    let (reply, effects) = answer(&mut tree, &id, false);
    assert_eq!(reply, Ok("decided=true override=false".into()));
    let denied = decided(&effects, "a1").expect("decided");
    assert!(!denied.allow);
    assert_eq!(
        denied.message.as_deref(),
        Some(format!("{DENIED_SENTENCE} Reason: denied by the user").as_str())
    );
    assert_eq!(
        answer(&mut tree, &id, true).0,
        Ok("decided=false override=true".into())
    );
    assert_eq!(
        answer(&mut tree, &id, true).0,
        Err(format!(
            "approval request {id} was already approved for one retry"
        ))
    );
    // Another command asks as before; the identical retry runs at once, once.
    assert!(matches!(
        ask(&mut tree, "/root/w", "touch /y", "a2").0,
        ApprovalReply::Pending { .. }
    ));
    let (reply, _) = ask(&mut tree, "/root/w", "touch /x", "a3");
    assert_eq!(
        reply,
        ApprovalReply::Decided {
            decided: Decided {
                allow: true,
                message: None
            }
        }
    );
    let rows = tree.approval_rows();
    assert_eq!(
        rows[2].rationale.as_deref(),
        Some(format!("override: the user approved request {id}").as_str())
    );
    assert_eq!(
        rows[0].grant.as_ref().and_then(|g| g.used_by.clone()),
        Some(rows[2].id.clone())
    );
    assert!(matches!(
        ask(&mut tree, "/root/w", "touch /x", "a4").0,
        ApprovalReply::Pending { .. }
    ));
}

#[test]
fn policy_never_and_nobody_to_ask_decide_at_once_and_the_wait_runs_out() {
    let mut tree = tree_with(|config| config.approval_policy = ApprovalPolicy::Never);
    let (reply, _) = ask(&mut tree, "/root/w", "touch /x", "a");
    assert_eq!(
        reply,
        ApprovalReply::Decided {
            decided: Decided {
                allow: false,
                message: Some(POLICY_NEVER_SENTENCE.into())
            }
        }
    );
    assert_eq!(outcomes(&tree), [pair("deny", "policy")]);
    assert_eq!(
        tree.agents[&path("/root/w")].status,
        AgentStatus::Running,
        "never awaiting"
    );

    let mut tree = tree_with(|config| config.approval_wait_ms = Some(0));
    let (reply, _) = ask(&mut tree, "/root/w", "touch /x", "a");
    assert!(
        matches!(reply, ApprovalReply::Decided { decided } if decided.message.as_deref() == Some(NO_APPROVER_SENTENCE))
    );
    assert_eq!(outcomes(&tree), [pair("no_approver", "policy")]);

    let mut tree = tree_with(|config| config.approval_wait_ms = Some(5_000));
    let (reply, effects) = ask(&mut tree, "/root/w", "touch /x", "a");
    let id = pending_id(&reply);
    let timer = Timer::Expire { id: id.clone() };
    assert!(effects.contains(&Effect::Later {
        after_ms: 5_000,
        timer: timer.clone()
    }));
    let effects = tree.timer(&timer);
    assert_eq!(
        decided(&effects, "a").and_then(|d| d.message),
        Some(NO_APPROVER_SENTENCE.into())
    );
    assert_eq!(outcomes(&tree), [pair("no_approver", "policy")]);
    assert!(
        tree.timer(&timer).is_empty(),
        "once decided, a timer does nothing"
    );
}

/// The guardian's review of the request `id`: it was handed the review request and woken.
fn handed_to_guardian(effects: &[Effect], text: &str) -> bool {
    effects.contains(&Effect::Deliver(
        guardian_path(),
        Input::User { text: text.into() },
    )) && effects.contains(&Effect::Wake(guardian_path()))
}

#[test]
fn the_guardian_reviews_one_request_per_turn_and_stays_internal() {
    let mut tree = tree_with(|config| config.reviewer = ApprovalsReviewer::Guardian);
    let (first, effects) = ask(&mut tree, "/root/w", "touch /a", "a1");
    let first = pending_id(&first);
    assert!(effects.iter().any(|e| matches!(e,
        Effect::Event(Event::AgentSpawned { path, role, .. })
            if path == &guardian_path() && role == "guardian")));
    assert!(handed_to_guardian(&effects, "review touch /a"));
    let guardian = &tree.agents[&guardian_path()];
    assert!(guardian.internal && guardian.busy);
    assert_eq!(guardian.sandbox, arbor_protocol::SandboxMode::ReadOnly);
    // A second request waits until the guardian's turn is over.
    let (second, effects) = ask(&mut tree, "/root", "touch /b", "a2");
    let second = pending_id(&second);
    assert!(!handed_to_guardian(&effects, "review touch /b"));
    tree.drained(&guardian_path(), &[], true);
    let effects = end(&mut tree, "/root/guardian", ALLOW);
    assert_eq!(decided(&effects, "a1").map(|d| d.allow), Some(true));
    assert!(handed_to_guardian(&effects, "review touch /b"));
    assert!(
        !effects.iter().any(|e| matches!(
            e,
            Effect::Event(Event::MailSent {
                kind: MailKind::Result,
                ..
            })
        )),
        "the guardian's answer is no mail"
    );
    tree.drained(&guardian_path(), &[], true);
    let effects = end(&mut tree, "/root/guardian", DENY);
    let denied = decided(&effects, "a2").expect("decided");
    assert_eq!(
        denied.message.as_deref(),
        Some(format!("{DENIED_SENTENCE} Reason: too much").as_str())
    );
    let rows = tree.approval_rows();
    assert_eq!(
        outcomes(&tree),
        [pair("allow", "guardian"), pair("deny", "guardian")]
    );
    assert_eq!(rows[0].id, first);
    assert_eq!(rows[1].id, second);
    assert_eq!(rows[0].risk_level.as_deref(), Some("low"));
    assert_eq!(rows[1].rationale.as_deref(), Some("too much"));
    // The guardian is reserved and left out of the root's children.
    let spawn = SpawnRequest {
        caller: AgentPath::root(),
        task_name: "guardian".into(),
        message: "hi".into(),
        agent_type: None,
        fresh: None,
    };
    assert_eq!(
        tree.spawn(&spawn, &fresh()).0,
        Err("agent path `/root/guardian` already exists".into())
    );
    let wait = WaitRequest {
        caller: AgentPath::root(),
        targets: Vec::new(),
        all: true,
        awakeable: "w".into(),
        unread_from: Vec::new(),
    };
    assert_eq!(tree.wait(&wait).0, WaitNow::Registered);
    let wait = &tree.waits[&AgentPath::root()];
    assert_eq!(
        tree.wait_targets(&AgentPath::root(), wait),
        [path("/root/w")]
    );
}

#[test]
fn a_malformed_verdict_fails_closed_or_goes_to_a_human_who_can_answer() {
    let mut tree = tree_with(|config| {
        config.reviewer = ApprovalsReviewer::Guardian;
        config.approval_wait_ms = Some(0);
    });
    ask(&mut tree, "/root/w", "touch /a", "a1");
    tree.drained(&guardian_path(), &[], true);
    let effects = end(&mut tree, "/root/guardian", "Looks fine to me!");
    let message = decided(&effects, "a1")
        .and_then(|d| d.message)
        .unwrap_or_default();
    assert!(
        message.starts_with(arbor_guardian::REVIEW_UNAVAILABLE_SENTENCE),
        "{message}"
    );
    assert_eq!(outcomes(&tree), [pair("review_unavailable", "guardian")]);
    let rows = tree.approval_rows();
    assert!(
        rows[0]
            .rationale
            .as_deref()
            .is_some_and(|r| r.starts_with("malformed verdict"))
    );
    assert_eq!(rows[0].risk_level, None, "never a risk denial");

    let mut tree = tree_with(|config| {
        config.reviewer = ApprovalsReviewer::Guardian;
        config.approval_wait_ms = Some(60_000);
    });
    let id = pending_id(&ask(&mut tree, "/root/w", "touch /a", "a1").0);
    tree.drained(&guardian_path(), &[], true);
    let effects = end(&mut tree, "/root/guardian", "```json\n{}\n```");
    assert!(
        decided(&effects, "a1").is_none(),
        "a human may still answer"
    );
    assert!(effects.contains(&Effect::Later {
        after_ms: 60_000,
        timer: Timer::Expire { id: id.clone() }
    }));
    let effects = tree.timer(&Timer::Expire { id });
    assert!(decided(&effects, "a1").is_some_and(|d| !d.allow));
    let row = &tree.approval_rows()[0];
    assert_eq!(row.outcome, "review_unavailable");
    assert!(
        row.rationale
            .as_deref()
            .is_some_and(|r| r.ends_with("; no human answered")),
        "{row:?}"
    );
}

#[test]
fn a_missed_review_deadline_is_retried_once_then_unavailable() {
    let mut tree = tree_with(|config| {
        config.reviewer = ApprovalsReviewer::Guardian;
        config.approval_wait_ms = Some(0);
        config.review_deadline_ms = 200;
    });
    let id = pending_id(&ask(&mut tree, "/root/w", "touch /a", "a1").0);
    tree.drained(&guardian_path(), &[], true);
    let first = Timer::Review {
        id: id.clone(),
        attempt: 0,
    };
    assert!(tree.timer(&first).is_empty());
    assert!(
        tree.take_interrupt(&guardian_path()),
        "the slow turn is stopped"
    );
    let ended = TurnEnded {
        path: guardian_path(),
        outcome: TurnOutcome::Interrupted {
            reason: "interrupted".into(),
        },
        events: Vec::new(),
        fresh: None,
    };
    let effects = tree.turn_ended(&ended, &fresh());
    assert!(
        effects.contains(&Effect::Wake(guardian_path())),
        "asked again"
    );
    let second = Timer::Review {
        id: id.clone(),
        attempt: 1,
    };
    assert!(effects.contains(&Effect::Later {
        after_ms: 200,
        timer: second.clone()
    }));
    tree.drained(&guardian_path(), &[], true);
    let effects = tree.timer(&second);
    assert!(decided(&effects, "a1").is_some_and(|d| !d.allow));
    let row = &tree.approval_rows()[0];
    assert_eq!(row.outcome, "review_unavailable");
    assert_eq!(row.rationale.as_deref(), Some("review timed out"));
    // The late verdict changes nothing.
    end(&mut tree, "/root/guardian", ALLOW);
    assert_eq!(tree.approval_rows()[0].outcome, "review_unavailable");
}

#[test]
fn three_denials_in_a_turn_hand_the_next_request_to_a_human_or_interrupt_the_turn() {
    for reachable in [true, false] {
        let mut tree = tree_with(|config| {
            config.reviewer = ApprovalsReviewer::Guardian;
            config.approval_wait_ms = if reachable { None } else { Some(0) };
        });
        for n in 0..3 {
            ask(&mut tree, "/root/w", &format!("touch /{n}"), "a");
            tree.drained(&guardian_path(), &[], true);
            end(&mut tree, "/root/guardian", DENY);
        }
        let (reply, effects) = ask(&mut tree, "/root/w", "touch /3", "a4");
        assert!(!handed_to_guardian(&effects, "review touch /3"));
        if reachable {
            assert!(matches!(reply, ApprovalReply::Pending { .. }));
        } else {
            assert!(matches!(&reply, ApprovalReply::Decided { decided } if !decided.allow));
            assert!(
                tree.take_interrupt(&path("/root/w")),
                "its turn is interrupted"
            );
            let row = &tree.approval_rows()[3];
            assert_eq!(
                (row.outcome.as_str(), row.decided_by.as_deref()),
                ("deny", Some("policy"))
            );
        }
    }
}

#[test]
fn an_interrupted_requester_stops_waiting_and_its_request_stays_for_a_human() {
    let mut tree = tree_with(|_| {});
    let id = pending_id(&ask(&mut tree, "/root/w", "touch /x", "a1").0);
    let interrupt = crate::wire::CloseRequest {
        caller: AgentPath::root(),
        target: "w".into(),
    };
    let (reply, effects) = tree.interrupt(&interrupt);
    assert_eq!(
        reply,
        Ok(r#"{"previous_status":"awaiting_approval"}"#.into())
    );
    assert!(decided(&effects, "a1").is_some_and(|d| !d.allow));
    assert_eq!(tree.agents[&path("/root/w")].status, AgentStatus::Running);
    assert_eq!(
        answer(&mut tree, &id, true).0,
        Ok("decided=true override=true".into())
    );
    let row = &tree.approval_rows()[0];
    assert_eq!(row.grant.as_ref().map(|g| g.used_by.is_none()), Some(true));
}
