//! Turns: asking for one (the running cap, the budget, a stopped agent), granting it (its
//! runtime first), its start and its end (the result to the parent, the final status, the
//! freed slot, the turn mail still owes), interrupts, closes and the session's stop.

use arbor_protocol::{AgentStatus, Event, ResponseItem, ThreadId, Usage};

use super::{Answer, Core, Effect, Home, Ticket, Turn, TurnEnd};

impl Core {
    /// Asks for a turn of `id`. Nothing happens for an agent already scheduled, closed,
    /// stopped, or when the session takes no new turn; a spent budget records who was kept.
    /// True when the turn is scheduled.
    pub(crate) fn schedule(&mut self, id: ThreadId) -> bool {
        let Some(entry) = self.agents.get(&id) else {
            return false;
        };
        if entry.scheduled() || entry.closed || entry.stopped || !self.accepting {
            return false;
        }
        if self.budget_spent {
            let path = entry.path.clone();
            if !self.budget_stopped.contains(&path) {
                self.budget_stopped.push(path);
            }
            return false;
        }
        if entry.counted() && !self.runs.request(id) {
            self.set_turn(id, Turn::Queued);
            self.set_status(id, AgentStatus::Queued);
            return true;
        }
        self.grant(id);
        true
    }

    /// `id` holds its running slot (or needs none): run the turn, loading its runtime first.
    pub(crate) fn grant(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get(&id) else {
            return;
        };
        let (home, status) = (entry.home, entry.status.clone());
        if !matches!(status, AgentStatus::PendingInit | AgentStatus::Running) {
            self.set_status(id, AgentStatus::Running);
        }
        match home {
            Home::Resident => self.go(id),
            Home::New | Home::Reviving => self.set_turn(id, Turn::Loading),
            Home::Evicted => {
                self.set_turn(id, Turn::Loading);
                self.load(id);
            }
        }
    }

    /// Tells a resident agent's task to run its granted turn.
    pub(crate) fn go(&mut self, id: ThreadId) {
        self.set_turn(id, Turn::Granted);
        self.residency.touch(id);
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        let mails = entry.mailbox.start_turn();
        let input = std::mem::take(&mut entry.input);
        self.emit(Effect::Go {
            agent: id,
            input,
            mails,
        });
    }

    pub(crate) fn started(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        if entry.turn != Turn::Granted {
            return;
        }
        entry.turns_started += 1;
        self.set_turn(id, Turn::Running);
        self.set_status(id, AgentStatus::Running);
    }

