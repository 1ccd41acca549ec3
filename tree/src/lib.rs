//! The rules of a tree as data. Each agent's part ([`Agent`]: its mail through `mailbox`, its
//! turn and status, its pending approvals, its children as it sees them) and the session's
//! part (the running cap and residency through `scheduler`, quiescence, the waits, the
//! registry of paths, the run flags). [`Core::handle`] takes one [`Input`] and returns what to
//! do about it ([`Effect`]s, in order); nothing here touches a runtime, a file or a clock, so
//! the decisions are tested as data (`tests/`, and the properties of `props.rs`).
//!
//! What one agent's decision tells another is a [`Note`] aimed at that agent (a child's turn
//! or status, seen by its parent): decisions about an agent's children read its views of
//! them, never the children's state. [`Core`] holds every agent together and applies a note
//! at once, which is how the local engine's session task hosts the tree.
//!
//! Where each decision lives: scheduling and the end of a turn in `turns.rs`, the residency
//! slot and the eviction victim in `home.rs` (the order and the victim rule itself in the
//! `scheduler` crate), mail arrival, wake and wake-once in `mail.rs` (the rules in the
//! `mailbox` crate), waits, quiescence and snapshots in `waits.rs`, an agent's part and its
//! children's views in `agent.rs`.

mod agent;
mod home;
mod mail;
#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
mod turns;
mod types;
mod waits;

use std::collections::{BTreeMap, HashMap, VecDeque};

use arbor_protocol::{AgentPath, AgentStatus, ThreadId, Usage};

pub use agent::{Agent, ChildView, Children, Note};
use arbor_scheduler::{Residency, RunQueue};

pub use types::{
    AgentSnapshot, Answer, Effect, Home, Input, Registration, Revival, Scope, Ticket, Turn,
    TurnEnd, WaitDone, WaitMode, WaitReply, Waiter,
};

/// The limits and switches the decisions follow.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    pub max_running: usize,
    pub max_resident: usize,
    /// Wake an idle parent once when its children are quiet and results wait.
    pub wake_once: bool,
    /// A process drives the root (`exec`, `resume PROMPT`): wake-once applies to it.
    pub root_driven: bool,
    /// Tokens the tree may use; once reached no new turn starts.
    pub budget_tokens: Option<u64>,
}

/// The state of one session, and the decisions taken on it.
pub struct Core {
    config: CoreConfig,
    agents: BTreeMap<ThreadId, Agent>,
    /// The agents at each path (a closed path may be taken again), so that a listing of one
    /// subtree walks that subtree instead of every agent.
    by_path: HashMap<AgentPath, Vec<ThreadId>>,
    runs: RunQueue,
    residency: Residency,
    /// Agents waiting for a residency slot (to be installed or revived), oldest first.
    slot_waiters: VecDeque<ThreadId>,
    /// Registrations answered once their agent is installed.
    pending_tickets: Vec<(ThreadId, Option<Ticket>)>,
    /// Whether an agent has live processes (such an agent is never evicted): asked of the
    /// runtime, which knows its processes.
    has_processes: Box<dyn Fn(ThreadId) -> bool + Send>,
    accepting: bool,
    stop_reason: Option<String>,
    usage: Usage,
    budget_spent: bool,
    budget_stopped: Vec<AgentPath>,
    /// Agents with a turn scheduled: the session is quiescent when there are none.
    busy: usize,
    /// Agents whose status is `awaiting_approval`: a wait looks for one only when there is.
    awaiting: usize,
    waiters: Vec<Waiter>,
    /// Parents one of whose children's turns ended or was dropped in this input: each may
    /// be owed its wake-once now.
    wake_checks: Vec<ThreadId>,
    /// Notes not yet handed over, when the agents are held apart (`None`: held together, a
    /// note is taken at once).
    notes: Option<VecDeque<(ThreadId, Note)>>,
    effects: Vec<Effect>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("agents", &self.agents.len())
            .field("busy", &self.busy)
            .finish_non_exhaustive()
    }
}

impl Core {
    /// An empty session.
    pub fn new(config: CoreConfig, has_processes: Box<dyn Fn(ThreadId) -> bool + Send>) -> Self {
        Self {
            runs: RunQueue::new(config.max_running),
            residency: Residency::new(config.max_resident),
            config,
            agents: BTreeMap::new(),
            by_path: HashMap::new(),
            slot_waiters: VecDeque::new(),
            pending_tickets: Vec::new(),
            has_processes,
            accepting: true,
            stop_reason: None,
            usage: Usage::default(),
            budget_spent: false,
            budget_stopped: Vec::new(),
            busy: 0,
            awaiting: 0,
            waiters: Vec::new(),
            wake_checks: Vec::new(),
            notes: None,
            effects: Vec::new(),
        }
    }

    /// Holds the agents apart: a note reaches its agent only once the decisions of the input
    /// that made it are taken, as it does when each agent lives under its own key. The
    /// decisions are the same (`props.rs` checks it); only their order within an input moves.
    pub fn held_apart(mut self) -> Self {
        self.notes = Some(VecDeque::new());
        self
    }

