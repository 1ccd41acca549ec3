//! The later half of the session's decisions as data: residency, approvals, waits cut short
//! and the turns a resume continues.

use arbor_protocol::{AgentPath, AgentStatus, MailKind, ThreadId, Usage};

use super::*;

#[test]
fn quiescence_waits_for_the_turn_that_waits_for_an_approval() {
    let mut s = Sim::new(config());
    s.spawn("/root/a", false);
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    s.start("/root/a");
    assert_eq!(
        s.feed(Input::ApprovalOpened {
            agent: s.id("/root/a"),
        }),
        ["status /root/a awaiting_approval"]
    );
    assert!(s.feed(Input::Quiescent { ticket: 7 }).is_empty());
    assert!(!s.core.quiescent());
    assert_eq!(
        s.feed(Input::ApprovalClosed {
            agent: s.id("/root/a"),
        }),
        ["status /root/a running"]
    );
    let end = s.end("/root/a", "a done");
    // The root is woken with the result; only when its turn ends too is the tree quiet.
    assert!(!end.contains(&"reply quiet".to_string()), "{end:?}");
    let root_end = s.run("/root", "all done");
    assert_eq!(root_end.last().map(String::as_str), Some("reply quiet"));
}

#[test]
fn mail_to_a_running_turn_is_handed_over_and_mail_it_left_is_owed_a_turn() {
    let mut s = Sim::new(config());
    s.spawn("/root/a", false);
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    s.start("/root/a");
    assert_eq!(
        s.mail("/root", "/root/a", MailKind::Followup, "more"),
        ["hand /root/a [more]"]
    );
    // The turn answered without taking it: the follow-up gets the next turn, which the
    // runtime already holds the mail for.
    let end = s.end("/root/a", "a done");
    assert!(end.contains(&"go /root/a []".to_string()), "{end:?}");
    assert!(
        !end.contains(&"status /root/a completed".to_string()),
        "{end:?}"
    );
}

#[test]
fn closing_stops_the_subtree_and_a_queued_turn_below_it() {
    let mut s = Sim::new(CoreConfig {
        max_running: 1,
        ..config()
    });
    s.spawn("/root/a", false);
    s.spawn("/root/a/x", false);
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    s.mail("/root/a", "/root/a/x", MailKind::Spawn, "task x");
    assert_eq!(s.status("/root/a/x"), AgentStatus::Queued);
    let closed = s.feed(Input::Close {
        target: s.id("/root/a"),
    });
    assert_eq!(
        closed,
        [
            "cancel /root/a closed",
            "status /root/a closed",
            "close /root/a"
        ]
    );
    assert!(!s.core.entry(s.id("/root/a/x")).expect("x").scheduled());
    // a's cut turn ends: it stays closed, and nothing below it starts.
    let end = s.end("/root/a", "interrupted");
    assert!(!end.iter().any(|e| e.contains("go /root/a")), "{end:?}");
    assert_eq!(s.status("/root/a"), AgentStatus::Closed);
    assert!(
        s.mail("/root", "/root/a/x", MailKind::Followup, "go")
            .is_empty()
    );
}

#[test]
fn a_spent_budget_starts_no_turn_and_names_who_was_kept() {
    let mut s = Sim::new(CoreConfig {
        budget_tokens: Some(100),
        ..config()
    });
    s.spawn("/root/a", false);
    let used = Usage {
        input_tokens: 90,
        cached_input_tokens: 0,
        output_tokens: 20,
        compaction_tokens: 0,
        cache_write_tokens: 0,
    };
    assert_eq!(
        s.feed(Input::Usage {
            agent: s.id("/root"),
            usage: used,
        }),
        ["emit usage", "emit budget.exhausted", "budget spent"]
    );
    assert!(
        s.mail("/root", "/root/a", MailKind::Spawn, "task")
            .is_empty()
    );
    let report = s.core.handle(Input::Report { ticket: 1 });
    let Some(Effect::Reply {
        answer: Answer::Report { usage, kept, .. },
        ..
    }) = report.first()
    else {
        panic!("{report:?}");
    };
    assert_eq!(usage.output_tokens, 20);
    assert_eq!(kept, &[AgentPath::parse("/root/a").expect("path")]);
}

