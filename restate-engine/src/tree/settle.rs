//! What happens after every operation of a `Tree`: the waits that are over are answered, an
//! idle agent owed a turn is woken (the wake-once rule), and quiescence is noted.

use arbor_protocol::{AgentPath, AgentStatus, Event};

use super::{Effect, Tree, Wait};

impl Tree {
    /// After every operation: answer the waits that are over, wake an idle agent owed a turn
    /// (trigger mail that came after its turn's last request; the wake-once rule), and note
    /// quiescence.
    pub(super) fn settle(&mut self, effects: &mut Vec<Effect>) {
        self.pump_reviews(effects);
        // A wait can end only when its caller's mail changed or a target's turn or status did.
        let changed = self.agents.changed_paths();
        let over: Vec<(AgentPath, String)> = self
            .waits
            .iter()
            .filter(|(caller, _)| self.checks.contains(*caller) || changed.contains(caller))
            .filter_map(|(caller, wait)| self.wait_over(caller, wait).map(|m| (caller.clone(), m)))
            .collect();
        self.checks.clear();
        for (caller, message) in over {
            if let Some(wait) = self.waits.remove(&caller) {
                if let Some(entry) = self.agents.get_mut(&caller)
                    && entry.status == AgentStatus::Waiting
                {
                    entry.status = AgentStatus::Running;
                }
                effects.push(Effect::Resolve {
                    awakeable: wait.awakeable,
                    message,
                });
            }
        }
        // A turn can be owed only to an agent this operation changed.
        let owed: Vec<AgentPath> = changed
            .iter()
            .filter_map(|path| self.agents.get(path))
            .filter(|entry| !entry.busy && entry.is_open())
            .filter(|entry| {
                entry.unread.triggers > 0
                    || (entry.unread.results > 0
                        && !self.children_busy(&entry.path)
                        && (self.root_driven || !entry.path.is_root()))
            })
            .map(|entry| entry.path.clone())
            .collect();
        for path in owed {
            self.wake(&path, effects);
        }
        let waiting = self
            .approvals
            .iter()
            .any(|approval| approval.is_pending() && approval.waiter.is_some());
        if !self.busy() && !waiting && !self.completed {
            let root = self.agents.get(&AgentPath::root());
            if let Some(root) = root
                && root.status.is_final()
            {
                self.completed = true;
                self.root_driven = false;
                self.final_message = match &root.status {
                    AgentStatus::Completed(message) => message.clone(),
                    _ => None,
                };
                if let Ok(session_id) = arbor_protocol::ThreadId::parse(&self.session) {
                    effects.push(Effect::Event(Event::SessionCompleted {
                        session_id,
                        final_message: self.final_message.clone(),
                    }));
                }
            }
        }
    }

    /// The message a wait ends with, when it is over: a target waits for an approval, a
    /// target's mail waits (any), or every target is idle (all).
    pub(super) fn wait_over(&self, caller: &AgentPath, wait: &Wait) -> Option<String> {
        let caller = self.agents.get(caller)?;
        if let Some(target) = &wait.approving {
            return Some(format!("{target} is waiting for an approval"));
        }
        if wait.all {
            if wait.busy > 0 {
                return None;
            }
            let states = self
                .wait_targets(&caller.path, wait)
                .iter()
                .map(|target| {
                    let status = self
                        .agents
                        .get(target)
                        .map_or(AgentStatus::NotFound, |entry| entry.status.clone());
                    format!("{target} {status}")
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Some(format!("all targets are idle: {states}"));
        }
        if caller.unread.mails == 0 || wait.from.is_empty() {
            return None;
        }
        let names = wait
            .from
            .iter()
            .map(|path| path.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!("mail is waiting from {names}"))
    }
}
