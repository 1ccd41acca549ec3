//! Approval requests on a `Tree` (behaviour §7): a request is recorded, then decided at once
//! (policy `never`, a human's override, nobody to ask, the denial breaker) or left pending for
//! the guardian or a human while only its requester waits; a human's answer, the approval wait
//! and the guardian's verdict decide it; every decision is an event and resolves the waiting
//! turn's awakeable.

use arbor_agent_graph::{AnswerOutcome, ApprovalOutcome, DecidedBy, answer_outcome};
use arbor_guardian::MAX_CONSECUTIVE_DENIALS;
use arbor_protocol::{AgentPath, AgentStatus, ApprovalPolicy, ApprovalsReviewer, Event};

use super::{Effect, Fresh, Tree};
use crate::approval::{Approval, BREAKER_INTERRUPT, Grant, Route, Settle};
use crate::wire::{
    AnswerReply, AnswerRequest, ApprovalReply, ApprovalRequest, ApprovalRow, Decided, Timer,
};

/// Who handles a request routed to the guardian (the denial breaker's verdict).
enum Breaker {
    Review,
    HandToHuman,
    InterruptTurn,
}

impl Tree {
    /// An `exec_command` asks for approval: recorded, then decided now or left pending (the
    /// requester `awaiting_approval`, waits on it answered).
    pub fn request_approval(
        &mut self,
        request: &ApprovalRequest,
        fresh: &Fresh,
    ) -> (ApprovalReply, Vec<Effect>) {
        let mut effects = Vec::new();
        let id = fresh.mail_id.clone();
        let turn = self
            .agents
            .get(&request.path)
            .map_or(0, |entry| entry.turns);
        let approval = Approval {
            id: id.clone(),
            path: request.path.clone(),
            action: request.action.clone(),
            justification: request.justification.clone(),
            key: request.key.clone(),
            outcome: ApprovalOutcome::Pending,
            decided_by: None,
            risk_level: None,
            rationale: None,
            requested_at: self.now,
            decided_at: None,
            turn,
            waiter: None,
            route: Route::Decided,
            reviewed: false,
            review: None,
            grant: None,
        };
        effects.push(Effect::Event(Event::ApprovalRequested {
            id: id.clone(),
            path: request.path.clone(),
            action: request.action.clone(),
            justification: request.justification.clone(),
        }));
        self.approvals.push(approval);
        let index = self.approvals.len() - 1;
        let immediate = self.immediate(index, &request.review, fresh, &mut effects);
        if let Some(settle) = immediate {
            let decided = self.decide(index, settle, &mut effects);
            self.settle(&mut effects);
            return (ApprovalReply::Decided { decided }, effects);
        }
        let approval = &mut self.approvals[index];
        approval.waiter = Some(request.awakeable.clone());
        if let Some(entry) = self.agents.get_mut(&request.path) {
            entry.status = AgentStatus::AwaitingApproval;
        }
        self.approving(&request.path);
        effects.push(Effect::Event(Event::AgentStatus {
            path: request.path.clone(),
            status: AgentStatus::AwaitingApproval,
        }));
        self.settle(&mut effects);
        (ApprovalReply::Pending { id }, effects)
    }

    /// The decision a request gets as it is made, if any; otherwise routes it (to the
    /// guardian's queue, or to a human with the approval wait's timer).
    fn immediate(
        &mut self,
        index: usize,
        review: &Option<String>,
        fresh: &Fresh,
        effects: &mut Vec<Effect>,
    ) -> Option<Settle> {
        if self.config.approval_policy == ApprovalPolicy::Never {
            return Some(Settle::policy_never());
        }
        let (id, path, key, turn) = {
            let approval = &self.approvals[index];
            (
                approval.id.clone(),
                approval.path.clone(),
                approval.key.clone(),
                approval.turn,
            )
        };
        let now = self.now;
        let overridden = self.approvals[..index]
            .iter_mut()
            .find(|earlier| earlier.grants(&path, &key));
        if let Some(earlier) = overridden {
            if let Some(grant) = earlier.grant.as_mut() {
                grant.used_by = Some(id);
                grant.used_at = Some(now);
            }
            let rationale = format!("override: the user approved request {}", earlier.id);
            return Some(Settle::allow(DecidedBy::User, Some(rationale)));
        }
        let breaker = match self.config.reviewer {
            ApprovalsReviewer::User => None,
            ApprovalsReviewer::Guardian => Some(self.breaker(&path, turn)),
        };
        match breaker {
            None if !self.human_reachable() => Some(Settle::no_approver()),
            None => {
                self.leave_to_human(index, None, None, effects);
                None
            }
            Some(Breaker::Review) => {
                self.ensure_guardian(fresh, effects);
                let approval = &mut self.approvals[index];
                approval.route = Route::Guardian;
                approval.reviewed = true;
                approval.review = review.clone();
                self.reviews.push_back(approval.id.clone());
                None
            }
            Some(Breaker::HandToHuman) => {
                self.approvals[index].reviewed = true;
                let note = format!("handed to the user: {BREAKER_INTERRUPT} in this turn");
                self.leave_to_human(index, Some(note), None, effects);
                None
            }
            Some(Breaker::InterruptTurn) => {
                if let Some(entry) = self.agents.get_mut(&path) {
                    entry.interrupt = true;
                }
                Some(Settle::refuse(
                    ApprovalOutcome::Deny,
                    DecidedBy::Policy,
                    Some(format!(
                        "{BREAKER_INTERRUPT} in this turn and no human is reachable: the turn is interrupted"
                    )),
                    arbor_guardian::denied_message(Some(BREAKER_INTERRUPT)),
                ))
            }
        }
    }

