//! Agent roles: the built-ins (`default`, `explorer`, `worker`, `guardian`), TOML role files
//! and the narrowing rules that keep a role from widening what its parent has.
//!
//! Pure data: no runtime, no I/O beyond reading role files in [`RoleSet::load`].
//!
//! # Role files
//!
//! A role is a TOML file with the keys of [`ROLE_FIELDS`]: `name`, `description` and
//! `developer_instructions` are required; `model`, `reasoning_effort`, `tools`,
//! `sandbox_mode`, `nickname_candidates`, `can_spawn`, `isolation` (`shared` or `worktree`) and
//! `auto_merge` are optional, and absent means "inherit from the parent" (`can_spawn` absent is
//! `true`, which still needs the parent's; `isolation` and `auto_merge` absent leave it to the
//! config). Unknown keys
//! are rejected. Files are read from `$ARBOR_HOME/roles/*.toml`, then
//! `<workspace>/.arbor/roles/*.toml`; the workspace wins over home, both over built-ins of the
//! same name. Every error names the file and, where there is one, the field.
//!
//! # Narrowing
//!
//! [`Capabilities::narrow_for`] gives a child the intersection of its parent's tools and its
//! role's allow-list, the stricter sandbox, and spawning only if both allow it; the approval
//! policy is inherited unchanged. **Invariant:** a child's capabilities are never wider than its
//! parent's, whatever the role says.
//!
//! Tool list choice (behaviour §5): the list depends only on the role chain, never on runtime
//! state, so it is stable across requests. A role removes tools through its allow-list, and a
//! role that cannot spawn (`can_spawn = false`, or a parent that cannot) loses `spawn_agent`
//! too. A tool that fails only because of runtime state (spawning at max depth) stays in the list
//! and returns its error.
//!
//! # MCP tools
//!
//! A `tools` allow-list may also name MCP tools with `mcp__…` globs; see [`McpGate`] for how
//! they narrow along the tree and what read-only agents get.
//!
//! # The guardian
//!
//! `guardian` is internal: [`RoleSet::for_spawn`] refuses it and [`RoleSet::spawnable`] leaves
//! it out. A file may redefine it (instructions, model, description), but it stays read-only,
//! with at most `exec_command`, and cannot spawn.
//!
//! # Nicknames
//!
//! [`NicknamePool`] draws from a role's `nickname_candidates` or the built-in [`NICKNAMES`]
//! without replacement, with a caller-seeded splitmix64, and restarts with ordinals
//! (`Plato the 2nd`) when used up.

mod builtin;
mod caps;
mod error;
mod file;
mod mcp_access;
mod nickname;
mod role;
mod set;

pub use builtin::builtin_roles;
pub use caps::Capabilities;
pub use error::RoleError;
pub use file::ROLE_FIELDS;
pub use mcp_access::{MCP_PREFIX, McpGate, glob};
pub use nickname::{NICKNAMES, NicknamePool, ordinal, ordinal_suffix};
pub use role::{
    CHILD_TOOLS, DEFAULT_ROLE, EXPLORER_ROLE, GUARDIAN_ROLE, REASONING_EFFORTS, Role, RoleSource,
    SPAWN_TOOL, TOOL_NAMES, WORKER_ROLE, check_effort, check_model, tool_name,
};
pub use set::RoleSet;
