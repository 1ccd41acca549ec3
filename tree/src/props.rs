//! Property tests: random sequences of inputs over a small tree, fed as a runtime would feed
//! them (a turn starts only once granted, ends only once started or cancelled, takes the mail
//! it was handed), never answer a wait before the results it reports are in the caller's
//! mail, never declare quiescence while a turn is scheduled or a wake is owed, and keep every
//! parent's view of its children equal to the children's own state.

use std::collections::{HashMap, HashSet};

use arbor_mailbox::wake_once_due;
use arbor_protocol::{AgentPath, AgentStatus, Mail, MailId, MailKind, ResponseItem, ThreadId};
use proptest::prelude::*;

use super::*;

const PATHS: [&str; 5] = ["/root", "/root/a", "/root/b", "/root/a/x", "/root/a/y"];

#[derive(Debug, Clone)]
enum Op {
    Mail { to: usize, trigger: bool },
    Start(usize),
    End { agent: usize, completed: bool },
    Wait { caller: usize, all: bool },
    WaitEnded(usize),
    Interrupt(usize),
    Close(usize),
    Approval { agent: usize, open: bool },
    Quiescent,
    Revived(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let agent = 0..PATHS.len();
    prop_oneof![
        3 => (agent.clone(), any::<bool>()).prop_map(|(to, trigger)| Op::Mail { to, trigger }),
        4 => agent.clone().prop_map(Op::Start),
        4 => (agent.clone(), any::<bool>()).prop_map(|(agent, completed)| Op::End { agent, completed }),
        2 => (agent.clone(), any::<bool>()).prop_map(|(caller, all)| Op::Wait { caller, all }),
        1 => agent.clone().prop_map(Op::WaitEnded),
        1 => agent.clone().prop_map(Op::Interrupt),
        1 => (1..PATHS.len()).prop_map(Op::Close),
        1 => (agent.clone(), any::<bool>()).prop_map(|(agent, open)| Op::Approval { agent, open }),
        1 => Just(Op::Quiescent),
        2 => agent.prop_map(Op::Revived),
    ]
}

/// What the runtime knows of one agent's task.
#[derive(Debug, Default)]
struct Task {
    /// The mail of its granted turn, not yet started.
    granted: Option<Vec<MailId>>,
    running: bool,
    /// Handed mail its turn has not taken yet.
    handed: Vec<MailId>,
    cancelled: Option<String>,
    wait: Option<Ticket>,
    approvals: u32,
    reviving: bool,
    /// An interrupt took its queued turn back: the mail that asked for it waits, unwoken,
    /// until new mail or a resume asks again.
    held: bool,
    /// Result mail it sent its parent, and mail it took into its history.
    results: Vec<MailId>,
    consumed: HashSet<MailId>,
}

struct Sim {
    core: Core,
    ids: Vec<ThreadId>,
    paths: Vec<AgentPath>,
    tasks: HashMap<ThreadId, Task>,
    /// Each wait's caller.
    waits: HashMap<Ticket, ThreadId>,
    tickets: Ticket,
    /// What the inputs of the last op did, as paths and texts (ids differ between sims).
    did: Vec<String>,
}

impl Sim {
    fn new(max_running: usize, max_resident: usize, apart: bool) -> Self {
        let config = CoreConfig {
            max_running,
            max_resident,
            wake_once: true,
            root_driven: true,
            budget_tokens: None,
        };
        let core = Core::new(config, Box::new(|_| false));
        let mut sim = Self {
            core: if apart { core.held_apart() } else { core },
            ids: Vec::new(),
            paths: Vec::new(),
            tasks: HashMap::new(),
            waits: HashMap::new(),
            tickets: 0,
            did: Vec::new(),
        };
        for path in PATHS {
            let path = AgentPath::parse(path).expect("path");
            let id = ThreadId::new();
            let parent = path
                .parent()
                .and_then(|parent| sim.paths.iter().position(|p| *p == parent))
                .map(|at| sim.ids[at]);
            sim.ids.push(id);
            sim.paths.push(path.clone());
            sim.tasks.insert(id, Task::default());
            sim.feed(Input::Register(Registration {
                id,
                path,
                parent,
                internal: false,
                status: AgentStatus::PendingInit,
                fresh: true,
                unread: Vec::new(),
                last_message: None,
                ticket: None,
            }));
        }
        sim
    }

    fn ticket(&mut self) -> Ticket {
        self.tickets += 1;
        self.tickets
    }