#[test]
fn a_wait_for_any_ends_on_mail_from_a_target_and_restores_the_callers_status() {
    let mut s = Sim::new(config());
    s.spawn("/root/a", false);
    s.feed(Input::Prompt {
        agent: s.id("/root"),
        items: Vec::new(),
    });
    s.feed(Input::Started {
        agent: s.id("/root"),
    });
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    assert_eq!(
        s.feed(Input::Wait {
            ticket: 5,
            caller: s.id("/root"),
            targets: None,
            mode: WaitMode::Any,
        }),
        ["status /root waiting"]
    );
    let mailed = s.mail("/root/a", "/root", MailKind::Message, "hello");
    assert_eq!(
        mailed,
        [
            "hand /root [hello]",
            "status /root running",
            "reply wait mail from /root/a",
        ]
    );
    assert!(
        s.feed(Input::WaitEnded { ticket: 5 }).is_empty(),
        "already answered"
    );
}

#[test]
fn a_failed_revival_ends_the_granted_turn_as_errored_and_frees_its_slots() {
    let mut s = Sim::new(CoreConfig {
        max_running: 1,
        ..config()
    });
    s.feed(Input::Register(Registration {
        id: ThreadId::new(),
        path: AgentPath::parse("/root/old").expect("path"),
        parent: Some(s.id("/root")),
        internal: false,
        status: AgentStatus::Completed(None),
        fresh: false,
        unread: Vec::new(),
        last_message: None,
        ticket: None,
    }));
    let old = s.core.snapshots()[1].id;
    s.ids.insert("/root/old".into(), old);
    s.paths.insert(old, "/root/old".into());
    s.spawn("/root/b", false);
    assert_eq!(
        s.mail("/root", "/root/old", MailKind::Followup, "again"),
        ["status /root/old running", "revive /root/old"]
    );
    assert_eq!(
        s.mail("/root", "/root/b", MailKind::Spawn, "task b"),
        ["status /root/b queued"]
    );
    let failed = s.feed(Input::Revived {
        agent: old,
        result: Err("revival of /root/old failed: gone".into()),
    });
    assert_eq!(
        failed,
        [
            "status /root/b running",
            "go /root/b [task b]",
            "status /root/old errored",
        ]
    );
}

#[test]
fn a_wait_for_all_ends_only_when_every_target_is_idle_at_once() {
    let mut s = Sim::new(config());
    for child in ["/root/a", "/root/b", "/root/c"] {
        s.spawn(child, false);
    }
    s.feed(Input::Prompt {
        agent: s.id("/root"),
        items: Vec::new(),
    });
    s.feed(Input::Started {
        agent: s.id("/root"),
    });
    for child in ["/root/a", "/root/b", "/root/c"] {
        s.mail("/root", child, MailKind::Spawn, "task");
    }
    s.feed(Input::Wait {
        ticket: 7,
        caller: s.id("/root"),
        targets: None,
        mode: WaitMode::All,
    });
    let replied = |out: &[String]| out.iter().any(|e| e.starts_with("reply wait"));
    assert!(!replied(&s.run("/root/a", "a done")), "b and c are busy");
    assert!(!replied(&s.run("/root/b", "b done")), "c is busy");
    // a is woken again before c ends: the wait must see it busy, wherever it last looked.
    s.mail("/root", "/root/a", MailKind::Followup, "again");
    assert!(!replied(&s.run("/root/c", "c done")), "a is busy again");
    let out = s.run("/root/a", "a done again");
    assert!(
        out.iter().any(|e| e.starts_with("reply wait all idle")),
        "{out:?}"
    );
}

#[test]
fn a_wait_goes_on_while_a_target_waits_for_an_approval_and_its_reply_names_it() {
    let mut s = Sim::new(config());
    for child in ["/root/a", "/root/b"] {
        s.spawn(child, false);
    }
    s.feed(Input::Prompt {
        agent: s.id("/root"),
        items: Vec::new(),
    });
    s.feed(Input::Started {
        agent: s.id("/root"),
    });
    for child in ["/root/a", "/root/b"] {
        s.mail("/root", child, MailKind::Spawn, "task");
        s.start(child);
    }
    s.feed(Input::Wait {
        ticket: 7,
        caller: s.id("/root"),
        targets: None,
        mode: WaitMode::All,
    });
    // a asks the user: the root's wait does not end, whoever answers.
    assert_eq!(
        s.feed(Input::ApprovalOpened {
            agent: s.id("/root/a"),
        }),
        ["status /root/a awaiting_approval"]
    );
    let replied = |out: &[String]| out.iter().any(|e| e.starts_with("reply wait"));
    assert!(!replied(&s.end("/root/b", "b done")), "a still waits");
    assert_eq!(
        s.feed(Input::ApprovalClosed {
            agent: s.id("/root/a"),
        }),
        ["status /root/a running"]
    );
    let out = s.end("/root/a", "a done");
    let reply = out.iter().find(|e| e.starts_with("reply wait"));
    assert_eq!(
        reply.map(String::as_str),
        Some("reply wait all idle: /root/a completed, /root/b completed"),
        "{out:?}"
    );

    // A wait for any over a target still asking ends on another's mail, or at its deadline,
    // and says who is held by an approval.
    s.spawn("/root/c", false);
    s.mail("/root", "/root/c", MailKind::Spawn, "task c");
    s.start("/root/c");
    s.feed(Input::ApprovalOpened {
        agent: s.id("/root/c"),
    });
    s.feed(Input::Wait {
        ticket: 8,
        caller: s.id("/root"),
        targets: Some(vec![s.id("/root/c")]),
        mode: WaitMode::Any,
    });
    assert_eq!(
        s.feed(Input::WaitEnded { ticket: 8 }),
        [
            "status /root running",
            "reply wait timed out (awaiting approval: /root/c)"
        ]
    );
}

