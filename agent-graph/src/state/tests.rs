//! The state a sequence of log lines leaves, checked as data, and its round trip through the
//! store.

use arbor_protocol::{
    AbortKind, AgentClosed, AgentPath, AgentStatus, ApprovalDecided, ApprovalRequested, Mail,
    MailConsumed, MailKind, ROLLOUT_FORMAT_VERSION, RolloutItem, RolloutLine, SessionMeta,
    StatusChanged, ThreadId, Timestamp, TurnAborted, TurnCompleted, TurnStarted, Usage, UserAnswer,
    UserMail, UserTarget,
};

use super::*;
use crate::{ApprovalOutcome, Store};

/// Lines of a small session: ids are crafted so they sort like their numbers.
struct Script {
    lines: Vec<RolloutLine>,
}

fn tid(n: u64) -> ThreadId {
    ThreadId::parse(&format!("00000000-0000-7000-8000-{n:012}")).expect("id")
}

fn path(text: &str) -> AgentPath {
    AgentPath::parse(text).expect("path")
}

impl Script {
    fn new() -> Self {
        Self { lines: Vec::new() }
    }

    fn line(&mut self, thread: u64, item: RolloutItem) -> &mut Self {
        let seq = self.lines.len() as u64 + 1;
        self.lines.push(RolloutLine {
            seq: Some(seq),
            thread: Some(tid(thread)),
            timestamp: Timestamp::from_millis(1_000 * seq as i64),
            item,
        });
        self
    }

    fn spawn(&mut self, n: u64, parent: Option<u64>, at: &str) -> &mut Self {
        let p = path(at);
        let meta = SessionMeta {
            thread_id: tid(n),
            session_id: tid(1),
            parent_id: parent.map(tid),
            depth: p.depth() as u32,
            path: p,
            nickname: None,
            role: "default".into(),
            model: "m".into(),
            provider: None,
            effort: None,
            sandbox: "read-only".into(),
            cwd: "/w".into(),
            format_version: ROLLOUT_FORMAT_VERSION,
            repository: None,
            handle: None,
        };
        self.line(n, RolloutItem::SessionMeta(Box::new(meta)))
    }

    fn mail(&mut self, from: u64, to: &str, kind: MailKind, text: &str) -> Mail {
        let author = self
            .state()
            .thread(tid(from))
            .expect("author")
            .record
            .path()
            .clone();
        let mail = Mail::new(author, path(to), kind, text.into());
        self.line(from, RolloutItem::MailSent(Box::new(mail.clone())));
        mail
    }

    fn state(&self) -> SessionState {
        let mut state = SessionState::default();
        for (n, line) in self.lines.iter().enumerate() {
            state.apply(line, n as u64 * 10 + 10);
        }
        state
    }
}

/// A compact dump of a state: one line per agent, then the unread mail.
fn dump(state: &SessionState) -> String {
    let mut out = String::new();
    for row in state.threads.values() {
        out.push_str(&format!(
            "{} {} edge={} open={} end={} seq={}\n",
            row.record.path(),
            row.record.status,
            row.edge.map_or("-", EdgeStatus::as_str),
            row.turn_open,
            row.last_end.as_ref().map_or("-".into(), |s| s.to_string()),
            row.last_seq,
        ));
    }
    for row in state.mail.values() {
        out.push_str(&format!(
            "mail {} -> {} ({})\n",
            row.mail.kind.as_str(),
            state
                .thread(row.recipient_id)
                .expect("recipient")
                .record
                .path(),
            row.mail.content
        ));
    }
    out
}

fn check(script: &Script, expect: &str) {
    let got = dump(&script.state());
    assert_eq!(got.trim(), expect.trim(), "\n{got}");
}

#[test]
fn spawn_turns_and_mail() {
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    s.mail(1, "/root/a", MailKind::Spawn, "go");
    s.line(2, RolloutItem::TurnStarted(TurnStarted { turn: 1 }));
    s.line(
        2,
        RolloutItem::Status(StatusChanged {
            status: AgentStatus::Running,
        }),
    );
    check(
        &s,
        "/root pending_init edge=- open=false end=- seq=3\n\
         /root/a running edge=open open=true end=- seq=5\n\
         mail spawn -> /root/a (go)",
    );
    let spawn = s.state().mail.values().next().expect("mail").mail.clone();
    s.line(
        2,
        RolloutItem::MailConsumed(Box::new(MailConsumed { mail: spawn })),
    );
    s.line(
        2,
        RolloutItem::TurnCompleted(TurnCompleted {
            turn: 1,
            last_message: Some("done".into()),
        }),
    );
    s.mail(2, "/root", MailKind::Result, "done");
    check(
        &s,
        "/root pending_init edge=- open=false end=- seq=3\n\
         /root/a completed: done edge=open open=false end=completed: done seq=8\n\
         mail result -> /root (done)",
    );
}

