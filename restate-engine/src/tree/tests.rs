//! The session's decisions as sequences of operations, without a server.

use arbor_protocol::{AgentPath, AgentStatus, Event, MailId, MailKind, ThreadId};

use super::{Effect, Fresh, Tree};
use crate::wire::{
    CloseRequest, Input, MailRequest, SessionConfig, SpawnRequest, TurnEnded, TurnOutcome, WaitNow,
    WaitRequest,
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

fn started() -> Tree {
    let session = ThreadId::new().as_string();
    let (tree, effects) = Tree::start(&session, "task".into(), SessionConfig::new("/w"), &fresh());
    assert!(matches!(
        effects[0],
        Effect::Event(Event::SessionStarted { .. })
    ));
    assert_eq!(
        effects[1],
        Effect::Deliver(
            AgentPath::root(),
            Input::User {
                text: "task".into()
            }
        )
    );
    assert_eq!(effects[2], Effect::Wake(AgentPath::root()));
    tree
}

fn spawn(tree: &mut Tree, caller: &str, name: &str) -> Result<String, String> {
    let request = SpawnRequest {
        caller: path(caller),
        task_name: name.into(),
        message: format!("do {name}"),
        agent_type: None,
        fresh: None,
    };
    tree.spawn(&request, &fresh()).0
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

fn drain(tree: &mut Tree, at: &str) -> Vec<Effect> {
    let inputs: Vec<Input> = tree
        .mails
        .get(&path(at))
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mail| Input::Mail { mail })
        .collect();
    tree.drained(&path(at), &inputs, true)
}

fn wakes(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Wake(path) => Some(path.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn spawn_checks_every_rule_where_the_edge_is_made() {
    let mut tree = started();
    assert_eq!(
        spawn(&mut tree, "/root", "Bad"),
        Err("agent_name must use only lowercase letters, digits, and underscores".into())
    );
    assert_eq!(
        spawn(&mut tree, "/root", ".."),
        Err("agent_name `..` is reserved".into())
    );
    assert!(spawn(&mut tree, "/root", "a").is_ok());
    assert_eq!(
        spawn(&mut tree, "/root", "a"),
        Err("agent path `/root/a` already exists".into())
    );
    assert_eq!(
        spawn(&mut tree, "/root/a", "b"),
        Err("agent depth limit reached: max depth is 1".into())
    );
    let unknown = SpawnRequest {
        caller: AgentPath::root(),
        task_name: "c".into(),
        message: "x".into(),
        agent_type: Some("wizard".into()),
        fresh: None,
    };
    assert_eq!(
        tree.spawn(&unknown, &fresh()).0,
        Err("unknown agent_type 'wizard'".into())
    );
    let a = tree.agents.get(&path("/root/a")).expect("a");
    assert_eq!(a.status, AgentStatus::PendingInit);
    assert!(a.busy);
    assert_eq!(a.unread.mails, 1);
    assert_eq!(tree.mails[&path("/root/a")][0].kind, MailKind::Spawn);
}

#[test]
fn a_result_is_delivered_before_the_status_and_ends_a_wait_for_all() {
    let mut tree = started();
    drain(&mut tree, "/root");
    spawn(&mut tree, "/root", "a").expect("spawn");
    let request = WaitRequest {
        caller: AgentPath::root(),
        targets: Vec::new(),
        all: true,
        awakeable: "awk".into(),
        unread_from: Vec::new(),
    };
    assert_eq!(tree.wait(&request).0, WaitNow::Registered);
    assert_eq!(tree.agents[&AgentPath::root()].status, AgentStatus::Waiting);
    drain(&mut tree, "/root/a");
    let effects = end(&mut tree, "/root/a", "done");
    let sent = effects
        .iter()
        .position(|e| {
            matches!(
                e,
                Effect::Event(Event::MailSent {
                    kind: MailKind::Result,
                    ..
                })
            )
        })
        .expect("result mail");
    let status = effects
        .iter()
        .position(|e| matches!(e, Effect::Event(Event::AgentStatus { .. })))
        .expect("status");
    let resolved = effects
        .iter()
        .position(|e| matches!(e, Effect::Resolve { .. }))
        .expect("the wait is answered");
    assert!(sent < status && status < resolved, "{effects:#?}");
    assert_eq!(tree.agents[&AgentPath::root()].status, AgentStatus::Running);
    // The root is busy (its turn runs): no wake, no completion.
    assert!(wakes(&effects).is_empty());
    assert!(!tree.completed);
}

#[test]
fn children_finishing_after_the_root_wake_it_once_then_the_tree_is_quiescent() {
    let mut tree = started();
    drain(&mut tree, "/root");
    spawn(&mut tree, "/root", "a").expect("spawn");
    spawn(&mut tree, "/root", "b").expect("spawn");
    assert!(wakes(&end(&mut tree, "/root", "spawned")).is_empty());
    drain(&mut tree, "/root/a");
    drain(&mut tree, "/root/b");
    // One child still runs: the root is not woken yet.
    assert!(wakes(&end(&mut tree, "/root/a", "a")).is_empty());
    assert_eq!(wakes(&end(&mut tree, "/root/b", "b")), ["/root"]);
    assert!(!tree.completed);
    drain(&mut tree, "/root");
    let effects = end(&mut tree, "/root", "both");
    assert!(tree.completed);
    assert_eq!(tree.final_message.as_deref(), Some("both"));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Event(Event::SessionCompleted { .. })))
    );
}

