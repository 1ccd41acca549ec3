//! The fail-closed mapping: a review result becomes a decision, and every decision that does
//! not allow gets its fixed model-facing sentence.
//!
//! Retry policy: only availability failures (timeout, 429, 5xx, transport) get the one retry of
//! behaviour §7. A malformed verdict or a reviewer error is the reviewer's answer, not a missing
//! one; asking again would only repeat it, so it denies at once.

use std::fmt;

use arbor_protocol::text::truncate_middle;

use crate::verdict::{RiskLevel, UserAuthorization, Verdict, VerdictError, VerdictOutcome};

/// Review deadline when the configuration sets none (behaviour §7).
pub const DEFAULT_REVIEW_DEADLINE_SECS: u64 = 90;
/// Retries after an availability failure, per review.
pub const AVAILABILITY_RETRIES: u32 = 1;
/// Longest failure reason kept in a decision, middle-truncated.
pub const MAX_REASON_BYTES: usize = 1_000;
/// Longest rationale kept in a decision, middle-truncated.
pub const MAX_RATIONALE_BYTES: usize = 2_000;

/// Starts the model-facing result of a guardian denial.
pub const DENIED_SENTENCE: &str = "This action was rejected due to unacceptable risk.";
/// Starts the model-facing result of a review that could not complete.
pub const REVIEW_UNAVAILABLE_SENTENCE: &str =
    "Automatic approval review could not complete, so this action was blocked.";
/// The model-facing result when nobody answered an approval request.
pub const NO_APPROVER_SENTENCE: &str =
    "This action needs approval and no approver is available, so it was not run.";
/// The model-facing result under approval policy `never`.
pub const POLICY_NEVER_SENTENCE: &str = "This action needs approval, which the approval policy 'never' does not allow, so it was not run.";

/// Why a review produced no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewFailure {
    /// The review deadline passed.
    Timeout,
    /// The provider answered 429.
    RateLimited,
    /// The provider answered with this HTTP status.
    ServerError(u16),
    /// The connection failed.
    Transport(String),
    /// The reviewer answered, but not with a verdict.
    Malformed(String),
    /// The reviewer agent failed otherwise (its turn errored, its context overflowed, …).
    ReviewerError(String),
}

impl ReviewFailure {
    /// Whether the failure is about reaching the reviewer rather than its answer: timeouts,
    /// 429, 5xx and transport errors. A `ServerError` outside 5xx (and not 429) is not: the
    /// same request would fail again.
    pub fn is_availability(&self) -> bool {
        match self {
            Self::Timeout | Self::RateLimited | Self::Transport(_) => true,
            Self::ServerError(status) => *status == 429 || (500..=599).contains(status),
            Self::Malformed(_) | Self::ReviewerError(_) => false,
        }
    }

    /// Whether another attempt is allowed after `retries_done` retries of this review.
    pub fn may_retry(&self, retries_done: u32) -> bool {
        self.is_availability() && retries_done < AVAILABILITY_RETRIES
    }
}

impl fmt::Display for ReviewFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout => f.write_str("review timed out"),
            Self::RateLimited => f.write_str("reviewer rate limited (429)"),
            Self::ServerError(status) => write!(f, "reviewer server error {status}"),
            Self::Transport(reason) => write!(f, "transport error: {reason}"),
            Self::Malformed(reason) => write!(f, "malformed verdict: {reason}"),
            Self::ReviewerError(reason) => write!(f, "reviewer error: {reason}"),
        }
    }
}

impl From<VerdictError> for ReviewFailure {
    fn from(error: VerdictError) -> Self {
        match error {
            VerdictError::Malformed(reason) => Self::Malformed(reason),
        }
    }
}

/// What happens to the action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionOutcome {
    Allow,
    /// The guardian judged the risk unacceptable.
    Deny,
    /// No verdict: the action is denied, and recorded as `review_unavailable: <reason>`.
    ReviewUnavailable(String),
}

/// The outcome of one review, with the guardian's assessment when it gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub outcome: DecisionOutcome,
    pub risk_level: Option<RiskLevel>,
    pub rationale: Option<String>,
    pub user_authorization: Option<UserAuthorization>,
}

impl Decision {
    /// Whether the action may run.
    pub fn is_allowed(&self) -> bool {
        matches!(self.outcome, DecisionOutcome::Allow)
    }

