//! The guardian's reviews on a `Tree` (behaviour §7): `/root/guardian`, an internal agent
//! registered on the first request routed to it and kept, answers one review per turn. The
//! session hands it the queued requests one at a time (the review request as its input), reads
//! its final answer as the verdict (`arbor-guardian`'s parser: anything but a bare verdict
//! object fails closed), enforces the review deadline with one retry, and where the review
//! fails and a human can answer, leaves the request to the human.

use arbor_guardian::{Decision, DecisionOutcome, ReviewFailure, decide, parse_verdict};
use arbor_protocol::{AgentPath, AgentStatus, Event};
use arbor_roles::{Capabilities, GUARDIAN_ROLE, RoleSet};

use super::{Effect, Entry, Fresh, Reviewing, Tree};
use crate::approval::{Route, Settle};
use crate::wire::{Input, Timer, TurnOutcome};

/// The guardian's reserved path, `/root/guardian`.
pub fn guardian_path() -> AgentPath {
    AgentPath::root()
        .join("guardian")
        .unwrap_or_else(|_| AgentPath::root())
}

impl Tree {
    /// Registers the guardian unless it is open: role `guardian`, the root's capabilities
    /// narrowed by it (read-only, no spawning), no nickname, idle until a review is handed to
    /// it.
    pub(super) fn ensure_guardian(&mut self, fresh: &Fresh, effects: &mut Vec<Effect>) {
        let path = guardian_path();
        if self
            .open_agent(&path)
            .is_some_and(|entry| entry.status != AgentStatus::Closed)
        {
            return;
        }
        let roles = RoleSet::builtin();
        let role = roles.guardian();
        let caps =
            Capabilities::root(self.config.sandbox, self.config.approval_policy).narrow_for(role);
        let entry = Entry {
            thread_id: fresh.thread_id.clone(),
            path: path.clone(),
            parent: Some(AgentPath::root()),
            nickname: None,
            role: GUARDIAN_ROLE.to_string(),
            tools: caps.tools.iter().map(|t| t.to_string()).collect(),
            sandbox: caps.sandbox,
            status: AgentStatus::PendingInit,
            open: Some(true),
            busy: false,
            unread: super::Unread::default(),
            interrupt: false,
            internal: true,
            turns: 0,
            streak: (0, 0),
            busy_children: 0,
            inbox: (0, 0),
        };
        self.agents.insert(entry);
        effects.push(Effect::Event(Event::AgentSpawned {
            path,
            nickname: None,
            role: GUARDIAN_ROLE.to_string(),
            parent: Some(AgentPath::root()),
        }));
    }

    /// Hands the next queued request to the guardian when it is idle and reviews nothing.
    pub(super) fn pump_reviews(&mut self, effects: &mut Vec<Effect>) {
        if self.reviewing.is_some() || self.reviews.is_empty() {
            return;
        }
        let path = guardian_path();
        let idle = self.open_agent(&path).is_some_and(|entry| {
            !entry.busy && entry.internal && entry.status != AgentStatus::Closed
        });
        if !idle {
            return;
        }
        while let Some(id) = self.reviews.pop_front() {
            let Some(approval) = self
                .approvals
                .iter_mut()
                .find(|a| a.id == id && a.is_pending() && a.route == Route::Guardian)
            else {
                continue;
            };
            let text = approval.review.take().unwrap_or_default();
            effects.push(Effect::Deliver(path.clone(), Input::User { text }));
            self.wake(&path, effects);
            self.reviewing = Some(Reviewing {
                id: id.clone(),
                attempt: 0,
                retry: false,
            });
            effects.push(Effect::Later {
                after_ms: self.config.review_deadline_ms,
                timer: Timer::Review { id, attempt: 0 },
            });
            return;
        }
    }

    /// The guardian's turn ended: its answer decides the request under review (a turn cut by
    /// a missed deadline asks again, once).
    pub(super) fn review_ended(&mut self, outcome: &TurnOutcome, effects: &mut Vec<Effect>) {
        let Some(reviewing) = self.reviewing.take() else {
            return;
        };
        if reviewing.retry {
            // The review request is still the last input of its history: a new turn with no
            // new input answers it.
            let path = guardian_path();
            self.wake(&path, effects);
            effects.push(Effect::Later {
                after_ms: self.config.review_deadline_ms,
                timer: Timer::Review {
                    id: reviewing.id.clone(),
                    attempt: reviewing.attempt,
                },
            });
            self.reviewing = Some(Reviewing {
                retry: false,
                ..reviewing
            });
            return;
        }
        let result = match outcome {
            TurnOutcome::Completed { last_message } => {
                parse_verdict(last_message.as_deref().unwrap_or_default())
                    .map_err(ReviewFailure::from)
            }
            TurnOutcome::Errored { reason } => Err(ReviewFailure::ReviewerError(reason.clone())),
            TurnOutcome::Interrupted { reason } => Err(ReviewFailure::ReviewerError(format!(
                "the guardian's turn ended interrupted: {reason}"
            ))),
        };
        self.guardian_decided(&reviewing.id, &decide(result), effects);
    }

    /// The deadline of an attempt passed while the guardian still works on it: its turn is
    /// stopped; the first time the review is asked again, the second it is unavailable.
    pub(super) fn review_deadline(&mut self, id: &str, attempt: u32, effects: &mut Vec<Effect>) {
        let Some(reviewing) = self.reviewing.clone() else {
            return;
        };
        if reviewing.id != id || reviewing.attempt != attempt || reviewing.retry {
            return;
        }
        if let Some(entry) = self.agents.get_mut(&guardian_path())
            && entry.busy
        {
            entry.interrupt = true;
        }
        if ReviewFailure::Timeout.may_retry(attempt) {
            self.reviewing = Some(Reviewing {
                id: reviewing.id,
                attempt: attempt + 1,
                retry: true,
            });
            return;
        }
        // The guardian's turn ends on its own; the next review waits for that.
        self.reviewing = None;
        self.guardian_decided(id, &decide(Err(ReviewFailure::Timeout)), effects);
    }

    /// The guardian was closed: what it had to review fails as its review would.
    pub(super) fn guardian_closed(&mut self, effects: &mut Vec<Effect>) {
        let reviewing = self.reviewing.take().map(|r| r.id);
        let queued: Vec<String> = reviewing
            .into_iter()
            .chain(self.reviews.drain(..))
            .collect();
        let failure = ReviewFailure::ReviewerError("the guardian was closed".to_string());
        let decision = decide(Err(failure));
        for id in queued {
            self.guardian_decided(&id, &decision, effects);
        }
    }

    /// The guardian's decision on request `id`, if it still waits for one: a failed review
    /// goes to a human where one can answer, anything else decides it.
    fn guardian_decided(&mut self, id: &str, decision: &Decision, effects: &mut Vec<Effect>) {
        let Some(index) = self
            .approvals
            .iter()
            .position(|a| a.id == id && a.is_pending() && a.route == Route::Guardian)
        else {
            return;
        };
        match &decision.outcome {
            DecisionOutcome::ReviewUnavailable(reason) if self.human_reachable() => {
                let note = format!("the guardian's review failed ({reason})");
                self.leave_to_human(index, Some(note), Some(reason.clone()), effects);
            }
            _ => {
                self.decide(index, Settle::from_guardian(decision), effects);
            }
        }
    }
}