#[test]
fn a_started_turn_reads_running_before_the_session_status_line_lands() {
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    s.mail(1, "/root/a", MailKind::Spawn, "go");
    // The turn's own first lines reach the log before the session task's status line.
    s.line(2, RolloutItem::TurnStarted(TurnStarted { turn: 1 }));
    check(
        &s,
        "/root pending_init edge=- open=false end=- seq=3\n\
         /root/a running edge=open open=true end=- seq=4\n\
         mail spawn -> /root/a (go)",
    );
}

#[test]
fn a_turn_cut_by_a_crash_reports_process_exit_only_without_a_driver() {
    let mut s = Script::new();
    s.spawn(1, None, "/root");
    s.line(1, RolloutItem::TurnStarted(TurnStarted { turn: 1 }));
    s.line(
        1,
        RolloutItem::Status(StatusChanged {
            status: AgentStatus::Running,
        }),
    );
    let state = s.state();
    let root = state.root().expect("root");
    assert_eq!(root.reported_status(true), AgentStatus::Running);
    assert_eq!(
        root.reported_status(false),
        AgentStatus::Interrupted(PROCESS_EXIT.into())
    );
    s.line(
        1,
        RolloutItem::TurnAborted(TurnAborted {
            turn: 1,
            kind: AbortKind::Errored,
            reason: "x".into(),
        }),
    );
    s.line(
        1,
        RolloutItem::Status(StatusChanged {
            status: AgentStatus::Queued,
        }),
    );
    let state = s.state();
    // Queued when the driver died: the last turn's end is what stands.
    assert_eq!(
        state.root().expect("root").reported_status(false),
        AgentStatus::Errored("x".into())
    );
}

#[test]
fn a_close_hides_the_branch_and_a_reused_path_reaches_the_new_agent() {
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    s.line(
        1,
        RolloutItem::AgentClosed(AgentClosed {
            target_id: tid(2),
            target: path("/root/a"),
            previous_status: AgentStatus::PendingInit,
        }),
    );
    // A late status line of the closed agent does not reopen it.
    s.line(
        2,
        RolloutItem::Status(StatusChanged {
            status: AgentStatus::Running,
        }),
    );
    s.spawn(3, Some(1), "/root/a");
    s.mail(1, "/root/a", MailKind::Message, "to the new one");
    check(
        &s,
        "/root pending_init edge=- open=false end=- seq=6\n\
         /root/a closed edge=closed open=false end=- seq=4\n\
         /root/a pending_init edge=open open=false end=- seq=5\n\
         mail message -> /root/a (to the new one)",
    );
    let state = s.state();
    assert_eq!(
        state.at_path(&path("/root/a")).expect("open").record.id(),
        tid(3)
    );
    assert!(state.behind_closed(state.thread(tid(2)).expect("closed")));
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    s.line(2, RolloutItem::UserClose(UserTarget { target_id: tid(2) }));
    assert_eq!(
        s.state().thread(tid(2)).expect("a").edge,
        Some(EdgeStatus::Closed)
    );
}

#[test]
fn the_first_decision_stands_and_answers_wait_for_a_driver() {
    let mut s = Script::new();
    s.spawn(1, None, "/root");
    let asked = |id: &str| {
        RolloutItem::ApprovalRequested(ApprovalRequested {
            request_id: id.into(),
            action: serde_json::json!({"command": "x"}),
            justification: None,
        })
    };
    let decided = |id: &str, outcome: &str, by: &str| {
        RolloutItem::ApprovalDecided(Box::new(ApprovalDecided {
            request_id: id.into(),
            outcome: outcome.into(),
            decided_by: Some(by.into()),
            risk_level: None,
            rationale: None,
            tokens: None,
        }))
    };
    s.line(1, asked("r1"));
    s.line(
        1,
        RolloutItem::UserAnswer(UserAnswer {
            request_id: "r1".into(),
            approve: true,
            for_session: false,
        }),
    );
    let state = s.state();
    assert_eq!(state.answers.get("r1"), Some(&true), "waits for a driver");
    assert_eq!(state.pending_approvals(tid(1)), 1);
    s.line(1, decided("r1", "deny", "guardian"));
    s.line(1, decided("r1", "allow", "user"));
    let state = s.state();
    let record = state.approval("r1").expect("r1");
    assert_eq!(
        record.outcome,
        ApprovalOutcome::Deny,
        "the first decision stands"
    );
    assert!(state.answers.is_empty());
    assert_eq!(state.pending_approvals(tid(1)), 0);
}