    fn task(&mut self, id: ThreadId) -> &mut Task {
        self.tasks.entry(id).or_default()
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Mail { to, trigger } => {
                let (id, path) = (self.ids[to], self.paths[to].clone());
                if path.is_root() {
                    let items = vec![ResponseItem::Message {
                        role: "user".into(),
                        content: "more".into(),
                    }];
                    self.feed(Input::Prompt { agent: id, items });
                    return;
                }
                let author = path.parent().unwrap_or_else(AgentPath::root);
                let kind = if trigger {
                    MailKind::Followup
                } else {
                    MailKind::Message
                };
                let mail = Mail::new(author, path, kind, "task".into());
                self.task(id).held &= !trigger;
                self.feed(Input::Mail {
                    recipient: id,
                    mail,
                });
            }
            Op::Start(at) => {
                let id = self.ids[at];
                let Some(mails) = self.task(id).granted.take() else {
                    return;
                };
                self.task(id).running = true;
                self.feed(Input::Started { agent: id });
                self.consume(id, mails);
            }
            Op::End { agent, completed } => self.end(agent, completed),
            Op::Wait { caller, all } => {
                let id = self.ids[caller];
                let task = self.task(id);
                if !task.running || task.wait.is_some() || task.cancelled.is_some() {
                    return;
                }
                let ticket = self.ticket();
                self.task(id).wait = Some(ticket);
                self.waits.insert(ticket, id);
                let mode = if all { WaitMode::All } else { WaitMode::Any };
                self.feed(Input::Wait {
                    ticket,
                    caller: id,
                    targets: None,
                    mode,
                });
            }
            Op::WaitEnded(at) => {
                if let Some(ticket) = self.task(self.ids[at]).wait {
                    self.feed(Input::WaitEnded { ticket });
                }
            }
            Op::Interrupt(at) => {
                let id = self.ids[at];
                let turn = self.core.entry(id).map(|agent| agent.turn);
                if matches!(turn, Some(Turn::Queued | Turn::Loading)) {
                    self.task(id).held = true;
                }
                self.feed(Input::Interrupt {
                    target: id,
                    reason: "interrupted".into(),
                    ticket: None,
                });
            }
            Op::Close(at) => self.feed(Input::Close {
                target: self.ids[at],
            }),
            Op::Approval { agent, open } => {
                let id = self.ids[agent];
                let task = self.task(id);
                if !task.running || (!open && task.approvals == 0) {
                    return;
                }
                if open {
                    task.approvals += 1;
                    self.feed(Input::ApprovalOpened { agent: id });
                } else {
                    task.approvals -= 1;
                    self.feed(Input::ApprovalClosed { agent: id });
                }
            }
            Op::Quiescent => {
                let ticket = self.ticket();
                self.feed(Input::Quiescent { ticket });
            }
            Op::Revived(at) => {
                let id = self.ids[at];
                if !std::mem::take(&mut self.task(id).reviving) {
                    return;
                }
                let consumed = self.task(id).consumed.iter().copied().collect();
                let revival = Revival {
                    last_message: None,
                    usage: Default::default(),
                    consumed,
                };
                self.feed(Input::Revived {
                    agent: id,
                    result: Ok(revival),
                });
            }
        }
    }

    /// The turn of agent `at` ends: it takes the mail it was handed, answers its parent and
    /// reports how it ended. A turn in a wait or an approval ends only when it is cancelled.
    fn end(&mut self, at: usize, completed: bool) {
        let id = self.ids[at];
        let task = self.task(id);
        let cancelled = task.cancelled.take();
        let started = task.running;
        let may_end = started || (cancelled.is_some() && task.granted.is_some());
        if !may_end {
            task.cancelled = cancelled;
            return;
        }
        if started && cancelled.is_none() && (task.wait.is_some() || task.approvals > 0) {
            return;
        }
        for _ in 0..std::mem::take(&mut task.approvals) {
            self.feed(Input::ApprovalClosed { agent: id });
        }
        let task = self.task(id);
        task.running = false;
        task.granted = None;
        task.wait = None;
        let handed = std::mem::take(&mut task.handed);
        if started {
            self.consume(id, handed);
        }
        let status = match cancelled {
            Some(reason) => AgentStatus::Interrupted(reason),
            None if completed => AgentStatus::Completed(Some("done".into())),
            None => AgentStatus::Errored("failed".into()),
        };
        let path = self.paths[at].clone();
        let result = match path.parent() {
            Some(parent) if started => {
                let mail = Mail::new(path, parent, MailKind::Result, status.name().into());
                self.task(id).results.push(mail.id);
                Some(mail)
            }
            _ => None,
        };
        let completed = matches!(status, AgentStatus::Completed(_)).then(|| Some("done".into()));
        self.feed(Input::TurnEnded {
            agent: id,
            end: TurnEnd {
                status,
                completed,
                result,
                started,
            },
        });
    }

    fn consume(&mut self, id: ThreadId, ids: Vec<MailId>) {
        if ids.is_empty() {
            return;
        }
        self.task(id).consumed.extend(ids.iter().copied());
        self.feed(Input::Consumed { agent: id, ids });
    }