    /// A turn ended: the result reaches the parent before the agent's final status is set and
    /// before anything waiting on the agent is released; then the slot is freed, the turn mail
    /// owes is asked for, and the wake-once the end makes due.
    pub(crate) fn turn_ended(&mut self, id: ThreadId, end: TurnEnd) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        if !matches!(entry.turn, Turn::Granted | Turn::Running) {
            return;
        }
        if let Some(message) = &end.completed {
            entry.last_message = message.clone();
        }
        if !end.started {
            // Its task is gone: the mail it was handed waits again.
            entry.mailbox.take_back();
        }
        let owes = entry.mailbox.end_turn();
        let (closed, stopped, counted, parent) =
            (entry.closed, entry.stopped, entry.counted(), entry.parent);
        self.set_turn(id, Turn::Idle);
        if let (Some(mail), Some(parent)) = (end.result, parent) {
            self.deliver(parent, mail);
        }
        if stopped {
            self.residency.release(id);
        }
        if !closed && !owes {
            self.set_status(id, end.status.clone());
        }
        if counted {
            self.release_run_slot();
        }
        if owes && !closed && !self.schedule(id) {
            self.set_status(id, end.status);
        }
        if let Some(parent) = parent {
            self.wake_once(parent);
        }
        self.wake_once(id);
    }

    /// A slot under `max_running` is free: the oldest queued turns take it.
    pub(crate) fn release_run_slot(&mut self) {
        for next in self.runs.release() {
            let waiting = self
                .agents
                .get(&next)
                .is_some_and(|entry| entry.turn == Turn::Queued);
            if waiting {
                self.grant(next);
            }
        }
    }

    /// Drops a turn that will not run (its agent stopped, or it was interrupted before it ran).
    pub(crate) fn drop_turn(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get(&id) else {
            return;
        };
        let (turn, counted) = (entry.turn, entry.counted());
        match turn {
            Turn::Queued => {
                self.runs.dequeue(id);
            }
            Turn::Loading if counted => self.release_run_slot(),
            _ => {}
        }
        if matches!(turn, Turn::Queued | Turn::Loading) {
            self.set_turn(id, Turn::Idle);
        }
    }

    /// Input for the agent's next turn that is not mail; it asks for a turn.
    pub(crate) fn input(&mut self, id: ThreadId, items: Vec<ResponseItem>) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        entry.input.extend(items);
        self.schedule(id);
    }

    /// Stops the target's running turn, or takes its turn out of the queue (its status is
    /// then what its last turn left). An idle or evicted agent is left as it is.
    pub(crate) fn interrupt(&mut self, id: ThreadId, reason: &str, ticket: Option<Ticket>) {
        let Some(entry) = self.agents.get(&id) else {
            return;
        };
        let (previous, turn) = (entry.status.clone(), entry.turn);
        match turn {
            Turn::Queued | Turn::Loading => {
                let status = match entry.last_message.clone() {
                    Some(message) => AgentStatus::Completed(Some(message)),
                    None => AgentStatus::Interrupted("interrupted".to_string()),
                };
                self.drop_turn(id);
                self.set_status(id, status);
            }
            Turn::Granted | Turn::Running => self.emit(Effect::Cancel {
                agent: id,
                reason: reason.to_string(),
            }),
            Turn::Idle => {}
        }
        if let Some(ticket) = ticket {
            self.emit(Effect::Reply {
                ticket,
                answer: Answer::Interrupted(previous),
            });
        }
    }

    /// Closes `id`: its turn stops (`closed`), the turns below it stop (`parent_closed`),
    /// nothing below it starts another, and it shows as closed.
    pub(crate) fn close(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        if entry.closed {
            return;
        }
        entry.closed = true;
        let mut below = vec![(id, "closed")];
        let mut frontier = entry.children.ids().to_vec();
        while let Some(child) = frontier.pop() {
            if let Some(entry) = self.agents.get_mut(&child) {
                entry.behind_closed = true;
                frontier.extend(entry.children.ids().iter().copied());
                below.push((child, "parent_closed"));
            }
        }
        self.tell_parent(id);
        for (agent, reason) in below {
            self.halt(agent, reason);
        }
        self.set_status(id, AgentStatus::Closed);
        self.emit(Effect::Close { agent: id });
    }

    /// Stops an agent for good: its turn ends with `reason`, a queued one is dropped.
    fn halt(&mut self, id: ThreadId, reason: &str) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        entry.stopped = true;
        let turn = entry.turn;
        match turn {
            Turn::Granted | Turn::Running => self.emit(Effect::Cancel {
                agent: id,
                reason: reason.to_string(),
            }),
            Turn::Queued | Turn::Loading => self.drop_turn(id),
            Turn::Idle => {}
        }
        if !matches!(turn, Turn::Granted | Turn::Running) {
            self.residency.release(id);
        }
    }

    /// The session stops: every turn ends with `reason`, no new one starts.
    pub(crate) fn stop(&mut self, reason: String) {
        self.accepting = false;
        self.stop_reason = Some(reason.clone());
        let ids: Vec<ThreadId> = self.agents.keys().copied().collect();
        for id in ids {
            self.halt(id, &reason);
        }
        self.emit(Effect::StopAll);
    }

    /// Every turn but the root's ends with `reason`, and no new one starts.
    pub(crate) fn stop_children(&mut self, reason: &str) {
        self.accepting = false;
        let ids: Vec<ThreadId> = self
            .agents
            .values()
            .filter(|entry| !entry.path.is_root())
            .map(|entry| entry.id)
            .collect();
        for id in ids {
            let turn = self.agents.get(&id).map(|entry| entry.turn);
            match turn {
                Some(Turn::Granted | Turn::Running) => self.emit(Effect::Cancel {
                    agent: id,
                    reason: reason.to_string(),
                }),
                Some(Turn::Queued | Turn::Loading) => self.drop_turn(id),
                _ => {}
            }
        }
    }

    /// An approval request of `id` opened or closed: the first open makes it
    /// `awaiting_approval`, the last close makes it `running` again.
    pub(crate) fn approval(&mut self, id: ThreadId, open: bool) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        if open {
            entry.approvals_open += 1;
            if entry.approvals_open == 1 {
                self.set_status(id, AgentStatus::AwaitingApproval);
            }
        } else {
            entry.approvals_open = entry.approvals_open.saturating_sub(1);
            if entry.approvals_open == 0 && entry.status == AgentStatus::AwaitingApproval {
                self.set_status(id, AgentStatus::Running);
            }
        }
    }

    /// One response's tokens: the agent's and the tree's totals go out with the `usage` event,
    /// and `budget.exhausted` the moment the budget is crossed.
    pub(crate) fn add_usage(&mut self, id: ThreadId, used: Usage) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        add(&mut entry.usage, used);
        let agent_total = entry.usage;
        let path = entry.path.clone();
        add(&mut self.usage, used);
        let tree_total = self.usage;
        self.emit(Effect::Emit(Event::Usage {
            path,
            usage: used,
            agent_total,
            tree_total,
        }));
        let spent = tree_total.input_tokens + tree_total.output_tokens;
        if let Some(limit) = self.config.budget_tokens
            && !self.budget_spent
            && spent >= limit
        {
            self.budget_spent = true;
            self.emit(Effect::Emit(Event::BudgetExhausted { limit, used: spent }));
            self.emit(Effect::BudgetSpent);
        }
    }
}

fn add(total: &mut Usage, used: Usage) {
    total.add(used);
}
