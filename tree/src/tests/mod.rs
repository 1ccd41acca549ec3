//! The session's decisions as data: inputs in, effects out, written as the lines an operator
//! would read (`go /root/a [task]`, `status /root/b queued`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arbor_protocol::{AgentPath, AgentStatus, Mail, MailKind, ThreadId};

use super::*;

struct Sim {
    core: Core,
    ids: HashMap<String, ThreadId>,
    paths: HashMap<ThreadId, String>,
    /// Agents the runtime says have live processes.
    busy_processes: Arc<Mutex<Vec<ThreadId>>>,
    tickets: Ticket,
    /// The mail each agent's last `go` carried (its turn takes it into its first request).
    granted: HashMap<ThreadId, Vec<arbor_protocol::MailId>>,
}

fn config() -> CoreConfig {
    CoreConfig {
        max_running: 8,
        max_resident: 8,
        wake_once: true,
        root_driven: true,
        budget_tokens: None,
    }
}

impl Sim {
    fn new(config: CoreConfig) -> Self {
        let busy_processes: Arc<Mutex<Vec<ThreadId>>> = Arc::default();
        let probe = Arc::clone(&busy_processes);
        let core = Core::new(
            config,
            Box::new(move |id| probe.lock().expect("probe").contains(&id)),
        );
        let mut sim = Self {
            core,
            ids: HashMap::new(),
            paths: HashMap::new(),
            busy_processes,
            tickets: 0,
            granted: HashMap::new(),
        };
        sim.spawn("/root", false);
        sim
    }

    fn id(&self, path: &str) -> ThreadId {
        self.ids[path]
    }

    /// Registers a fresh agent at `path` (its parent is the path's parent) and returns what
    /// that did, rendered.
    fn spawn(&mut self, path: &str, internal: bool) -> Vec<String> {
        let id = ThreadId::new();
        self.ids.insert(path.to_string(), id);
        self.paths.insert(id, path.to_string());
        let parsed = AgentPath::parse(path).expect("path");
        let parent = parsed.parent().map(|p| self.id(p.as_str()));
        let ticket = self.ticket();
        self.feed(Input::Register(Registration {
            id,
            path: parsed,
            parent,
            internal,
            status: AgentStatus::PendingInit,
            fresh: true,
            unread: Vec::new(),
            last_message: None,
            ticket: Some(ticket),
        }))
    }

    /// The agents a snapshot of `scope` lists.
    fn listed(&mut self, scope: Scope) -> Vec<AgentSnapshot> {
        let ticket = self.ticket();
        match self
            .core
            .handle(Input::Snapshot { ticket, scope })
            .as_slice()
        {
            [
                Effect::Reply {
                    answer: Answer::Snapshot(listed),
                    ..
                },
            ] => listed.clone(),
            other => panic!("no snapshot: {other:?}"),
        }
    }

    fn ticket(&mut self) -> Ticket {
        self.tickets += 1;
        self.tickets
    }

    fn feed(&mut self, input: Input) -> Vec<String> {
        let effects = self.core.handle(input);
        for effect in &effects {
            if let Effect::Go { agent, mails, .. } = effect {
                self.granted
                    .insert(*agent, mails.iter().map(|mail| mail.id).collect());
            }
        }
        effects.iter().map(|effect| self.render(effect)).collect()
    }

    fn mail(&mut self, from: &str, to: &str, kind: MailKind, text: &str) -> Vec<String> {
        let mail = Mail::new(
            AgentPath::parse(from).expect("path"),
            AgentPath::parse(to).expect("path"),
            kind,
            text.to_string(),
        );
        self.feed(Input::Mail {
            recipient: self.id(to),
            mail,
        })
    }

    /// The task of `path` starts its granted turn, takes the mail it was granted with, and
    /// completes it, its result mail to the parent saying `result`.
    fn run(&mut self, path: &str, result: &str) -> Vec<String> {
        let mut out = self.start(path);
        out.extend(self.end(path, result));
        out
    }

    /// The task of `path` starts its granted turn and takes the mail it was granted with.
    fn start(&mut self, path: &str) -> Vec<String> {
        let agent = self.id(path);
        let mut out = self.feed(Input::Started { agent });
        let ids = self.granted.remove(&agent).unwrap_or_default();
        out.extend(self.feed(Input::Consumed { agent, ids }));
        out
    }

    fn end(&mut self, path: &str, result: &str) -> Vec<String> {
        let parsed = AgentPath::parse(path).expect("path");
        let mail = parsed
            .parent()
            .map(|parent| Mail::new(parsed.clone(), parent, MailKind::Result, result.to_string()));
        self.feed(Input::TurnEnded {
            agent: self.id(path),
            end: TurnEnd {
                status: AgentStatus::Completed(Some(result.to_string())),
                completed: Some(Some(result.to_string())),
                result: mail,
                started: true,
            },
        })
    }

    fn status(&self, path: &str) -> AgentStatus {
        self.core
            .entry(self.id(path))
            .expect("known")
            .status
            .clone()
    }