    /// The breaker's verdict on `path`'s next request in `turn`.
    fn breaker(&self, path: &AgentPath, turn: u64) -> Breaker {
        let denials = self.agents.get(path).map_or(0, |entry| match entry.streak {
            (streak_turn, count) if streak_turn == turn => count,
            _ => 0,
        });
        if denials < MAX_CONSECUTIVE_DENIALS {
            Breaker::Review
        } else if self.human_reachable() {
            Breaker::HandToHuman
        } else {
            Breaker::InterruptTurn
        }
    }

    /// Leaves request `index` to a human, for at most the approval wait.
    pub(super) fn leave_to_human(
        &mut self,
        index: usize,
        note: Option<String>,
        unavailable: Option<String>,
        effects: &mut Vec<Effect>,
    ) {
        let approval = &mut self.approvals[index];
        approval.route = Route::Human { note, unavailable };
        if let Some(after_ms) = self.config.approval_wait_ms {
            effects.push(Effect::Later {
                after_ms,
                timer: Timer::Expire {
                    id: approval.id.clone(),
                },
            });
        }
    }

    /// Decides request `index`: the record, the event, the requester back to `running` (its
    /// event follows), the breaker's count, and the waiting turn told.
    pub(super) fn decide(
        &mut self,
        index: usize,
        settle: Settle,
        effects: &mut Vec<Effect>,
    ) -> Decided {
        let now = self.now;
        let approval = &mut self.approvals[index];
        approval.outcome = settle.outcome;
        approval.decided_by = Some(settle.decided_by);
        approval.risk_level = settle.risk_level.clone();
        approval.rationale = settle.rationale.clone();
        approval.decided_at = Some(now);
        approval.review = None;
        let waiter = approval.waiter.take();
        let (id, path, turn, reviewed) = (
            approval.id.clone(),
            approval.path.clone(),
            approval.turn,
            approval.reviewed,
        );
        self.reviews.retain(|queued| queued != &id);
        effects.push(Effect::Event(Event::ApprovalDecided {
            id,
            outcome: settle.outcome.as_str().to_string(),
            decided_by: Some(settle.decided_by.as_str().to_string()),
            risk_level: settle.risk_level.clone(),
            rationale: settle.rationale.clone(),
        }));
        if let Some(entry) = self.agents.get_mut(&path) {
            if reviewed {
                entry.streak = match (settle.allowed(), entry.streak) {
                    (true, _) => (turn, 0),
                    (false, (streak_turn, count)) if streak_turn == turn => (turn, count + 1),
                    (false, _) => (turn, 1),
                };
            }
            let still_waiting = self
                .approvals
                .iter()
                .any(|other| other.path == path && other.waiter.is_some());
            if entry.status == AgentStatus::AwaitingApproval && !still_waiting {
                entry.status = AgentStatus::Running;
                effects.push(Effect::Event(Event::AgentStatus {
                    path,
                    status: AgentStatus::Running,
                }));
            }
        }
        let decided = Decided {
            allow: settle.allowed(),
            message: settle.message,
        };
        if let Some(awakeable) = waiter {
            effects.push(Effect::Decide {
                awakeable,
                decided: decided.clone(),
            });
        }
        decided
    }

