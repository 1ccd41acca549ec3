//! The `Session` object's state as data: the spawn graph, each agent's status, whether it owes
//! a turn, what it has unread, the waits, and quiescence. Every operation takes what the handler
//! fetched (fresh ids, the time) and returns `Effect`s for the handler to carry out, so the
//! decisions are tested without a server (`tree/tests.rs`).

mod agents;
#[cfg(test)]
mod approval_tests;
mod approvals;
mod handover;
mod listing;
mod ops;
mod outside;
mod review;
mod settle;
#[cfg(test)]
mod stored_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use arbor_protocol::{AgentPath, AgentStatus, Event, Mail, MailKind, SandboxMode, Timestamp};
use serde::{Deserialize, Serialize};

use crate::approval::Approval;
use crate::wire::{Decided, SessionConfig, Timer};

pub use agents::{Agents, Misses};
pub use review::guardian_path;

/// One agent as the session knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub thread_id: String,
    pub path: AgentPath,
    pub parent: Option<AgentPath>,
    pub nickname: Option<String>,
    pub role: String,
    pub tools: Vec<String>,
    pub sandbox: SandboxMode,
    pub status: AgentStatus,
    /// `None` for the root; `Some(true)` while the edge from its parent is open.
    pub open: Option<bool>,
    /// Has an active or owed turn: a wake was sent and its turn has not ended.
    pub busy: bool,
    /// How much of its inbox no turn has taken yet (the mail itself is in the inbox, each
    /// under its own key).
    pub unread: Unread,
    /// An interrupt its running turn has not yet seen.
    #[serde(default)]
    pub interrupt: bool,
    /// An internal agent (the guardian): not one of its parent's children for the model.
    #[serde(default)]
    pub internal: bool,
    /// How many turns it has started.
    #[serde(default)]
    pub turns: u64,
    /// Consecutive denials of its requests the guardian reviewed: (turn, count).
    #[serde(default)]
    pub streak: (u64, u32),
    /// How many of its children (the guardian aside) owe a turn.
    #[serde(default)]
    pub busy_children: u32,
    /// Where its untaken inputs are stored, each under a key of its own: (the first untaken,
    /// the next free). Kept here, so delivering to an agent reads nothing the operation has
    /// not loaded already.
    #[serde(default)]
    pub inbox: (u64, u64),
}

impl Entry {
    /// Open (or the root).
    pub fn is_open(&self) -> bool {
        self.open != Some(false)
    }
}

/// What the session counts of an agent's unread mail (the mail waits in the inbox): enough
/// for its wakes, never a list that grows with its children.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unread {
    pub mails: usize,
    /// Mail that asks for a turn.
    pub triggers: usize,
    pub results: usize,
}

impl Unread {
    fn count(&mut self, mail: &Mail, add: bool) {
        let step = |count: &mut usize| {
            *count = if add {
                *count + 1
            } else {
                count.saturating_sub(1)
            };
        };
        step(&mut self.mails);
        if mail.trigger_turn {
            step(&mut self.triggers);
        }
        if mail.kind == MailKind::Result {
            step(&mut self.results);
        }
    }
}

impl Wait {
    /// Whether the wait of `caller` is on `path`.
    pub fn names(&self, caller: &AgentPath, path: &AgentPath) -> bool {
        if self.children {
            path.parent().as_ref() == Some(caller) && *path != guardian_path()
        } else {
            self.targets.contains(path)
        }
    }
}

/// A blocked `wait_agent` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    /// The targets the model named (empty when it named none: see `children`).
    pub targets: Vec<AgentPath>,
    /// It waits for the caller's open children (the guardian aside), which are not listed:
    /// the caller, blocked in the wait, can make no new ones.
    #[serde(default)]
    pub children: bool,
    pub all: bool,
    pub awakeable: String,
    /// How many targets owe a turn (kept as their turns start and end).
    #[serde(default)]
    pub busy: usize,
    /// A target that waits for an approval.
    #[serde(default)]
    pub approving: Option<AgentPath>,
    /// The targets whose mail waits for the caller (a wait for any is over with one).
    #[serde(default)]
    pub from: Vec<AgentPath>,
}