    fn feed(&mut self, input: Input) {
        let effects = self.core.handle(input);
        let rendered: Vec<String> = effects.iter().map(|effect| self.render(effect)).collect();
        self.did.extend(rendered);
        for effect in effects {
            match effect {
                Effect::Go { agent, mails, .. } => {
                    let task = self.task(agent);
                    task.held = false;
                    task.granted = Some(mails.iter().map(|mail| mail.id).collect());
                    task.cancelled = None;
                }
                Effect::Hand { agent, mails } => {
                    self.task(agent)
                        .handed
                        .extend(mails.iter().map(|mail| mail.id));
                }
                Effect::Cancel { agent, reason } => self.task(agent).cancelled = Some(reason),
                Effect::Revive { agent } => self.task(agent).reviving = true,
                Effect::Evict { agent } => self.task(agent).handed.clear(),
                Effect::Reply {
                    ticket,
                    answer: Answer::Wait(reply),
                } => self.waited(ticket, &reply),
                Effect::Reply {
                    answer: Answer::Quiet,
                    ..
                } => assert!(self.core.quiescent(), "quiet answered while a turn runs"),
                _ => {}
            }
        }
        self.check();
    }

    /// A wait that reports its targets idle does so only once their results are the caller's.
    fn waited(&mut self, ticket: Ticket, reply: &WaitReply) {
        let caller = self.waits[&ticket];
        if self.task(caller).wait == Some(ticket) {
            self.task(caller).wait = None;
        }
        let Some(WaitDone::AllIdle(targets)) = &reply.done else {
            return;
        };
        let entry = self.core.entry(caller).expect("caller");
        for (path, _) in targets {
            let at = self.paths.iter().position(|p| p == path).expect("known");
            for result in &self.tasks[&self.ids[at]].results {
                let delivered = entry.mailbox.contains(*result)
                    || self.tasks[&caller].consumed.contains(result)
                    || entry.closed;
                assert!(
                    delivered,
                    "{path} reported idle before its result reached its parent"
                );
            }
        }
    }

    fn path(&self, id: &ThreadId) -> &str {
        let at = self
            .ids
            .iter()
            .position(|known| known == id)
            .expect("known");
        self.paths[at].as_str()
    }

    /// An effect as paths and texts.
    fn render(&self, effect: &Effect) -> String {
        let texts = |mails: &[Mail]| {
            let mut texts: Vec<&str> = mails.iter().map(|mail| mail.content.as_str()).collect();
            texts.sort_unstable();
            texts.join(",")
        };
        match effect {
            Effect::Go {
                agent,
                input,
                mails,
            } => format!("go {} {} {}", self.path(agent), texts(mails), input.len()),
            Effect::Hand { agent, mails } => format!("hand {} {}", self.path(agent), texts(mails)),
            Effect::Status { agent, status } => format!("status {} {status:?}", self.path(agent)),
            Effect::Reply { ticket, answer } => format!("reply {ticket} {answer:?}"),
            Effect::Install { agent } => format!("install {}", self.path(agent)),
            Effect::Revive { agent } => format!("revive {}", self.path(agent)),
            Effect::Evict { agent } => format!("evict {}", self.path(agent)),
            Effect::Cancel { agent, reason } => format!("cancel {} {reason}", self.path(agent)),
            Effect::Close { agent } => format!("close {}", self.path(agent)),
            Effect::Emit(event) => format!("emit {}", event.type_name()),
            other => format!("{other:?}"),
        }
    }

    /// What holds after every input.
    fn check(&self) {
        for id in &self.ids {
            let agent = self.core.entry(*id).expect("agent");
            for child in agent.children.ids() {
                let own = self.core.entry(*child).expect("child").view();
                assert_eq!(agent.children.view(*child), Some(&own), "a stale view");
            }
        }
        if !self.core.quiescent() {
            return;
        }
        for id in &self.ids {
            let agent = self.core.entry(*id).expect("agent");
            assert!(
                !agent.scheduled(),
                "quiescent while {} is scheduled",
                agent.path
            );
            if agent.closed || agent.stopped || self.tasks[id].held {
                continue;
            }
            assert!(
                !agent.mailbox.owes_wake(),
                "quiescent while {} is owed a turn",
                agent.path
            );
            assert!(
                !wake_once_due(true, agent.children.any_busy(), &agent.mailbox),
                "quiescent while {} is owed its wake-once",
                agent.path
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_inputs_keep_the_trees_rules(
        max_running in 1usize..4,
        max_resident in 1usize..6,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let mut sim = Sim::new(max_running, max_resident, false);
        for op in ops {
            sim.apply(op);
        }
    }

    /// The same decisions whether a note reaches its agent at once or after the input's own
    /// decisions: each op does the same things (in an order that may differ) and leaves every
    /// agent as the other host leaves it.
    #[test]
    fn agents_held_apart_decide_as_agents_held_together(
        max_running in 1usize..4,
        max_resident in 1usize..6,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let mut together = Sim::new(max_running, max_resident, false);
        let mut apart = Sim::new(max_running, max_resident, true);
        for op in ops {
            together.did.clear();
            apart.did.clear();
            together.apply(op.clone());
            apart.apply(op.clone());
            together.did.sort();
            apart.did.sort();
            prop_assert_eq!(&together.did, &apart.did, "{:?}", op);
            for (at, path) in PATHS.iter().enumerate() {
                let (a, b) = (
                    together.core.entry(together.ids[at]).expect("agent"),
                    apart.core.entry(apart.ids[at]).expect("agent"),
                );
                prop_assert_eq!((&a.status, a.turn), (&b.status, b.turn), "{}", path);
            }
        }
    }
}