    fn render(&self, effect: &Effect) -> String {
        let p = |id: &ThreadId| self.paths.get(id).cloned().unwrap_or_default();
        let texts = |mails: &[Mail]| {
            mails
                .iter()
                .map(|m| m.content.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match effect {
            Effect::Install { agent } => format!("install {}", p(agent)),
            Effect::Revive { agent } => format!("revive {}", p(agent)),
            Effect::Evict { agent } => format!("evict {}", p(agent)),
            Effect::Go {
                agent,
                input,
                mails,
            } => {
                let extra = if input.is_empty() { "" } else { " +input" };
                format!("go {} [{}]{extra}", p(agent), texts(mails))
            }
            Effect::Hand { agent, mails } => format!("hand {} [{}]", p(agent), texts(mails)),
            Effect::Cancel { agent, reason } => format!("cancel {} {reason}", p(agent)),
            Effect::Close { agent } => format!("close {}", p(agent)),
            Effect::StopAll => "stop all".to_string(),
            Effect::Status { agent, status } => format!("status {} {}", p(agent), status.name()),
            Effect::Emit(event) => format!("emit {}", event.type_name()),
            Effect::BudgetSpent => "budget spent".to_string(),
            Effect::Reply { answer, .. } => match answer {
                Answer::Registered => "reply registered".to_string(),
                Answer::Interrupted(status) => format!("reply interrupted {}", status.name()),
                Answer::Wait(reply) => {
                    let mut text = match &reply.done {
                        None => "reply wait timed out".to_string(),
                        Some(WaitDone::Mail(from)) => format!(
                            "reply wait mail from {}",
                            from.iter()
                                .map(AgentPath::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        Some(WaitDone::AllIdle(all)) => format!(
                            "reply wait all idle: {}",
                            all.iter()
                                .map(|(path, status)| format!("{path} {}", status.name()))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        Some(done) => format!("reply wait {done:?}"),
                    };
                    if !reply.awaiting_approval.is_empty() {
                        text.push_str(&format!(
                            " (awaiting approval: {})",
                            reply
                                .awaiting_approval
                                .iter()
                                .map(AgentPath::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    text
                }
                Answer::Idle(snapshot) => format!("reply idle {}", snapshot.status.name()),
                Answer::Quiet => "reply quiet".to_string(),
                Answer::Snapshot(all) if all.len() > 3 => {
                    format!("reply snapshot of {}", all.len())
                }
                Answer::Snapshot(all) => format!(
                    "reply snapshot {}",
                    all.iter()
                        .map(|agent| agent.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Answer::Continued(paths) => format!(
                    "reply continued {}",
                    paths
                        .iter()
                        .map(AgentPath::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Answer::Synced => "reply synced".to_string(),
                Answer::Report { .. } => "reply report".to_string(),
            },
        }
    }
}

#[test]
fn a_snapshot_copies_only_the_agents_of_its_scope() {
    let mut s = Sim::new(config());
    for path in ["/root/a", "/root/a/x", "/root/b", "/root/ab"] {
        s.spawn(path, false);
    }
    let within = AgentPath::parse("/root/a").expect("path");
    assert_eq!(
        s.feed(Input::Snapshot {
            ticket: 1,
            scope: Scope::Within(within.clone()),
        }),
        ["reply snapshot /root/a, /root/a/x"]
    );
    // A grandchild, and a path taken again by a new agent: the subtree, in creation order.
    s.spawn("/root/a/x/y", false);
    s.spawn("/root/a/x", false);
    let listed = s.listed(Scope::Within(within));
    let paths: Vec<_> = listed.iter().map(|agent| agent.path.as_str()).collect();
    assert_eq!(paths, ["/root/a", "/root/a/x", "/root/a/x/y", "/root/a/x"]);
    assert!(listed.windows(2).all(|pair| pair[0].id < pair[1].id));
    s.spawn("/root/b", false);
    s.spawn("/root/b", false);
    let b = s.id("/root/b");
    assert_eq!(
        s.feed(Input::Snapshot {
            ticket: 2,
            scope: Scope::One(b),
        }),
        ["reply snapshot /root/b"]
    );
    assert_eq!(
        s.feed(Input::Snapshot {
            ticket: 3,
            scope: Scope::All,
        }),
        ["reply snapshot of 9"]
    );
    assert_eq!(s.listed(Scope::Within(AgentPath::root())).len(), 9);
}

#[test]
fn turns_over_the_running_cap_queue_in_order_and_start_as_slots_free() {
    let mut s = Sim::new(CoreConfig {
        max_running: 2,
        ..config()
    });
    for name in ["a", "b", "c"] {
        s.spawn(&format!("/root/{name}"), false);
    }
    assert_eq!(
        s.mail("/root", "/root/a", MailKind::Spawn, "task a"),
        ["go /root/a [task a]"]
    );
    assert_eq!(
        s.mail("/root", "/root/b", MailKind::Spawn, "task b"),
        ["go /root/b [task b]"]
    );
    assert_eq!(
        s.mail("/root", "/root/c", MailKind::Spawn, "task c"),
        ["status /root/c queued"]
    );
    let snapshot = s.core.snapshots();
    let c = snapshot.iter().find(|a| a.path.as_str() == "/root/c");
    assert_eq!(c.and_then(|c| c.queue_position), Some(1));
    // a ends: its result reaches the root (woken: it is idle), then c takes the slot.
    assert_eq!(
        s.run("/root/a", "a done"),
        [
            "status /root/a running",
            "status /root/a completed",
            "status /root/c running",
            "go /root/c [task c]",
        ]
    );
    assert_eq!(
        s.core.entry(s.id("/root")).expect("root").mailbox.unread(),
        1
    );
}

#[test]
fn wake_once_waits_for_every_child_but_internal_ones() {
    let mut s = Sim::new(config());
    s.spawn("/root/a", false);
    s.spawn("/root/b", false);
    s.spawn("/root/guardian", true);
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    s.mail("/root", "/root/b", MailKind::Spawn, "task b");
    s.feed(Input::Prompt {
        agent: s.id("/root/guardian"),
        items: Vec::new(),
    });
    // a's result waits: b is still busy.
    let after_a = s.run("/root/a", "a done");
    assert!(
        !after_a.iter().any(|e| e.starts_with("go /root ")),
        "{after_a:?}"
    );
    // b's end makes the root due; the guardian's running turn does not hold it back.
    let after_b = s.run("/root/b", "b done");
    assert!(
        after_b.contains(&"go /root [a done, b done]".to_string()),
        "{after_b:?}"
    );
}

#[test]
fn closing_or_interrupting_the_last_busy_child_wakes_the_parent_once_with_its_results() {
    for stop in ["close", "interrupt"] {
        let mut s = Sim::new(CoreConfig {
            max_running: 1,
            max_resident: 1,
            ..config()
        });
        s.spawn("/root/a", false);
        s.spawn("/root/b", false);
        s.mail("/root", "/root/b", MailKind::Spawn, "task b");
        s.mail("/root", "/root/a", MailKind::Spawn, "task a");
        // b's result waits for the root while a, evicted to make room for b, is revived.
        let after_b = s.run("/root/b", "b done");
        assert!(
            after_b.contains(&"revive /root/a".to_string()),
            "{after_b:?}"
        );
        assert!(
            !after_b.iter().any(|e| e.starts_with("go /root ")),
            "{after_b:?}"
        );
        // a's turn, still loading, goes: nothing of the root's children is busy any more.
        let target = s.id("/root/a");
        let out = if stop == "close" {
            s.feed(Input::Close { target })
        } else {
            s.feed(Input::Interrupt {
                target,
                reason: "interrupted".into(),
                ticket: None,
            })
        };
        assert!(
            out.contains(&"go /root [b done]".to_string()),
            "{stop}: {out:?}"
        );
    }
}

#[test]
fn the_victim_is_the_least_recently_used_idle_agent_without_processes() {
    let mut s = Sim::new(CoreConfig {
        max_resident: 2,
        ..config()
    });
    assert_eq!(
        s.spawn("/root/a", false),
        ["install /root/a", "reply registered"]
    );
    s.spawn("/root/b", false);
    s.mail("/root", "/root/a", MailKind::Spawn, "task a");
    s.mail("/root", "/root/b", MailKind::Spawn, "task b");
    s.run("/root/b", "b done");
    s.run("/root/a", "a done");
    // b was used least recently, but a command of b's still runs: a goes.
    s.busy_processes
        .lock()
        .expect("probe")
        .push(s.id("/root/b"));
    assert_eq!(
        s.spawn("/root/c", false),
        ["evict /root/a", "install /root/c", "reply registered"]
    );
    // Every resident agent busy: the next spawn waits, and gets the first slot that frees.
    s.mail("/root", "/root/c", MailKind::Spawn, "task c");
    assert!(s.spawn("/root/d", false).is_empty());
    s.busy_processes.lock().expect("probe").clear();
    let freed = s.feed(Input::Snapshot {
        ticket: 99,
        scope: Scope::All,
    });
    assert!(
        freed.starts_with(&[
            "reply snapshot of 5".to_string(),
            "evict /root/b".to_string()
        ]),
        "{freed:?}"
    );
    assert!(freed.contains(&"install /root/d".to_string()), "{freed:?}");
    // A follow-up to the evicted a revives it (c is running, d is idle: d goes).
    let revive = s.mail("/root", "/root/a", MailKind::Followup, "again");
    assert_eq!(
        revive,
        ["status /root/a running", "evict /root/d", "revive /root/a"]
    );
    assert_eq!(
        s.feed(Input::Revived {
            agent: s.id("/root/a"),
            result: Ok(Revival::default()),
        }),
        ["go /root/a [again]"]
    );
}

mod later;