/// The whole session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub session: String,
    pub config: SessionConfig,
    /// Each under its own key, loaded as operations read them.
    #[serde(skip)]
    pub agents: Agents,
    /// The `match` of each entry of the session's script (none without a script). Each entry
    /// is a key of its own, read only to wake an agent that reads it, so neither the tree nor a
    /// wake carries the whole script (`config.script` is `None` once the session has started).
    #[serde(default)]
    pub script: Vec<String>,
    /// How many agents owe a turn: the tree is quiescent at none.
    #[serde(default)]
    pub busy: usize,
    /// Blocked waits by caller.
    pub waits: BTreeMap<AgentPath, Wait>,
    /// Every nickname handed out (the pool draws without replacement): a key of its own
    /// (`nicknames`), which only registrations read and write.
    #[serde(skip)]
    pub nicknames: Vec<String>,
    /// The tree was quiescent after the root's turn.
    pub completed: bool,
    pub final_message: Option<String>,
    /// How many events the session has recorded.
    pub events: u64,
    /// The last lines numbered, not yet sent to their `Events` chunk (they go in batches,
    /// not one send per operation): lines `events - tail.len()` on. The follower reads them
    /// with the summary.
    #[serde(default)]
    pub tail: Vec<arbor_protocol::EventLine>,
    /// The serialized size of `tail`.
    #[serde(default)]
    pub tail_bytes: usize,
    /// A run of the root (`exec`, `resume PROMPT`) is in progress: results wake the root once.
    /// Under `arbor followup` on a finished tree they wait for the next run.
    #[serde(default = "yes")]
    pub root_driven: bool,
    /// Every approval request, in request order.
    #[serde(default)]
    pub approvals: Vec<Approval>,
    /// Requests waiting for the guardian, in order.
    #[serde(default)]
    pub reviews: VecDeque<String>,
    /// The review the guardian is working on.
    #[serde(default)]
    pub reviewing: Option<Reviewing>,
    /// The time of the operation being applied (set by the handler; not stored).
    #[serde(skip)]
    pub now: Timestamp,
    /// Callers whose wait may be over after this operation (not stored).
    #[serde(skip)]
    pub checks: BTreeSet<AgentPath>,
    /// The mail each agent has not taken, as the tests read it (the engine reads inboxes).
    #[cfg(test)]
    #[serde(skip)]
    pub mails: BTreeMap<AgentPath, Vec<Mail>>,
}

fn yes() -> bool {
    true
}

/// The guardian's review in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reviewing {
    /// The request under review.
    pub id: String,
    /// 0 for the first attempt, 1 for the retry after a missed deadline.
    pub attempt: u32,
    /// The deadline passed: the guardian's turn is being stopped, and the review is asked
    /// again once it has ended.
    pub retry: bool,
}

/// What the handler does after an operation, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Append to the agent's inbox.
    Deliver(AgentPath, crate::wire::Input),
    /// Send `Agent/wake` to the agent (one-way).
    Wake(AgentPath),
    /// Send `Agent/wake` with the inputs its turn starts from, taken already (one-way).
    HandOver(AgentPath, Vec<crate::wire::Input>),
    /// Tell the agent object it is closed (one-way).
    Close(AgentPath),
    /// Resolve a waiting turn's awakeable with the wait's message.
    Resolve { awakeable: String, message: String },
    /// Resolve the awakeable of a turn waiting for an approval with its decision.
    Decide { awakeable: String, decided: Decided },
    /// Call the session back with `timer` after `after_ms` (a delayed one-way call).
    Later { after_ms: u64, timer: Timer },
    /// Append an event.
    Event(Event),
}

pub use crate::wire::Fresh;

impl Tree {
    /// A new session whose root gets `prompt`.
    pub fn start(
        session: &str,
        prompt: String,
        config: SessionConfig,
        fresh: &Fresh,
    ) -> (Self, Vec<Effect>) {
        let root = AgentPath::root();
        let caps = arbor_roles::Capabilities::root(config.sandbox, config.approval_policy);
        let mut config = config;
        if config.root_task.is_empty() {
            config.root_task = prompt.clone();
        }
        let entry = Entry {
            thread_id: session.to_string(),
            path: root.clone(),
            parent: None,
            nickname: None,
            role: arbor_roles::DEFAULT_ROLE.to_string(),
            tools: caps.tools.iter().map(|t| t.to_string()).collect(),
            sandbox: caps.sandbox,
            status: AgentStatus::Queued,
            open: None,
            busy: true,
            unread: Unread::default(),
            interrupt: false,
            internal: false,
            turns: 0,
            streak: (0, 0),
            busy_children: 0,
            inbox: (0, 0),
        };
        let mut tree = Self {
            session: session.to_string(),
            config,
            agents: Agents::complete([entry]),
            script: Vec::new(),
            busy: 1,
            waits: BTreeMap::new(),
            nicknames: Vec::new(),
            completed: false,
            final_message: None,
            events: 0,
            tail: Vec::new(),
            tail_bytes: 0,
            root_driven: true,
            approvals: Vec::new(),
            reviews: VecDeque::new(),
            reviewing: None,
            now: Timestamp::from_millis(fresh.now_ms),
            checks: BTreeSet::new(),
            #[cfg(test)]
            mails: BTreeMap::new(),
        };
        let session_id = arbor_protocol::ThreadId::parse(session).ok();
        let mut effects = Vec::new();
        if let Some(session_id) = session_id {
            effects.push(Effect::Event(Event::SessionStarted {
                session_id,
                handle: None,
            }));
        }
        effects.push(Effect::Deliver(
            root.clone(),
            crate::wire::Input::User { text: prompt },
        ));
        effects.push(Effect::Wake(root));
        tree.settle(&mut effects);
        (tree, effects)
    }

