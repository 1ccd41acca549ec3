//! Guardian review: the bounded review request, verdict parsing, the fail-closed mapping and
//! the denial breaker. No I/O: the orchestrator runs the reviewer agent, the deadline and the
//! retries.
//!
//! The flow, as the orchestrator drives it (behaviour §7):
//! 1. build a [`ReviewRequest`] and send [`ReviewRequest::render`] to `/root/guardian`, whose
//!    developer instructions are [`GUARDIAN_INSTRUCTIONS`];
//! 2. parse its answer with [`parse_verdict`], or report a [`ReviewFailure`] (retrying once when
//!    [`ReviewFailure::is_availability`]);
//! 3. map the result with [`decide`]: anything but an explicit allow denies;
//! 4. feed the [`Decision`] to the [`DenialBreaker`], which hands the next request to the human
//!    (or interrupts the turn) after three consecutive denials.

mod breaker;
mod budget;
mod instructions;
mod outcome;
mod request;
mod transcript;
mod verdict;

pub use breaker::{BreakerVerdict, DenialBreaker, MAX_CONSECUTIVE_DENIALS};
pub use budget::{
    ACTION_STRING_TOKENS, ACTION_TOKENS, BYTES_PER_TOKEN, Budgets, FRAME_MAX_BYTES,
    JUSTIFICATION_TOKENS, MESSAGE_ENTRY_TOKENS, MESSAGE_TOKENS, ROOT_TASK_TOKENS,
    TOOL_ENTRY_TOKENS, TOOL_TOKENS, estimate_tokens, tokens_to_bytes,
};
pub use instructions::{GUARDIAN_INSTRUCTIONS, VERDICT_FORMAT};
pub use outcome::{
    AVAILABILITY_RETRIES, DEFAULT_REVIEW_DEADLINE_SECS, DENIED_SENTENCE, Decision, DecisionOutcome,
    MAX_RATIONALE_BYTES, MAX_REASON_BYTES, NO_APPROVER_SENTENCE, POLICY_NEVER_SENTENCE,
    REVIEW_UNAVAILABLE_SENTENCE, ReviewFailure, decide, denied_message, no_approver_message,
    policy_never_message, unavailable_message,
};
pub use request::ReviewRequest;
pub use verdict::{
    RiskLevel, UserAuthorization, Verdict, VerdictError, VerdictOutcome, parse_verdict,
};

#[cfg(test)]
mod tests {
    /// Every module says what it is for on its first line.
    #[test]
    fn every_module_starts_with_a_doc_line() {
        let sources = [
            ("lib.rs", include_str!("lib.rs")),
            ("breaker.rs", include_str!("breaker.rs")),
            ("budget.rs", include_str!("budget.rs")),
            ("instructions.rs", include_str!("instructions.rs")),
            ("outcome.rs", include_str!("outcome.rs")),
            ("request.rs", include_str!("request.rs")),
            ("request/tests.rs", include_str!("request/tests.rs")),
            ("transcript.rs", include_str!("transcript.rs")),
            ("verdict.rs", include_str!("verdict.rs")),
        ];
        for (name, text) in sources {
            assert!(text.starts_with("//! "), "{name} lacks a //! line");
            assert!(text.lines().count() <= 500, "{name} is over 500 lines");
        }
    }
}
