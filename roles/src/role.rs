//! The `Role` type, the canonical tool list and the rules every role (built-in or file) obeys.

use std::fmt;
use std::path::PathBuf;

use arbor_protocol::{Isolation, SandboxMode};

/// Every tool arbor can offer a model, in the canonical order used for tool lists (stable across
/// requests for prompt caching). A role's `tools` allow-list may only name these.
pub const TOOL_NAMES: &[&str] = &[
    "spawn_agent",
    "send_message",
    "followup_task",
    "wait_agent",
    "list_agents",
    "close_agent",
    "interrupt_agent",
    "diff_agent",
    "merge_agent",
    "exec_command",
    "apply_patch",
];

/// The canonical name of the tool called `name`, if arbor has one.
pub fn tool_name(name: &str) -> Option<&'static str> {
    TOOL_NAMES.iter().copied().find(|tool| *tool == name)
}

/// The tool that creates children; removed from the list of an agent that cannot spawn.
pub const SPAWN_TOOL: &str = "spawn_agent";

/// The tools that only act on an agent's own children: removed with `spawn_agent` from the list
/// of an agent that cannot spawn, since it never has any.
pub const CHILD_TOOLS: &[&str] = &[SPAWN_TOOL, "diff_agent", "merge_agent"];

/// Reasoning efforts a role may ask for.
pub const REASONING_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// The role used when `spawn_agent` names no `agent_type`.
pub const DEFAULT_ROLE: &str = "default";
/// The read-only question answerer.
pub const EXPLORER_ROLE: &str = "explorer";
/// The role that makes edits.
pub const WORKER_ROLE: &str = "worker";
/// The internal approval reviewer (behaviour §7); never spawnable by a model.
pub const GUARDIAN_ROLE: &str = "guardian";

/// Where a role definition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleSource {
    /// Compiled into arbor.
    BuiltIn,
    /// A `*.toml` file under `$ARBOR_HOME/roles/` or `<workspace>/.arbor/roles/`.
    File(PathBuf),
}

impl fmt::Display for RoleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built-in"),
            Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// One agent role: what an agent of this kind is told and what it may use.
///
/// Every `Option` left `None` means "inherit from the parent"; a role can narrow what the
/// parent has, never widen it (see [`crate::Capabilities::narrow_for`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// `[a-z0-9_]+`; the `agent_type` a model names in `spawn_agent`.
    pub name: String,
    /// One or two sentences shown to the parent model in the `spawn_agent` description.
    pub description: String,
    /// Developer message given to every agent of this role.
    pub developer_instructions: String,
    /// Model override; `None` inherits the parent's model.
    pub model: Option<String>,
    /// Reasoning effort override (one of [`REASONING_EFFORTS`]); `None` inherits.
    pub reasoning_effort: Option<String>,
    /// Tool allow-list in canonical order; `None` allows everything the parent has.
    pub tools: Option<Vec<String>>,
    /// Sandbox ceiling; `None` keeps the parent's sandbox.
    pub sandbox_mode: Option<SandboxMode>,
    /// Nickname pool of this role; `None` uses [`crate::NICKNAMES`].
    pub nickname_candidates: Option<Vec<String>>,
    /// Whether agents of this role may spawn children (still subject to the parent's).
    pub can_spawn: bool,
    /// Where agents of this role work; `None` leaves it to `spawn_agent` and the config's
    /// `worker_isolation`. `worktree` cannot be widened to `shared` by a spawn.
    pub isolation: Option<Isolation>,
    /// Whether an agent's clean changes are merged back into its parent's checkout when its
    /// turn completes; `None` leaves it to the config's `auto_merge`.
    pub auto_merge: Option<bool>,
    /// Built-in or the file that defined it.
    pub source: RoleSource,
}

impl Role {
    /// Whether this role is internal (the guardian): it exists, but a model cannot spawn it.
    pub fn is_internal(&self) -> bool {
        self.name == GUARDIAN_ROLE
    }

    /// The `mcp__…` patterns of the allow-list; `None` when it names none.
    pub fn mcp_patterns(&self) -> Option<Vec<String>> {
        let patterns: Vec<String> = self
            .tools
            .iter()
            .flatten()
            .filter(|tool| tool.starts_with(crate::MCP_PREFIX))
            .cloned()
            .collect();
        (!patterns.is_empty()).then_some(patterns)
    }