#[test]
fn a_wait_cut_short_with_its_turn_leaves_the_status_the_end_gave() {
    let mut s = Sim::new(config());
    s.spawn("/root/a", false);
    s.feed(Input::Prompt {
        agent: s.id("/root"),
        items: Vec::new(),
    });
    s.feed(Input::Started {
        agent: s.id("/root"),
    });
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    s.start("/root/a");
    s.feed(Input::Wait {
        ticket: 9,
        caller: s.id("/root"),
        targets: None,
        mode: WaitMode::All,
    });
    // Ctrl-C: the root's turn ends first (its wait call is cancelled), then its child's.
    let interrupted = AgentStatus::Interrupted("user_interrupt".into());
    s.feed(Input::TurnEnded {
        agent: s.id("/root"),
        end: TurnEnd {
            status: interrupted.clone(),
            completed: None,
            result: None,
            started: true,
        },
    });
    let out = s.feed(Input::TurnEnded {
        agent: s.id("/root/a"),
        end: TurnEnd {
            status: interrupted.clone(),
            completed: None,
            result: None,
            started: true,
        },
    });
    assert!(
        !out.contains(&"status /root running".to_string()),
        "a stale wait set the root running again: {out:?}"
    );
    assert_eq!(s.status("/root"), interrupted);
}

impl Sim {
    /// Registers an agent a resume found stopped with `status` (no runtime).
    fn restore(&mut self, path: &str, status: AgentStatus, internal: bool) {
        let id = ThreadId::new();
        let parsed = AgentPath::parse(path).expect("path");
        let parent = parsed.parent().map(|p| self.id(p.as_str()));
        self.ids.insert(path.to_string(), id);
        self.paths.insert(id, path.to_string());
        self.feed(Input::Register(Registration {
            id,
            path: parsed,
            parent,
            internal,
            status,
            fresh: false,
            unread: Vec::new(),
            last_message: None,
            ticket: None,
        }));
    }
}

#[test]
fn continue_starts_every_interrupted_turn_at_once_and_only_those() {
    let interrupted = || AgentStatus::Interrupted("user_interrupt".into());
    let mut s = Sim::new(config());
    s.restore("/root/a", interrupted(), false);
    s.restore(
        "/root/b",
        AgentStatus::Completed(Some("b done".into())),
        false,
    );
    s.restore("/root/c", interrupted(), false);
    s.restore("/root/guardian", interrupted(), true);
    s.feed(Input::Close {
        target: s.id("/root/c"),
    });
    let out = s.feed(Input::Continue {
        ticket: 9,
        skip_root: true,
    });
    assert_eq!(
        out,
        [
            "status /root/a running",
            "revive /root/a",
            "reply continued /root/a"
        ],
        "the root is skipped, b finished, c is closed, the guardian is internal"
    );
    // Before any of them runs, a wait for all sees the continued one busy.
    s.feed(Input::Wait {
        ticket: 10,
        caller: s.id("/root"),
        targets: None,
        mode: WaitMode::All,
    });
    let revived = s.feed(Input::Revived {
        agent: s.id("/root/a"),
        result: Ok(Revival::default()),
    });
    assert!(
        revived
            .iter()
            .any(|e| e.starts_with("go /root/a []") && e.ends_with("+input")),
        "its turn takes the note that it continues: {revived:?}"
    );
    assert!(
        !revived.iter().any(|e| e.starts_with("reply wait")),
        "{revived:?}"
    );
}