    /// Takes one input and returns what to do, in order.
    pub fn handle(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::Register(registration) => self.register(registration),
            Input::Revived { agent, result } => self.revived(agent, result),
            Input::Mail { recipient, mail } => self.deliver(recipient, mail),
            Input::Prompt { agent, items } => self.input(agent, items),
            Input::Consumed { agent, ids } => self.consumed(agent, &ids),
            Input::Started { agent } => self.started(agent),
            Input::TurnEnded { agent, end } => self.turn_ended(agent, end),
            Input::Usage { agent, usage } => self.add_usage(agent, usage),
            Input::ApprovalOpened { agent } => self.approval(agent, true),
            Input::ApprovalClosed { agent } => self.approval(agent, false),
            Input::Close { target } => self.close(target),
            Input::Interrupt {
                target,
                reason,
                ticket,
            } => self.interrupt(target, &reason, ticket),
            Input::Wait {
                ticket,
                caller,
                targets,
                mode,
            } => self.wait(ticket, caller, targets, mode),
            Input::WaitEnded { ticket } => self.wait_ended(ticket),
            Input::Idle { ticket, agent } => self.idle(ticket, agent),
            Input::Quiescent { ticket } => self.quiescent_wait(ticket),
            Input::Snapshot { ticket, scope } => self.snapshot(ticket, &scope),
            Input::Sync { ticket } => self.emit(Effect::Reply {
                ticket,
                answer: Answer::Synced,
            }),
            Input::Report { ticket } => self.emit(Effect::Reply {
                ticket,
                answer: Answer::Report {
                    usage: self.usage,
                    kept: self.budget_stopped.clone(),
                    resident: self.residency.len(),
                },
            }),
            Input::FinishOwed => self.finish_owed(),
            Input::Continue { ticket, skip_root } => self.continue_interrupted(ticket, skip_root),
            Input::Stop { reason } => self.stop(reason),
            Input::StopChildren { reason } => self.stop_children(&reason),
        }
        self.settle();
        self.retry_slots();
        self.settle();
        self.check_waiters();
        self.hand_notes();
        std::mem::take(&mut self.effects)
    }

    /// The agent `id`, if the session knows it.
    pub fn entry(&self, id: ThreadId) -> Option<&Agent> {
        self.agents.get(&id)
    }

    /// No agent has a turn queued, waiting, granted or running.
    pub fn quiescent(&self) -> bool {
        self.busy == 0
    }

    fn emit(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    /// Sets an agent's status when it changes: a line of the log and an event.
    fn set_status(&mut self, id: ThreadId, status: AgentStatus) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        if entry.status == status {
            return;
        }
        if entry.status == AgentStatus::AwaitingApproval {
            self.awaiting -= 1;
        }
        if status == AgentStatus::AwaitingApproval {
            self.awaiting += 1;
        }
        entry.status = status.clone();
        self.effects.push(Effect::Status { agent: id, status });
        self.tell_parent(id);
    }

    /// Moves an agent's turn, keeping the count of busy agents with it.
    fn set_turn(&mut self, id: ThreadId, turn: Turn) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        let was = entry.scheduled();
        entry.turn = turn;
        match (was, entry.scheduled()) {
            (false, true) => self.busy += 1,
            (true, false) => {
                self.busy -= 1;
                // A parent may be owed its wake-once now that this child is not busy.
                if let Some(parent) = entry.parent
                    && !entry.internal
                    && !self.wake_checks.contains(&parent)
                {
                    self.wake_checks.push(parent);
                }
            }
            _ => return,
        }
        self.tell_parent(id);
    }

    /// The agent's parent learns how it is now.
    fn tell_parent(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get(&id) else {
            return;
        };
        if let Some(parent) = entry.parent {
            let view = entry.view();
            self.note(parent, Note::Child { child: id, view });
        }
    }

    /// Hands a note to the agent it is aimed at: held together, at once; held apart, once
    /// the input's decisions are taken ([`Core::settle`]).
    fn note(&mut self, to: ThreadId, note: Note) {
        if let Some(queue) = &mut self.notes {
            queue.push_back((to, note));
        } else if let Some(agent) = self.agents.get_mut(&to) {
            agent.take(note);
        }
    }

    /// Hands over the notes still travelling.
    fn hand_notes(&mut self) {
        while let Some((to, note)) = self.notes.as_mut().and_then(VecDeque::pop_front) {
            if let Some(agent) = self.agents.get_mut(&to) {
                agent.take(note);
            }
        }
    }

    /// Hands over the notes still travelling, then asks each parent whose child stopped
    /// being busy whether it is owed its wake-once, until neither is left.
    fn settle(&mut self) {
        loop {
            self.hand_notes();
            let Some(parent) = self.wake_checks.pop() else {
                return;
            };
            self.wake_once(parent);
        }
    }
}