    /// Whether the review failed (so, where a human is reachable, the request goes to them).
    pub fn is_review_unavailable(&self) -> bool {
        matches!(self.outcome, DecisionOutcome::ReviewUnavailable(_))
    }

    /// The outcome as stored in the approval log: `allow`, `deny` or
    /// `review_unavailable: <reason>`.
    pub fn recorded_outcome(&self) -> String {
        match &self.outcome {
            DecisionOutcome::Allow => "allow".into(),
            DecisionOutcome::Deny => "deny".into(),
            DecisionOutcome::ReviewUnavailable(reason) => format!("review_unavailable: {reason}"),
        }
    }

    /// The text the requesting model reads instead of the action's result; `None` when the
    /// action may run.
    pub fn model_message(&self) -> Option<String> {
        match &self.outcome {
            DecisionOutcome::Allow => None,
            DecisionOutcome::Deny => Some(denied_message(self.rationale.as_deref())),
            DecisionOutcome::ReviewUnavailable(reason) => Some(unavailable_message(reason)),
        }
    }
}

/// Maps a review result to a decision. Fails closed: only a verdict whose outcome is `allow`
/// allows; every failure denies as [`DecisionOutcome::ReviewUnavailable`], never as a risk
/// denial, and carries no risk level.
pub fn decide(result: Result<Verdict, ReviewFailure>) -> Decision {
    match result {
        Ok(verdict) => Decision {
            outcome: match verdict.outcome {
                VerdictOutcome::Allow => DecisionOutcome::Allow,
                VerdictOutcome::Deny => DecisionOutcome::Deny,
            },
            risk_level: verdict.risk_level,
            rationale: verdict
                .rationale
                .map(|text| text.trim().to_string())
                .filter(|text| !text.is_empty())
                .map(|text| truncate_middle(&text, MAX_RATIONALE_BYTES)),
            user_authorization: verdict.user_authorization,
        },
        Err(failure) => Decision {
            outcome: DecisionOutcome::ReviewUnavailable(truncate_middle(
                &failure.to_string(),
                MAX_REASON_BYTES,
            )),
            risk_level: None,
            rationale: None,
            user_authorization: None,
        },
    }
}

/// The model-facing result of a guardian denial: [`DENIED_SENTENCE`], then the rationale.
pub fn denied_message(rationale: Option<&str>) -> String {
    match rationale {
        Some(rationale) => format!("{DENIED_SENTENCE} Reason: {rationale}"),
        None => DENIED_SENTENCE.to_string(),
    }
}

/// The model-facing result of a failed review: [`REVIEW_UNAVAILABLE_SENTENCE`], then the reason.
pub fn unavailable_message(reason: &str) -> String {
    format!("{REVIEW_UNAVAILABLE_SENTENCE} Reason: {reason}")
}

/// The model-facing result when nobody answered: [`NO_APPROVER_SENTENCE`].
pub fn no_approver_message() -> String {
    NO_APPROVER_SENTENCE.to_string()
}

