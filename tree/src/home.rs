//! Residency: a new agent is installed, and an evicted one revived, once it holds one of the
//! `max_resident` slots; at the cap the least recently used agent that is idle (or only
//! queued), has no live process and waits for no approval is evicted first; when none may go,
//! the claim waits until one may. The root and internal agents need no slot.

use arbor_mailbox::Mailbox;
use arbor_protocol::{AgentStatus, ThreadId};
use arbor_scheduler::Claim;

use super::{Agent, Answer, Children, Core, Effect, Home, Registration, Revival, Turn};

impl Core {
    /// An agent the session learns of. A fresh one is installed once it holds a slot (the
    /// registration's ticket is answered then); a stored one waits, evicted, for a turn.
    pub(crate) fn register(&mut self, registration: Registration) {
        let Registration {
            id,
            path,
            parent,
            internal,
            status,
            fresh,
            unread,
            last_message,
            ticket,
        } = registration;
        let behind_closed = parent
            .and_then(|parent| self.agents.get(&parent))
            .is_some_and(|parent| parent.closed || parent.behind_closed);
        let at_path = self.by_path.entry(path.clone()).or_default();
        if !at_path.contains(&id) {
            at_path.push(id);
        }
        let mut mailbox = Mailbox::new();
        mailbox.restore(unread);
        if status == AgentStatus::AwaitingApproval {
            self.awaiting += 1;
        }
        let replaced = self.agents.insert(
            id,
            Agent {
                id,
                path,
                parent,
                children: Children::default(),
                internal,
                status,
                closed: false,
                behind_closed,
                stopped: false,
                turn: Turn::Idle,
                home: if fresh { Home::New } else { Home::Evicted },
                mailbox,
                input: Vec::new(),
                approvals_open: 0,
                last_message,
                usage: Default::default(),
                turns_started: 0,
            },
        );
        if replaced.is_some_and(|old| old.status == AgentStatus::AwaitingApproval) {
            self.awaiting -= 1;
        }
        self.tell_parent(id);
        if fresh {
            self.pending_tickets.push((id, ticket));
            self.load(id);
        }
    }

    /// `id` needs its runtime (installed fresh, or revived): at once when it needs no slot or
    /// one is free, after an eviction at the cap, or later when every resident agent is busy.
    pub(crate) fn load(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get(&id) else {
            return;
        };
        if !entry.counted() {
            self.bring_home(id);
            return;
        }
        if !self.slot_waiters.contains(&id) {
            self.slot_waiters.push_back(id);
        }
        self.retry_slots();
    }

    /// Gives free slots to the agents waiting for one, oldest first, evicting where it may.
    pub(crate) fn retry_slots(&mut self) {
        while let Some(&id) = self.slot_waiters.front() {
            // A new agent always wants its install; an evicted one only for a granted turn.
            let wanted = self.agents.get(&id).is_some_and(|entry| {
                !entry.stopped
                    && (entry.home == Home::New
                        || (entry.home == Home::Evicted && entry.turn == Turn::Loading))
            });
            if !wanted {
                self.slot_waiters.pop_front();
                continue;
            }
            let claim = {
                let agents = &self.agents;
                let runs = &self.runs;
                let has_processes = &self.has_processes;
                self.residency.claim(id, |candidate| {
                    candidate != id
                        && agents.get(&candidate).is_some_and(|entry| {
                            evictable(entry, runs.is_queued(candidate)) && !has_processes(candidate)
                        })
                })
            };
            match claim {
                Claim::Granted => {
                    self.slot_waiters.pop_front();
                    self.bring_home(id);
                }
                Claim::Evict(victim) => self.evict(victim),
                Claim::Wait => return,
            }
        }
    }

    /// `id` holds its slot (or needs none): install it, or start its revival.
    fn bring_home(&mut self, id: ThreadId) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        match entry.home {
            Home::New => {
                entry.home = Home::Resident;
                self.emit(Effect::Install { agent: id });
                if let Some(at) = self.pending_tickets.iter().position(|(a, _)| *a == id) {
                    let (_, ticket) = self.pending_tickets.remove(at);
                    if let Some(ticket) = ticket {
                        self.emit(Effect::Reply {
                            ticket,
                            answer: Answer::Registered,
                        });
                    }
                }
                if self
                    .agents
                    .get(&id)
                    .is_some_and(|e| e.turn == Turn::Loading)
                {
                    self.go(id);
                }
            }
            Home::Evicted => {
                entry.home = Home::Reviving;
                self.emit(Effect::Revive { agent: id });
            }
            Home::Resident | Home::Reviving => {}
        }
    }

    /// The revival of `id` finished: its granted turn runs, or ends as errored.
    pub(crate) fn revived(&mut self, id: ThreadId, result: Result<Revival, String>) {
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        if entry.home != Home::Reviving {
            return;
        }
        match result {
            Ok(revival) => {
                entry.home = Home::Resident;
                let consumed = revival.consumed.into_iter().collect();
                entry.mailbox.remove_ids(&consumed);
                if entry.last_message.is_none() {
                    entry.last_message = revival.last_message;
                }
                entry.usage = revival.usage;
                let (turn, stopped) = (entry.turn, entry.stopped);
                if stopped {
                    self.residency.release(id);
                } else if turn == Turn::Loading {
                    self.go(id);
                }
            }
            Err(reason) => {
                entry.home = Home::Evicted;
                let (turn, counted) = (entry.turn, entry.counted());
                self.residency.release(id);
                if turn == Turn::Loading {
                    self.set_turn(id, Turn::Idle);
                    if counted {
                        self.release_run_slot();
                    }
                    self.set_status(id, AgentStatus::Errored(reason));
                }
            }
        }
    }

    /// Evicts an idle agent: its runtime goes, the mail handed to it waits again.
    pub(crate) fn evict(&mut self, id: ThreadId) {
        self.residency.release(id);
        let Some(entry) = self.agents.get_mut(&id) else {
            return;
        };
        entry.home = Home::Evicted;
        entry.mailbox.take_back();
        self.emit(Effect::Evict { agent: id });
    }
}

/// Whether an agent may be evicted now: loaded, idle or only queued, and not waiting for an
/// approval (the caller also asks whether it has live processes).
fn evictable(entry: &Agent, queued: bool) -> bool {
    entry.counted()
        && entry.home == Home::Resident
        && (entry.turn == Turn::Idle || (entry.turn == Turn::Queued && queued))
        && entry.status != AgentStatus::AwaitingApproval
}
