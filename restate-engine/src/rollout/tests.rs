//! The rollout of an `Agent` object's state: header, turns in order, mail taken as
//! `mail_consumed`, each turn's end and status.

use arbor_protocol::{
    AgentPath, AgentStatus, Mail, MailId, MailKind, ResponseItem, RolloutItem, ThreadId, Timestamp,
};

use super::items;
use crate::wire::{AgentHistory, AgentRow, TurnMark, TurnOutcome};

fn message(role: &str, content: &str) -> ResponseItem {
    ResponseItem::Message {
        role: role.to_string(),
        content: content.to_string(),
    }
}

#[test]
fn turns_become_the_local_engines_lines() {
    let session = ThreadId::new().as_string();
    let child = ThreadId::new().as_string();
    let path = AgentPath::parse("/root/w").expect("path");
    let mail = Mail {
        id: MailId::new(),
        author: AgentPath::root(),
        recipient: path.clone(),
        kind: MailKind::Spawn,
        trigger_turn: true,
        content: "do it".to_string(),
        created_at: Timestamp::from_millis(5),
        from_user: false,
    };
    let history = AgentHistory {
        items: vec![
            message("user", &mail.model_text()),
            message("assistant", "done"),
        ],
        responses: 1,
        closed: false,
        turns: vec![TurnMark {
            number: 1,
            start: 0,
            end: 2,
            mails: vec![(0, mail.clone())],
            outcome: Some(TurnOutcome::Completed {
                last_message: Some("done".to_string()),
            }),
            started_ms: 10,
            ended_ms: 20,
        }],
        meta: None,
        cwd: None,
    };
    let row = AgentRow {
        id: child,
        path,
        parent_id: Some(session.clone()),
        depth: 1,
        nickname: Some("Ada".to_string()),
        role: "default".to_string(),
        model: None,
        status: AgentStatus::Completed(Some("done".to_string())),
        edge: Some("open".to_string()),
        resident: false,
        unread: 0,
        pending_approvals: 0,
    };
    let lines = items(&session, &row, &history, "/w", Timestamp::from_millis(99));
    let kinds: Vec<&str> = lines
        .iter()
        .map(|(_, item)| match item {
            RolloutItem::SessionMeta(_) => "meta",
            RolloutItem::TurnStarted(_) => "started",
            RolloutItem::MailConsumed(_) => "mail",
            RolloutItem::ResponseItem(_) => "item",
            RolloutItem::TurnCompleted(_) => "completed",
            RolloutItem::Status(_) => "status",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["meta", "started", "mail", "item", "completed", "status"]
    );
    assert_eq!(lines[0].0, Timestamp::from_millis(10));
    match &lines[0].1 {
        RolloutItem::SessionMeta(meta) => {
            assert_eq!(meta.cwd, "/w");
            assert_eq!(meta.model, "scripted");
            assert_eq!(meta.nickname.as_deref(), Some("Ada"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(lines[4].0, Timestamp::from_millis(20));
}
