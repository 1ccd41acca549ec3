//! Waits and reads: `wait_agent` (mail from a target, every target idle; a target waiting for
//! an approval is busy, and the reply names it), waits for one agent to be idle and for
//! quiescence, and snapshots for listings. Every wait is checked again after each input, so
//! none misses the change it waits for.

use arbor_protocol::{AgentPath, AgentStatus, ThreadId};

use super::types::{
    AgentSnapshot, Answer, Effect, Home, Scope, Ticket, Turn, WaitDone, WaitMode, WaitReply, Waiter,
};
use super::{Agent, ChildView, Core};

impl Core {
    /// `wait_agent` of `caller`: it shows as `waiting` until the wait ends.
    pub(crate) fn wait(
        &mut self,
        ticket: Ticket,
        caller: ThreadId,
        targets: Option<Vec<ThreadId>>,
        mode: WaitMode,
    ) {
        let Some(entry) = self.agents.get(&caller) else {
            return;
        };
        let targets = targets.unwrap_or_else(|| entry.children.awaited());
        self.set_status(caller, AgentStatus::Waiting);
        self.waiters.push(Waiter::Agents {
            ticket,
            caller,
            targets,
            mode,
            busy_at: 0,
        });
    }

    /// The deadline of wait `ticket` passed: it ends unanswered.
    pub(crate) fn wait_ended(&mut self, ticket: Ticket) {
        let Some(at) = self
            .waiters
            .iter()
            .position(|waiter| matches!(waiter, Waiter::Agents { ticket: t, .. } if *t == ticket))
        else {
            return;
        };
        let waiter = self.waiters.remove(at);
        self.resolve(waiter, None);
    }

    pub(crate) fn idle(&mut self, ticket: Ticket, agent: ThreadId) {
        self.waiters.push(Waiter::Idle { ticket, agent });
    }

    pub(crate) fn quiescent_wait(&mut self, ticket: Ticket) {
        self.waiters.push(Waiter::Quiet { ticket });
    }

    /// Answers every wait whose condition holds now.
    pub(crate) fn check_waiters(&mut self) {
        if self.waiters.is_empty() {
            return;
        }
        let waiters = std::mem::take(&mut self.waiters);
        for mut waiter in waiters {
            match self.done(&mut waiter) {
                Some(done) => self.resolve(waiter, Some(done)),
                None => self.waiters.push(waiter),
            }
        }
    }

    /// Whether a wait is over, and why.
    fn done(&self, waiter: &mut Waiter) -> Option<WaitDone> {
        match waiter {
            Waiter::Agents {
                caller,
                targets,
                mode,
                busy_at,
                ..
            } => self.agents_done(*caller, targets, *mode, busy_at),
            Waiter::Idle { agent, .. } => self
                .agents
                .get(agent)
                .is_none_or(|entry| !entry.scheduled())
                .then_some(WaitDone::NoTargets),
            Waiter::Quiet { .. } => self.quiescent().then_some(WaitDone::NoTargets),
        }
    }

    fn agents_done(
        &self,
        caller: ThreadId,
        targets: &[ThreadId],
        mode: WaitMode,
        busy_at: &mut usize,
    ) -> Option<WaitDone> {
        if targets.is_empty() {
            return Some(WaitDone::NoTargets);
        }
        // Checked after every input: a wait over a thousand children must not cost a thousand
        // lookups each time. A wait for all looks first where it last found a busy target, and
        // scans on from there only once that one is done; a wait for any first asks whether
        // any mail waits at all. A target waiting for an approval has its turn running, so it
        // is busy: the approval waits for the user or the guardian, never for the caller, who
        // can do nothing about it but wait on.
        let caller = self.agents.get(&caller)?;
        let views = || targets.iter().filter_map(|t| self.target_view(caller, *t));
        match mode {
            WaitMode::Any => {
                let mailbox = &caller.mailbox;
                if mailbox.unread() == 0 {
                    return None;
                }
                let paths: Vec<AgentPath> = views().map(|view| view.path).collect();
                let from: Vec<AgentPath> =
                    mailbox.unread_from(&paths).into_iter().cloned().collect();
                (!from.is_empty()).then_some(WaitDone::Mail(from))
            }
            WaitMode::All => {
                let start = (*busy_at).min(targets.len() - 1);
                let order = targets[start..].iter().chain(&targets[..start]);
                let scheduled = |target: &ThreadId| match caller.children.view(*target) {
                    Some(view) => view.scheduled,
                    None => self.agents.get(target).is_some_and(Agent::scheduled),
                };
                for (step, target) in order.enumerate() {
                    if scheduled(target) {
                        *busy_at = (start + step) % targets.len();
                        return None;
                    }
                }
                Some(WaitDone::AllIdle(
                    views().map(|view| (view.path, view.status)).collect(),
                ))
            }
        }
    }

