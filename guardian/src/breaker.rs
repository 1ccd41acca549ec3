//! The denial breaker: after three consecutive denials in one agent turn, the next approval
//! request goes to the human, or, headless, the turn is interrupted.
//!
//! Every decision that does not allow counts as a denial, a failed review included: an agent
//! that keeps asking while the guardian is down needs a human as much as one that keeps being
//! refused. A decision the human makes after a hand-off is recorded too, so a human allow
//! returns the agent to the guardian and a human deny keeps it with the human.

use std::collections::HashMap;
use std::hash::Hash;

use crate::outcome::{Decision, DecisionOutcome};

/// Consecutive denials in one agent turn after which the guardian stops reviewing.
pub const MAX_CONSECUTIVE_DENIALS: u32 = 3;

/// Who handles an agent's next approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerVerdict {
    /// The guardian reviews it.
    Review,
    /// A human answers it.
    HandToHuman,
    /// No human is reachable: interrupt the agent's turn instead.
    InterruptTurn,
}

/// Consecutive denials per agent, within that agent's current turn. `K` is whatever names an
/// agent for the caller (a thread id or an agent path).
#[derive(Debug, Clone)]
pub struct DenialBreaker<K> {
    /// Per agent: the turn the count belongs to, and the count.
    streaks: HashMap<K, (u64, u32)>,
}

impl<K: Eq + Hash> Default for DenialBreaker<K> {
    fn default() -> Self {
        Self {
            streaks: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> DenialBreaker<K> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a decision on a request made in `turn` of `agent`: an allow resets the count,
    /// anything else adds one; a decision from a new turn starts a new count.
    pub fn record(&mut self, agent: K, turn: u64, decision: &Decision) {
        match decision.outcome {
            DecisionOutcome::Allow => {
                self.streaks.remove(&agent);
            }
            DecisionOutcome::Deny | DecisionOutcome::ReviewUnavailable(_) => {
                let streak = self.streaks.entry(agent).or_insert((turn, 0));
                if streak.0 != turn {
                    *streak = (turn, 0);
                }
                streak.1 = streak.1.saturating_add(1);
            }
        }
    }

    /// Who handles `agent`'s next request in `turn`.
    pub fn check(&self, agent: &K, turn: u64, human_reachable: bool) -> BreakerVerdict {
        if self.consecutive_denials(agent, turn) < MAX_CONSECUTIVE_DENIALS {
            BreakerVerdict::Review
        } else if human_reachable {
            BreakerVerdict::HandToHuman
        } else {
            BreakerVerdict::InterruptTurn
        }
    }

    /// Consecutive denials of `agent` in `turn` so far.
    pub fn consecutive_denials(&self, agent: &K, turn: u64) -> u32 {
        match self.streaks.get(agent) {
            Some(&(streak_turn, count)) if streak_turn == turn => count,
            _ => 0,
        }
    }

    /// Drops what is known of `agent`, e.g. when it closes.
    pub fn forget(&mut self, agent: &K) {
        self.streaks.remove(agent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use BreakerVerdict::*;

    fn decision(outcome: DecisionOutcome) -> Decision {
        Decision {
            outcome,
            risk_level: None,
            rationale: None,
            user_authorization: None,
        }
    }

    /// Runs `steps` on one breaker. A step is `"allow@T"`, `"deny@T"`, `"fail@T"` (recorded
    /// in turn T of agent `a`) or `"check@T"`; each check's verdict, with and without a
    /// reachable human, is collected.
    fn check(steps: &[&str], expect: &[(BreakerVerdict, BreakerVerdict)]) {
        let mut breaker = DenialBreaker::new();
        let mut got = Vec::new();
        for step in steps {
            let (what, turn) = step.split_once('@').unwrap_or((step, "1"));
            let turn: u64 = turn.parse().unwrap_or_else(|_| panic!("bad step {step}"));
            match what {
                "allow" => breaker.record("a", turn, &decision(DecisionOutcome::Allow)),
                "deny" => breaker.record("a", turn, &decision(DecisionOutcome::Deny)),
                "fail" => breaker.record(
                    "a",
                    turn,
                    &decision(DecisionOutcome::ReviewUnavailable(
                        "review timed out".into(),
                    )),
                ),
                "check" => got.push((
                    breaker.check(&"a", turn, true),
                    breaker.check(&"a", turn, false),
                )),
                other => panic!("bad step {other}"),
            }
        }
        assert_eq!(got, expect, "{steps:?}");
    }

    #[test]
    fn three_denials_hand_over_or_interrupt() {
        check(&["deny@1", "deny@1", "check@1"], &[(Review, Review)]);
        check(
            &["deny@1", "deny@1", "deny@1", "check@1"],
            &[(HandToHuman, InterruptTurn)],
        );
        check(
            &["deny@1", "fail@1", "deny@1", "check@1"],
            &[(HandToHuman, InterruptTurn)],
        );
    }

    #[test]
    fn an_allow_resets_the_count() {
        check(
            &["deny@1", "deny@1", "allow@1", "deny@1", "deny@1", "check@1"],
            &[(Review, Review)],
        );
        check(
            &["deny@1", "deny@1", "deny@1", "allow@1", "check@1"],
            &[(Review, Review)],
        );
    }

    #[test]
    fn a_new_turn_resets_the_count() {
        check(
            &["deny@1", "deny@1", "deny@1", "check@2"],
            &[(Review, Review)],
        );
        check(
            &[
                "deny@1", "deny@1", "deny@2", "deny@2", "check@2", "deny@2", "check@2",
            ],
            &[(Review, Review), (HandToHuman, InterruptTurn)],
        );
    }

    #[test]
    fn a_human_deny_keeps_the_agent_with_the_human() {
        check(
            &["deny@1", "deny@1", "deny@1", "deny@1", "check@1"],
            &[(HandToHuman, InterruptTurn)],
        );
    }

    #[test]
    fn agents_are_counted_apart() {
        let mut breaker = DenialBreaker::new();
        let deny = decision(DecisionOutcome::Deny);
        for _ in 0..3 {
            breaker.record("a", 1, &deny);
        }
        breaker.record("b", 1, &deny);
        assert_eq!(breaker.check(&"a", 1, true), HandToHuman);
        assert_eq!(breaker.check(&"b", 1, true), Review);
        assert_eq!(breaker.consecutive_denials(&"b", 1), 1);
        breaker.forget(&"a");
        assert_eq!(breaker.check(&"a", 1, false), Review);
    }
}