    /// The open agent at `path`.
    pub fn open_agent(&self, path: &AgentPath) -> Option<&Entry> {
        self.agents.get(path).filter(|entry| entry.is_open())
    }

    /// Resolves a tool's target (a path as `caller` names it, or a thread id) to a known agent.
    pub fn resolve(&self, caller: &AgentPath, target: &str) -> Result<&Entry, String> {
        if let Ok(id) = arbor_protocol::ThreadId::parse(target) {
            return self
                .agents
                .path_of(&id.as_string())
                .and_then(|path| self.agents.get(&path))
                .ok_or_else(|| format!("agent id `{target}` not found"));
        }
        let path = caller.resolve(target).map_err(|error| error.to_string())?;
        self.agents
            .get(&path)
            .ok_or_else(|| format!("live agent path `{path}` not found"))
    }

    /// Whether any child of `path` (open or not; internal agents left out) owes a turn.
    fn children_busy(&self, path: &AgentPath) -> bool {
        self.agents
            .get(path)
            .is_some_and(|entry| entry.busy_children > 0)
    }

    /// Marks `path` as owing a turn or not, keeping in step the count of busy agents, its
    /// parent's count of busy children, and the waits that name it.
    fn set_busy(&mut self, path: &AgentPath, busy: bool) {
        let Some(entry) = self.agents.get_mut(path) else {
            return;
        };
        if entry.busy == busy {
            return;
        }
        entry.busy = busy;
        let (parent, internal) = (entry.parent.clone(), entry.internal);
        let step = |count: usize| {
            if busy {
                count + 1
            } else {
                count.saturating_sub(1)
            }
        };
        self.busy = step(self.busy);
        if let Some(parent) = parent
            && !internal
            && let Some(parent) = self.agents.get_mut(&parent)
        {
            parent.busy_children = u32::try_from(step(parent.busy_children as usize)).unwrap_or(0);
        }
        for (caller, wait) in &mut self.waits {
            if wait.names(caller, path) {
                wait.busy = step(wait.busy);
                self.checks.insert(caller.clone());
            }
        }
    }

    /// `path` now waits for an approval: the waits that name it are over.
    fn approving(&mut self, path: &AgentPath) {
        for (caller, wait) in &mut self.waits {
            if wait.names(caller, path) && wait.approving.is_none() {
                wait.approving = Some(path.clone());
                self.checks.insert(caller.clone());
            }
        }
    }

    /// Whether a human can answer approval requests at all.
    pub fn human_reachable(&self) -> bool {
        self.config.approval_wait_ms != Some(0)
    }

    /// Marks `path` as owing a turn and wakes it, unless it owes one already.
    fn wake(&mut self, path: &AgentPath, effects: &mut Vec<Effect>) {
        if let Some(entry) = self.agents.get_mut(path)
            && !entry.busy
            && entry.is_open()
            && entry.status != AgentStatus::Closed
        {
            entry.status = AgentStatus::Queued;
            self.set_busy(path, true);
            effects.push(Effect::Wake(path.clone()));
        }
    }

    /// Puts `mail` in its recipient's inbox and says so.
    fn deliver(&mut self, mail: Mail, effects: &mut Vec<Effect>) {
        if let Some(entry) = self.agents.get_mut(&mail.recipient) {
            entry.unread.count(&mail, true);
            if let Some(wait) = self.waits.get_mut(&mail.recipient)
                && wait.names(&mail.recipient, &mail.author)
                && !wait.from.contains(&mail.author)
            {
                wait.from.push(mail.author.clone());
            }
        }
        #[cfg(test)]
        self.mails
            .entry(mail.recipient.clone())
            .or_default()
            .push(mail.clone());
        effects.push(Effect::Event(Event::MailSent {
            id: mail.id,
            kind: mail.kind,
            author: mail.author.clone(),
            recipient: mail.recipient.clone(),
            trigger_turn: mail.trigger_turn,
            from_user: mail.from_user,
        }));
        effects.push(Effect::Deliver(
            mail.recipient.clone(),
            crate::wire::Input::Mail { mail },
        ));
    }

    /// Whether any agent has an active or owed turn.
    pub fn busy(&self) -> bool {
        self.busy > 0
    }
}
