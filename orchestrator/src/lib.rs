//! The arbor runtime: the `Orchestrator` facade (`facade.rs`), the session task that owns the
//! session's state (`session/`), one task per resident agent running its turns (`turn/`), the
//! multi-agent and work tools (`tools/`), worktree agents (`worktrees/`), mail (`mail.rs`), the
//! approval gate with its broker (`approval/`), the session's files (`open.rs`, `projection.rs`,
//! `durability.rs`) and lease.
//!
//! **API Boundary:** `Orchestrator` is what the CLI and the tests drive; everything else is
//! internal.

mod agent;
mod approval;
mod compaction;
pub mod config;
mod ctx;
mod durability;
pub mod engine;
mod error;
mod events;
mod external;
mod facade;
mod import;
pub mod lease;
mod legacy;
mod lifecycle;
mod mail;
mod mcp_servers;
pub mod open;
mod project_docs;
mod projection;
mod registry;
mod resume;
pub mod retention;
mod sampling;
mod session;
mod tools;
mod turn;
mod worktrees;

pub use crate::approval::{
    ApprovalPrompt, FORBIDDEN_SENTENCE, GUARDIAN_CANNOT_ASK_SENTENCE, TerminalAnswer, action_diff,
};
pub use crate::compaction::{COMPACTION_PROMPT, CompactReport, SUMMARY_HEADER};
pub use crate::config::RunConfig;
pub use crate::durability::LogTotals;
pub use crate::error::OrchestratorError;
pub use crate::external::{
    ExternalAnswer, SentExternal, answer_external, answer_external_with, close_external,
    interrupt_external, send_external,
};
pub use crate::facade::{AgentView, Orchestrator, SHUTDOWN_GRACE, session_runtime};
pub use crate::import::import_session;
pub use crate::lease::Lease;
pub use crate::open::{SessionView, find_root, session_name};
pub use crate::resume::ResumeInfo;
/// Every built-in tool as the model sees it: what scripts are checked against, and what
/// `docs/tools.md` is generated from.
pub use crate::tools::specs::builtin as tool_specs;
/// Worktrees seen from other processes (`arbor diff`, `merge`, `tree`, `close`) and orphan
/// worktrees (`arbor doctor`, `arbor gc`).
pub use crate::worktrees::{orphans, outside};
pub use arbor_tools::SandboxStatus;