    /// `arbor approve|deny`: decides a pending request, or (an approval) overrides a denial
    /// for the identical retry; refuses anything else with the local engine's reasons.
    pub fn answer(
        &mut self,
        request: &AnswerRequest,
    ) -> (Result<AnswerReply, String>, Vec<Effect>) {
        let mut effects = Vec::new();
        let id = request.id.trim();
        let Some(index) = self.approvals.iter().position(|a| a.id == id) else {
            let error = format!(
                "approval request `{id}` not found in session {}",
                self.session
            );
            return (Err(error), effects);
        };
        let approval = &self.approvals[index];
        let outcome = answer_outcome(
            approval.outcome,
            approval.decided_by,
            approval.grant.is_some(),
            request.approve,
        );
        let path = approval.path.clone();
        let waited = approval.waiter.is_some();
        let grant = Grant {
            granted_at: self.now,
            used_by: None,
            used_at: None,
        };
        let (decided, override_granted) = match outcome {
            AnswerOutcome::Decided => {
                if request.approve {
                    // The waiter runs the approved action: it uses the override itself.
                    self.approvals[index].grant = Some(Grant {
                        used_by: waited.then(|| id.to_string()),
                        used_at: waited.then_some(self.now),
                        ..grant
                    });
                }
                self.decide(index, Settle::by_user(request.approve), &mut effects);
                (true, request.approve)
            }
            AnswerOutcome::Overridden => {
                self.approvals[index].grant = Some(grant);
                (false, true)
            }
            AnswerOutcome::AlreadyOverridden => {
                let error = format!("approval request {id} was already approved for one retry");
                return (Err(error), effects);
            }
            AnswerOutcome::AlreadyDecided {
                outcome,
                decided_by,
            } => {
                let by = decided_by.map_or_else(|| "nobody".to_string(), |by| by.to_string());
                let error = format!("approval request {id} is already decided: {outcome} by {by}");
                return (Err(error), effects);
            }
        };
        self.settle(&mut effects);
        let reply = AnswerReply {
            id: id.to_string(),
            path,
            decided,
            override_granted,
        };
        (Ok(reply), effects)
    }

    /// A timer the session set went off.
    pub fn timer(&mut self, timer: &Timer) -> Vec<Effect> {
        let mut effects = Vec::new();
        match timer {
            Timer::Expire { id } => self.expire(id, &mut effects),
            Timer::Review { id, attempt } => self.review_deadline(id, *attempt, &mut effects),
        }
        self.settle(&mut effects);
        effects
    }

    /// The approval wait of request `id` passed: still pending with a human, nobody answered.
    fn expire(&mut self, id: &str, effects: &mut Vec<Effect>) {
        let Some(index) = self.approvals.iter().position(|a| a.id == id) else {
            return;
        };
        let approval = &self.approvals[index];
        let Route::Human { note, unavailable } = &approval.route else {
            return;
        };
        if !approval.is_pending() {
            return;
        }
        let settle = match unavailable {
            // The guardian's review failed and no human answered: the failure decides it.
            Some(reason) => Settle {
                rationale: Some(format!("{reason}; no human answered")),
                ..Settle::from_guardian(&arbor_guardian::Decision {
                    outcome: arbor_guardian::DecisionOutcome::ReviewUnavailable(reason.clone()),
                    risk_level: None,
                    rationale: None,
                    user_authorization: None,
                })
            },
            None => {
                let mut settle = Settle::no_approver();
                if let Some(note) = note {
                    settle.rationale = settle.rationale.map(|text| format!("{text}; {note}"));
                }
                settle
            }
        };
        self.decide(index, settle, effects);
    }

    /// The turns waiting on `path`'s requests stop waiting (interrupted or closed): they are
    /// told the action did not run; the requests stay pending for a human's answer, which then
    /// lets the identical retry through.
    pub(super) fn release_waiters(
        &mut self,
        path: &AgentPath,
        why: &str,
        effects: &mut Vec<Effect>,
    ) {
        for approval in &mut self.approvals {
            if &approval.path == path
                && let Some(awakeable) = approval.waiter.take()
            {
                effects.push(Effect::Decide {
                    awakeable,
                    decided: Decided {
                        allow: false,
                        message: Some(format!("the approval request was not answered: {why}")),
                    },
                });
            }
        }
    }

    /// How many of `path`'s requests are pending.
    pub(super) fn pending_of(&self, path: &AgentPath) -> usize {
        self.approvals
            .iter()
            .filter(|approval| &approval.path == path && approval.is_pending())
            .count()
    }

    /// Every request as `arbor approvals --json` lists it, in request order.
    pub fn approval_rows(&self) -> Vec<ApprovalRow> {
        self.approvals
            .iter()
            .map(|approval| ApprovalRow {
                id: approval.id.clone(),
                path: approval.path.clone(),
                action: approval.action.clone(),
                outcome: approval.outcome.as_str().to_string(),
                decided_by: approval.decided_by.map(|by| by.as_str().to_string()),
                risk_level: approval.risk_level.clone(),
                rationale: approval.rationale.clone(),
                requested_at: approval.requested_at,
                decided_at: approval.decided_at,
                justification: approval.justification.clone(),
                tokens: None,
                grant: approval.grant.clone(),
            })
            .collect()
    }
}