#[test]
fn usage_adds_up_and_user_mail_reaches_its_recipient() {
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    for n in 1..=3 {
        s.line(
            2,
            RolloutItem::Usage(
                Usage {
                    input_tokens: n,
                    cached_input_tokens: 0,
                    output_tokens: 10,
                    compaction_tokens: 0,
                    cache_write_tokens: 0,
                }
                .into(),
            ),
        );
    }
    let mail = Mail::new(
        path("/root"),
        path("/root/a"),
        MailKind::Followup,
        "hi".into(),
    );
    s.line(
        2,
        RolloutItem::UserMail(Box::new(UserMail {
            recipient_id: tid(2),
            mail,
        })),
    );
    let state = s.state();
    let a = state.thread(tid(2)).expect("a");
    assert_eq!((a.usage.input_tokens, a.usage.output_tokens), (6, 30));
    assert_eq!(state.unread(tid(2)).count(), 1);
}

#[test]
fn lines_already_applied_change_nothing() {
    let mut s = Script::new();
    s.spawn(1, None, "/root");
    s.line(1, RolloutItem::TurnStarted(TurnStarted { turn: 1 }));
    let mut state = s.state();
    let before = state.clone();
    state.apply(&s.lines[1], 20);
    assert_eq!(dump(&state), dump(&before));
    assert_eq!(state.applied, before.applied);
}

#[test]
fn a_committed_state_loads_back_equal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    s.mail(1, "/root/a", MailKind::Spawn, "go");
    s.line(
        2,
        RolloutItem::ApprovalRequested(ApprovalRequested {
            request_id: "r1".into(),
            action: serde_json::json!({"command": "x"}),
            justification: Some("why".into()),
        }),
    );
    s.line(
        2,
        RolloutItem::Usage(
            Usage {
                input_tokens: 5,
                cached_input_tokens: 1,
                output_tokens: 7,
                compaction_tokens: 0,
                cache_write_tokens: 0,
            }
            .into(),
        ),
    );
    let mut state = s.state();
    store.commit(&mut state).expect("commit");
    assert!(!state.has_changes());
    let loaded = store.load_session(tid(1)).expect("load");
    assert_eq!(dump(&loaded), dump(&state));
    assert_eq!(loaded.applied, state.applied);
    assert_eq!(loaded.approvals, state.approvals);
    assert_eq!(
        loaded.thread(tid(2)).expect("a").usage,
        state.thread(tid(2)).expect("a").usage
    );
    // Consumed between two commits, and after a commit.
    let mut s2 = Script {
        lines: s.lines.clone(),
    };
    let spawn = state.mail.values().next().expect("mail").mail.clone();
    s2.line(
        2,
        RolloutItem::MailConsumed(Box::new(MailConsumed { mail: spawn })),
    );
    let mut later = loaded;
    later.apply(s2.lines.last().expect("line"), 999);
    store.commit(&mut later).expect("commit");
    let reloaded = store.load_session(tid(1)).expect("load");
    assert_eq!(reloaded.unread(tid(2)).count(), 0);
    assert_eq!(reloaded.applied.offset, 999);
}

#[test]
fn worktree_facts_make_a_record_that_survives_the_store() {
    use arbor_protocol::{WorktreeCreated, WorktreeFact, WorktreeMerged};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let mut s = Script::new();
    s.spawn(1, None, "/root").spawn(2, Some(1), "/root/a");
    let created = WorktreeCreated {
        path: "worktrees/s/a".into(),
        branch: "arbor/s/a".into(),
        base: "b1".into(),
        source: "/w".into(),
        prefix: String::new(),
    };
    s.line(
        2,
        RolloutItem::Worktree(Box::new(WorktreeFact::Created(created))),
    );
    // A fact about an agent with no worktree changes nothing.
    s.line(1, RolloutItem::Worktree(Box::new(WorktreeFact::Removed)));
    let mut state = s.state();
    assert_eq!(state.worktrees.len(), 1);
    store.commit(&mut state).expect("commit");
    let merged = WorktreeMerged {
        commit: "c1".into(),
        into: "/w".into(),
        files: vec!["a.txt".into()],
    };
    s.line(
        2,
        RolloutItem::Worktree(Box::new(WorktreeFact::Merged(merged))),
    );
    let mut later = store.load_session(tid(1)).expect("load");
    assert_eq!(later.worktrees, state.worktrees);
    later.apply(s.lines.last().expect("line"), 500);
    let record = later.worktree(tid(2)).expect("record");
    assert_eq!(
        (
            record.merged.as_deref(),
            record.removed,
            record.branch.as_str()
        ),
        (Some("c1"), false, "arbor/s/a")
    );
    s.line(2, RolloutItem::Worktree(Box::new(WorktreeFact::Removed)));
    later.apply(s.lines.last().expect("line"), 600);
    store.commit(&mut later).expect("commit");
    let reloaded = store.load_session(tid(1)).expect("load");
    assert_eq!(reloaded.worktrees, later.worktrees);
    assert!(reloaded.worktree(tid(2)).expect("record").removed);
    assert_eq!(
        reloaded.worktrees,
        s.state().worktrees,
        "rebuilt from the log alike"
    );
}