/// The model-facing result under approval policy `never`: [`POLICY_NEVER_SENTENCE`].
pub fn policy_never_message() -> String {
    POLICY_NEVER_SENTENCE.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(outcome: VerdictOutcome, rationale: Option<&str>) -> Verdict {
        Verdict {
            outcome,
            risk_level: Some(RiskLevel::High),
            user_authorization: Some(UserAuthorization::Low),
            rationale: rationale.map(str::to_string),
        }
    }

    /// Compares a decision's recorded outcome and model-facing text.
    fn check(decision: Decision, recorded: &str, message: Option<&str>) {
        assert_eq!(decision.recorded_outcome(), recorded);
        assert_eq!(decision.model_message().as_deref(), message);
        assert_eq!(decision.is_allowed(), message.is_none());
    }

    #[test]
    fn an_allow_allows() {
        check(
            decide(Ok(verdict(VerdictOutcome::Allow, Some("reads a file")))),
            "allow",
            None,
        );
        let decision = decide(Ok(verdict(
            VerdictOutcome::Allow,
            Some("  reads a file \n"),
        )));
        assert_eq!(decision.risk_level, Some(RiskLevel::High));
        assert_eq!(decision.user_authorization, Some(UserAuthorization::Low));
        assert_eq!(decision.rationale.as_deref(), Some("reads a file"));
    }

    #[test]
    fn a_deny_is_a_risk_denial() {
        check(
            decide(Ok(verdict(
                VerdictOutcome::Deny,
                Some("it deletes the home directory"),
            ))),
            "deny",
            Some(
                "This action was rejected due to unacceptable risk. Reason: it deletes the home directory",
            ),
        );
        check(
            decide(Ok(verdict(VerdictOutcome::Deny, Some("  ")))),
            "deny",
            Some("This action was rejected due to unacceptable risk."),
        );
        check(
            decide(Ok(verdict(VerdictOutcome::Deny, None))),
            "deny",
            Some("This action was rejected due to unacceptable risk."),
        );
    }

    #[test]
    fn every_failure_denies_as_review_unavailable() {
        let cases = [
            (ReviewFailure::Timeout, "review timed out"),
            (ReviewFailure::RateLimited, "reviewer rate limited (429)"),
            (ReviewFailure::ServerError(503), "reviewer server error 503"),
            (ReviewFailure::ServerError(400), "reviewer server error 400"),
            (
                ReviewFailure::Transport("connection reset".into()),
                "transport error: connection reset",
            ),
            (
                ReviewFailure::Malformed("missing field `outcome`".into()),
                "malformed verdict: missing field `outcome`",
            ),
            (
                ReviewFailure::ReviewerError("context window exceeded".into()),
                "reviewer error: context window exceeded",
            ),
        ];
        for (failure, reason) in cases {
            let decision = decide(Err(failure));
            assert!(decision.is_review_unavailable());
            assert_eq!(decision.risk_level, None, "{reason}: never a risk denial");
            assert_eq!(decision.rationale, None);
            check(
                decision,
                &format!("review_unavailable: {reason}"),
                Some(&format!(
                    "Automatic approval review could not complete, so this action was blocked. Reason: {reason}"
                )),
            );
        }
    }

    #[test]
    fn a_malformed_verdict_maps_through_from() {
        let failure = ReviewFailure::from(VerdictError::Malformed("empty reviewer answer".into()));
        assert_eq!(
            decide(Err(failure)).recorded_outcome(),
            "review_unavailable: malformed verdict: empty reviewer answer"
        );
    }

    #[test]
    fn long_reasons_and_rationales_are_bounded() {
        let long = "x".repeat(50_000);
        let decision = decide(Err(ReviewFailure::Transport(long.clone())));
        assert!(decision.recorded_outcome().len() < MAX_REASON_BYTES + 100);
        let decision = decide(Ok(verdict(VerdictOutcome::Deny, Some(&long))));
        let rationale = decision.rationale.unwrap_or_default();
        assert!(rationale.len() < MAX_RATIONALE_BYTES + 100);
        assert!(rationale.contains("bytes truncated]"));
    }

    #[test]
    fn availability_classification() {
        for (failure, availability) in [
            (ReviewFailure::Timeout, true),
            (ReviewFailure::RateLimited, true),
            (ReviewFailure::ServerError(429), true),
            (ReviewFailure::ServerError(500), true),
            (ReviewFailure::ServerError(503), true),
            (ReviewFailure::ServerError(599), true),
            (ReviewFailure::ServerError(400), false),
            (ReviewFailure::ServerError(401), false),
            (ReviewFailure::ServerError(600), false),
            (ReviewFailure::Transport("dns".into()), true),
            (ReviewFailure::Malformed("bad".into()), false),
            (ReviewFailure::ReviewerError("boom".into()), false),
        ] {
            assert_eq!(failure.is_availability(), availability, "{failure:?}");
            assert_eq!(failure.may_retry(0), availability, "{failure:?}");
            assert!(!failure.may_retry(1), "{failure:?}: one retry only");
        }
    }

    #[test]
    fn the_fixed_sentences_are_exact() {
        assert_eq!(
            no_approver_message(),
            "This action needs approval and no approver is available, so it was not run."
        );
        assert_eq!(
            policy_never_message(),
            "This action needs approval, which the approval policy 'never' does not allow, so it was not run."
        );
        assert!(
            denied_message(Some("r"))
                .starts_with("This action was rejected due to unacceptable risk.")
        );
        assert!(unavailable_message("r").starts_with(
            "Automatic approval review could not complete, so this action was blocked."
        ));
    }
}
