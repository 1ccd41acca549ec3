//! Approvals and the sandbox for `exec_command` (behaviour §7, §8): the command policy decides
//! whether a command runs in the agent's sandbox, never runs, or needs approval; requests from
//! any depth go to the session's one broker, where only the requester waits for the user (at
//! the terminal or from another process) or the guardian.
//!
//! Order of checks: a `forbidden` rule refuses; a command that needs no approval runs in the
//! sandbox; the guardian may not ask; policy `never` refuses; a user's approval for the session
//! or an override from `arbor approve` lets it through; otherwise the reviewer decides. An
//! approved escalation runs outside the sandbox, any other approved command inside it.

mod broker;
mod gate;
mod guardian;
mod human;
mod ledger;
mod mcp;
mod merge;
mod need;
mod patch;
mod prompt;
mod request;
mod review;
mod session_answer;
pub(crate) mod state;
mod waiters;
mod watch;

pub(crate) use broker::override_line;
pub use gate::gate_exec;
pub use human::restore;
pub use mcp::gate_mcp;
pub use merge::{PlannedMerge, gate_merge};
pub use need::{FORBIDDEN_SENTENCE, GUARDIAN_CANNOT_ASK_SENTENCE, record_key};
pub use patch::gate_patch;
pub use prompt::{ApprovalPrompt, TerminalAnswer, action_diff};
pub use session_answer::approve_for_session;
pub use watch::answered;