    /// Whether the allow-list admits `tool` (always true without an allow-list).
    pub fn allows_tool(&self, tool: &str) -> bool {
        match &self.tools {
            None => true,
            Some(tools) => tools.iter().any(|t| t == tool),
        }
    }

    /// The nickname candidates for agents of this role: its own or the built-in list.
    pub fn nicknames(&self) -> Vec<String> {
        match &self.nickname_candidates {
            Some(names) => names.clone(),
            None => crate::NICKNAMES.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    /// Applies the invariants of internal roles: whatever a file says, the guardian is read-only,
    /// has at most `exec_command`, and cannot spawn (behaviour §7).
    pub(crate) fn clamp_internal(mut self) -> Self {
        if self.is_internal() {
            self.can_spawn = false;
            self.sandbox_mode = Some(SandboxMode::ReadOnly);
            let allowed = self.allows_tool("exec_command");
            let mut tools = if allowed {
                vec!["exec_command".to_owned()]
            } else {
                Vec::new()
            };
            // MCP tools it lists stay: its calls that need approval are refused anyway.
            tools.extend(self.mcp_patterns().unwrap_or_default());
            self.tools = Some(tools);
        }
        self
    }
}

/// Checks a role name: non-empty, only `[a-z0-9_]`.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err("must use only lowercase letters, digits, and underscores".to_owned());
    }
    Ok(())
}

/// Checks a text field that must say something.
pub(crate) fn check_text(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    Ok(())
}

/// Checks a reasoning effort against [`REASONING_EFFORTS`]: the message a role file gets for
/// its `reasoning_effort` field, and `spawn_agent` for its argument.
pub fn check_effort(effort: &str) -> Result<(), String> {
    if REASONING_EFFORTS.contains(&effort) {
        return Ok(());
    }
    Err(format!(
        "unknown value `{effort}`, expected one of {}",
        REASONING_EFFORTS.join(", ")
    ))
}

/// Checks a model name against the configured models (`[models.<name>]` in `config.toml`);
/// every name passes when none are configured.
pub fn check_model<S: AsRef<str>>(model: &str, known: &[S]) -> Result<(), String> {
    if known.is_empty() || known.iter().any(|k| k.as_ref() == model) {
        return Ok(());
    }
    let names: Vec<&str> = known.iter().map(AsRef::as_ref).collect();
    Err(format!(
        "unknown value `{model}`, expected one of {}",
        names.join(", ")
    ))
}

/// Checks a tool allow-list and returns it in canonical order, `mcp__…` patterns last in the
/// order given.
pub(crate) fn check_tools(tools: Vec<String>) -> Result<Vec<String>, String> {
    for (i, tool) in tools.iter().enumerate() {
        if tool.starts_with(crate::MCP_PREFIX) {
            crate::mcp_access::check_pattern(tool)?;
        } else if !TOOL_NAMES.contains(&tool.as_str()) {
            return Err(format!(
                "unknown tool `{tool}`, expected one of {} or an MCP pattern `mcp__SERVER__TOOL`",
                TOOL_NAMES.join(", ")
            ));
        }
        if tools[..i].contains(tool) {
            return Err(format!("duplicate tool `{tool}`"));
        }
    }
    Ok(TOOL_NAMES
        .iter()
        .filter(|canonical| tools.iter().any(|t| t == *canonical))
        .map(|t| (*t).to_owned())
        .chain(
            tools
                .iter()
                .filter(|t| t.starts_with(crate::MCP_PREFIX))
                .cloned(),
        )
        .collect())
}

/// Checks a nickname list: non-empty, no blank, padded or duplicate names.
pub(crate) fn check_nicknames(names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Err("must not be empty".to_owned());
    }
    for (i, name) in names.iter().enumerate() {
        if name.trim().is_empty() {
            return Err("names must not be blank".to_owned());
        }
        if name.trim() != name {
            return Err(format!("name `{name}` has leading or trailing whitespace"));
        }
        if names[..i].contains(name) {
            return Err(format!("duplicate name `{name}`"));
        }
    }
    Ok(())
}