    /// How `caller` sees a target of its wait: a child through its view of it, another agent
    /// (a sibling, a descendant further down) through that agent's own state.
    fn target_view(&self, caller: &Agent, target: ThreadId) -> Option<ChildView> {
        match caller.children.view(target) {
            Some(view) => Some(view.clone()),
            None => self.agents.get(&target).map(Agent::view),
        }
    }

    fn resolve(&mut self, waiter: Waiter, done: Option<WaitDone>) {
        match waiter {
            Waiter::Agents {
                ticket,
                caller,
                targets,
                ..
            } => {
                // Back to running only while the wait's turn runs: a wait whose turn ended (cut
                // short, its call cancelled) leaves the status the end gave.
                let waiting = self.agents.get(&caller).is_some_and(|entry| {
                    entry.status == AgentStatus::Waiting && entry.turn == Turn::Running
                });
                if waiting {
                    self.set_status(caller, AgentStatus::Running);
                }
                let awaiting_approval = self.awaiting_approval(caller, &targets);
                self.emit(Effect::Reply {
                    ticket,
                    answer: Answer::Wait(WaitReply {
                        done,
                        awaiting_approval,
                    }),
                });
            }
            Waiter::Idle { ticket, agent } => {
                if let Some(snapshot) = self.agents.get(&agent).map(|e| self.snapshot_of(e)) {
                    self.emit(Effect::Reply {
                        ticket,
                        answer: Answer::Idle(snapshot),
                    });
                }
            }
            Waiter::Quiet { ticket } => self.emit(Effect::Reply {
                ticket,
                answer: Answer::Quiet,
            }),
        }
    }

    /// The paths of `targets` waiting for an approval (looked for only when some agent is).
    fn awaiting_approval(&self, caller: ThreadId, targets: &[ThreadId]) -> Vec<AgentPath> {
        if self.awaiting == 0 {
            return Vec::new();
        }
        let Some(caller) = self.agents.get(&caller) else {
            return Vec::new();
        };
        targets
            .iter()
            .filter_map(|target| self.target_view(caller, *target))
            .filter(|view| view.status == AgentStatus::AwaitingApproval)
            .map(|view| view.path)
            .collect()
    }

    /// The agents of `scope`, in creation order.
    pub(crate) fn snapshot(&mut self, ticket: Ticket, scope: &Scope) {
        let all = match scope {
            Scope::All => self.snapshots(),
            Scope::Within(path) => self
                .within(path)
                .into_iter()
                .filter_map(|id| self.agents.get(&id))
                .map(|entry| self.snapshot_of(entry))
                .collect(),
            Scope::One(id) => self
                .agents
                .get(id)
                .map(|entry| vec![self.snapshot_of(entry)])
                .unwrap_or_default(),
        };
        self.emit(Effect::Reply {
            ticket,
            answer: Answer::Snapshot(all),
        });
    }

    /// The agents at `path` and below it, in creation order: the subtrees of the agents at
    /// that path (every agent's path extends its parent's).
    fn within(&self, path: &AgentPath) -> Vec<ThreadId> {
        if path.is_root() {
            return self.agents.keys().copied().collect();
        }
        let mut found = Vec::new();
        let mut stack: Vec<ThreadId> = self.by_path.get(path).cloned().unwrap_or_default();
        while let Some(id) = stack.pop() {
            if let Some(entry) = self.agents.get(&id) {
                found.push(id);
                stack.extend(entry.children.ids().iter().copied());
            }
        }
        // Ids are made in creation order.
        found.sort_unstable();
        found.dedup();
        found
    }

    /// Every agent as listings show it, in creation order.
    pub fn snapshots(&self) -> Vec<AgentSnapshot> {
        self.agents
            .values()
            .map(|entry| self.snapshot_of(entry))
            .collect()
    }

    fn snapshot_of(&self, entry: &Agent) -> AgentSnapshot {
        AgentSnapshot {
            id: entry.id,
            path: entry.path.clone(),
            parent: entry.parent,
            internal: entry.internal,
            status: entry.status.clone(),
            unread: entry.mailbox.unread(),
            closed: entry.closed,
            behind_closed: entry.closed || entry.behind_closed,
            resident: entry.home == Home::Resident && !entry.stopped,
            queue_position: self.runs.position(entry.id),
            last_message: entry.last_message.clone(),
            usage: entry.usage,
            turns_started: entry.turns_started,
            scheduled: entry.scheduled(),
        }
    }
}