#[test]
fn queue_only_mail_waits_and_a_followup_after_the_last_request_wakes_again() {
    let mut tree = started();
    drain(&mut tree, "/root");
    spawn(&mut tree, "/root", "a").expect("spawn");
    drain(&mut tree, "/root/a");
    end(&mut tree, "/root/a", "first");
    let note = MailRequest {
        author: AgentPath::root(),
        target: "a".into(),
        content: "note".into(),
        followup: false,
    };
    let (reply, effects) = tree.mail(&note, &fresh());
    assert_eq!(reply, Ok(String::new()));
    assert!(wakes(&effects).is_empty(), "queue-only mail does not wake");
    let followup = MailRequest {
        followup: true,
        content: "more".into(),
        ..note.clone()
    };
    assert_eq!(wakes(&tree.mail(&followup, &fresh()).1), ["/root/a"]);
    drain(&mut tree, "/root/a");
    // A follow-up that lands after the turn's last request wakes the agent once it ends.
    assert!(wakes(&tree.mail(&followup, &fresh()).1).is_empty());
    assert_eq!(wakes(&end(&mut tree, "/root/a", "second")), ["/root/a"]);
    let to_root = MailRequest {
        target: "/root".into(),
        ..followup
    };
    assert_eq!(
        tree.mail(&to_root, &fresh()).0,
        Err("Follow-up tasks can't target the root agent".into())
    );
}

#[test]
fn close_shuts_the_branch_and_later_mail_is_refused() {
    let mut tree = started();
    drain(&mut tree, "/root");
    spawn(&mut tree, "/root", "a").expect("spawn");
    let close = CloseRequest {
        caller: AgentPath::root(),
        target: "a".into(),
    };
    let (reply, effects) = tree.close(&close);
    assert_eq!(reply, Ok(r#"{"previous_status":"pending_init"}"#.into()));
    assert!(effects.contains(&Effect::Close(path("/root/a"))));
    let mail = MailRequest {
        author: AgentPath::root(),
        target: "a".into(),
        content: "x".into(),
        followup: false,
    };
    assert_eq!(
        tree.mail(&mail, &fresh()).0,
        Err("agent /root/a is closed".into())
    );
    let root = CloseRequest {
        caller: AgentPath::root(),
        target: "/root".into(),
    };
    assert_eq!(
        tree.close(&root).0,
        Err("root is not a spawned agent".into())
    );
    // A closed path may be spawned again.
    assert!(spawn(&mut tree, "/root", "a").is_ok());
}

#[test]
fn an_interrupt_ends_a_wait_and_stops_the_turn_at_its_next_boundary() {
    let mut tree = started();
    drain(&mut tree, "/root");
    spawn(&mut tree, "/root", "a").expect("spawn");
    drain(&mut tree, "/root/a");
    let request = WaitRequest {
        caller: AgentPath::root(),
        targets: vec!["a".into()],
        all: true,
        awakeable: "awk".into(),
        unread_from: Vec::new(),
    };
    assert_eq!(tree.wait(&request).0, WaitNow::Registered);
    let interrupt = CloseRequest {
        caller: AgentPath::root(),
        target: "/root".into(),
    };
    let (reply, effects) = tree.interrupt(&interrupt);
    assert_eq!(reply, Ok(r#"{"previous_status":"waiting"}"#.into()));
    assert!(effects.contains(&Effect::Resolve {
        awakeable: "awk".into(),
        message: "interrupted".into(),
    }));
    assert!(tree.take_interrupt(&AgentPath::root()));
    assert!(!tree.take_interrupt(&AgentPath::root()), "seen once");
    end(&mut tree, "/root/a", "done");
    let idle = CloseRequest {
        caller: AgentPath::root(),
        target: "a".into(),
    };
    let (reply, _) = tree.interrupt(&idle);
    assert_eq!(
        reply,
        Ok(r#"{"previous_status":{"completed":"done"}}"#.into())
    );
    assert!(
        !tree.take_interrupt(&path("/root/a")),
        "an idle agent is left as it is"
    );
}
