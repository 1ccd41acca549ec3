//! The turn scheduler: the `max_running` cap, the queue of turns over it, and the busy count
//! that defines quiescence.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use arbor_protocol::{AgentStatus, ThreadId};

use crate::agent::Agent;
use crate::runtime::Inner;

/// Child turns running under the cap, and the turns waiting for a slot, in order.
#[derive(Debug, Default)]
pub struct Scheduler {
    running: usize,
    queue: VecDeque<ThreadId>,
}

impl Inner {
    /// Turns queued or running anywhere in the tree.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::SeqCst)
    }

    /// One turn fewer; the last one tells the quiescence waiters.
    fn busy_down(&self) {
        if self.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.quiet.notify_waiters();
        }
    }

    /// Waits until no turn is queued or running anywhere in the tree.
    pub async fn quiescent(&self) {
        loop {
            let notified = self.quiet.notified();
            tokio::pin!(notified);
            // Registered before the check, so a drop to zero in between is not missed.
            notified.as_mut().enable();
            if self.busy() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Asks for a turn of `agent`. Before this returns the agent is `pending_init`, `queued`
    /// or `running`. A closed agent or one already scheduled is left alone.
    pub fn request_turn(self: &Arc<Self>, agent: &Arc<Agent>) {
        self.schedule(agent, false);
    }

    /// The turn that just ended left mail asking for another one. The ending turn kept the
    /// agent `scheduled`, so no waiter ever sees it idle between the two turns; this schedules
    /// the next turn, or clears the flag when no turn may start.
    pub fn continue_turn(self: &Arc<Self>, agent: &Arc<Agent>) {
        self.schedule(agent, true);
    }

    fn schedule(self: &Arc<Self>, agent: &Arc<Agent>, continuing: bool) {
        let counted = counts_against_cap(agent);
        let new_status = {
            let mut state = agent.state();
            if (state.scheduled && !continuing)
                || state.closed
                || agent.token.is_cancelled()
                || !self.accepting.load(Ordering::SeqCst)
            {
                if continuing {
                    state.scheduled = false;
                    drop(state);
                    self.bump();
                }
                return;
            }
            if self.over_budget() {
                state.scheduled &= !continuing;
                drop(state);
                self.budget_stopped(agent);
                self.bump();
                return;
            }
            state.scheduled = true;
            self.busy.fetch_add(1, Ordering::SeqCst);
            let granted = !counted || {
                let mut sched = self.lock_sched();
                if sched.running < self.config.max_running {
                    sched.running += 1;
                    true
                } else {
                    sched.queue.push_back(agent.id());
                    false
                }
            };
            if granted {
                match state.status {
                    AgentStatus::PendingInit | AgentStatus::Running => None,
                    _ => Some(AgentStatus::Running),
                }
            } else {
                Some(AgentStatus::Queued)
            }
        };
        let granted = new_status != Some(AgentStatus::Queued);
        if let Some(status) = new_status {
            self.set_status(agent, status);
        } else {
            self.bump();
        }
        if granted {
            self.start_granted(agent);
        }
    }

    /// A turn was granted to `agent`: tell its task, reviving it first when it is evicted. A
    /// failed revival ends the turn as `errored`.
    pub fn start_granted(self: &Arc<Self>, agent: &Arc<Agent>) {
        if agent.send_go() {
            return;
        }
        let inner = Arc::clone(self);
        let agent = Arc::clone(agent);
        self.tracker.spawn(async move {
            let revived = crate::residency::ensure_resident(&inner, &agent).await;
            let error = match revived {
                Ok(()) if agent.send_go() => return,
                Ok(()) => format!("{} stopped before its turn could start", agent.path()),
                Err(err) => err,
            };
            tracing::error!(path = %agent.path(), error = %error, "turn could not start");
            agent.state().scheduled = false;
            inner.set_status(&agent, AgentStatus::Errored(error));
            inner.release_turn_slot(&agent);
            inner.turn_done();
        });
    }

    /// Whether an agent's turn waits in the queue over `max_running`.
    pub fn is_queued(&self, id: ThreadId) -> bool {
        self.lock_sched().queue.contains(&id)
    }

    /// A turn of `agent` ended: frees its slot and starts queued turns in order.
    pub fn release_turn_slot(self: &Arc<Self>, agent: &Agent) {
        if counts_against_cap(agent) {
            self.release_slot();
        }
    }

    /// The last step of a turn's end, after every wake it causes has been requested, so
    /// quiescence is never seen early.
    pub fn turn_done(&self) {
        self.busy_down();
        self.bump();
    }

    /// Takes a queued turn out of the queue. True when it was there (it held no slot).
    pub fn dequeue(&self, agent: &Agent) -> bool {
        let removed = {
            let mut sched = self.lock_sched();
            let before = sched.queue.len();
            sched.queue.retain(|id| *id != agent.id());
            before != sched.queue.len()
        };
        if removed {
            self.busy_down();
            self.bump();
        }
        removed
    }

    /// A scheduled turn will never run (its agent stopped first): undo its accounting.
    pub fn abandon_turn(self: &Arc<Self>, agent: &Agent) {
        if !self.dequeue(agent) {
            self.release_turn_slot(agent);
            self.turn_done();
        }
    }

    /// Position (from 1) of an agent in the queue of turns over the cap.
    pub fn queue_position(&self, id: ThreadId) -> Option<usize> {
        let sched = self.lock_sched();
        sched.queue.iter().position(|q| *q == id).map(|p| p + 1)
    }

    fn release_slot(self: &Arc<Self>) {
        let mut starts = Vec::new();
        {
            let mut sched = self.lock_sched();
            sched.running = sched.running.saturating_sub(1);
            while sched.running < self.config.max_running {
                let Some(next) = sched.queue.pop_front() else {
                    break;
                };
                sched.running += 1;
                starts.push(next);
            }
        }
        for id in starts {
            if let Some(agent) = self.registry.get(id) {
                self.start_granted(&agent);
            }
        }
    }

    fn lock_sched(&self) -> std::sync::MutexGuard<'_, Scheduler> {
        self.sched.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Root and internal agents run outside `max_running`.
fn counts_against_cap(agent: &Agent) -> bool {
    !agent.path().is_root() && !agent.identity.internal
}
