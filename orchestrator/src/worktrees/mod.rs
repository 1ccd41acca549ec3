//! Agents that work in a git worktree of their own (`isolation = "worktree"`, behaviour
//! "beyond"): a new branch `arbor/<session short id>/<name>` from the parent's current state
//! under `$ARBOR_HOME/worktrees/<session>/<name>`, the agent's cwd and the writable root of its
//! sandbox (the checkouts it forked from stay read-only to it); what it changed, as a summary
//! in its result mail and in `list_agents`; `diff_agent` and `merge_agent` for its parent; the
//! merge at turn end with `auto_merge`; the worktree removed at close when nothing is unmerged,
//! kept (with its branch) when something is. Git itself is `arbor-worktree`'s.
//!
//! Facts are lines of the agent's own (`worktree`: created, merged, removed), written with its
//! header and projected into the store like any other line, so resume, readers and other
//! processes see the same worktrees.
//!
//! The rest of the orchestrator names the module it needs (`worktree` the type, `hooks` what
//! resume, revival, the gate and the work tools ask, `spawn`, `merge`, `close`, `summary`,
//! `tools`); this file only declares them.

pub(crate) mod close;
pub(crate) mod hooks;
mod isolation;
pub(crate) mod merge;
pub mod orphans;
pub mod outside;
pub mod repository;
pub(crate) mod spawn;
pub(crate) mod summary;
pub(crate) mod tools;
pub(crate) mod worktree;
