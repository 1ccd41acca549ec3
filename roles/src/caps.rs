//! `Capabilities`: what an agent may use, and how a role narrows its parent's set for a child.

use arbor_protocol::{ApprovalPolicy, SandboxMode};

use crate::mcp_access::McpGate;
use crate::role::{CHILD_TOOLS, Role, TOOL_NAMES};

/// The effective tools, sandbox, spawning right and approval policy of one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Tool names offered to the model, in canonical ([`TOOL_NAMES`]) order.
    pub tools: Vec<&'static str>,
    pub sandbox: SandboxMode,
    pub can_spawn: bool,
    pub approval_policy: ApprovalPolicy,
    /// What every role from the root down says about MCP tools; all must admit a tool.
    pub mcp: Vec<McpGate>,
}

impl Capabilities {
    /// The root agent's capabilities: every tool, spawning allowed, the session's sandbox and
    /// approval policy.
    pub fn root(sandbox: SandboxMode, approval_policy: ApprovalPolicy) -> Self {
        Self {
            tools: TOOL_NAMES.to_vec(),
            sandbox,
            can_spawn: true,
            approval_policy,
            mcp: Vec::new(),
        }
    }

    /// The capabilities of a child of this agent that runs `role`. Only ever narrower:
    /// - tools: this agent's tools that the role's allow-list admits, in canonical order, minus
    ///   `spawn_agent`, `diff_agent` and `merge_agent` when the child cannot spawn;
    /// - sandbox: the stricter of this agent's and the role's;
    /// - spawning: only if both this agent and the role may;
    /// - approval policy: inherited unchanged (roles have no say in it).
    pub fn narrow_for(&self, role: &Role) -> Capabilities {
        let can_spawn = self.can_spawn && role.can_spawn;
        let tools = TOOL_NAMES
            .iter()
            .filter(|tool| self.has_tool(tool) && role.allows_tool(tool))
            .filter(|tool| can_spawn || !CHILD_TOOLS.contains(tool))
            .copied()
            .collect();
        let sandbox = match role.sandbox_mode {
            Some(mode) => self.sandbox.narrowest(mode),
            None => self.sandbox,
        };
        let mut mcp = self.mcp.clone();
        mcp.push(McpGate {
            patterns: role.mcp_patterns(),
            read_only: sandbox == SandboxMode::ReadOnly,
        });
        Capabilities {
            tools,
            sandbox,
            can_spawn,
            approval_policy: self.approval_policy,
            mcp,
        }
    }

    /// Whether the MCP tool `name` is offered (`read_only`: its server marks it so).
    pub fn admits_mcp(&self, name: &str, read_only: bool) -> bool {
        self.mcp.iter().all(|gate| gate.admits(name, read_only))
    }

    /// Whether some tool of the MCP server `server` could be offered.
    pub fn may_use_mcp_server(&self, server: &str) -> bool {
        self.mcp.iter().all(|gate| gate.may_admit_server(server))
    }

    /// Whether `tool` is offered.
    pub fn has_tool(&self, tool: &str) -> bool {
        self.tools.contains(&tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RoleSet;

    fn role(tools: Option<&[&str]>, sandbox: Option<SandboxMode>, can_spawn: bool) -> Role {
        let mut role = RoleSet::builtin().get("default").expect("default").clone();
        role.tools = tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect());
        role.sandbox_mode = sandbox;
        role.can_spawn = can_spawn;
        role
    }

    fn root() -> Capabilities {
        Capabilities::root(SandboxMode::WorkspaceWrite, ApprovalPolicy::OnRequest)
    }

    #[test]
    fn root_has_every_tool() {
        let root = root();
        assert_eq!(root.tools, TOOL_NAMES);
        assert!(root.can_spawn);
    }

    #[test]
    fn sandbox_never_widens() {
        use SandboxMode::*;
        // (parent, role, child)
        let cases = [
            (ReadOnly, Some(DangerFullAccess), ReadOnly),
            (ReadOnly, None, ReadOnly),
            (WorkspaceWrite, Some(DangerFullAccess), WorkspaceWrite),
            (WorkspaceWrite, Some(ReadOnly), ReadOnly),
            (DangerFullAccess, Some(WorkspaceWrite), WorkspaceWrite),
            (DangerFullAccess, None, DangerFullAccess),
        ];
        for (parent, role_mode, child) in cases {
            let parent = Capabilities::root(parent, ApprovalPolicy::Untrusted);
            let narrowed = parent.narrow_for(&role(None, role_mode, true));
            assert_eq!(narrowed.sandbox, child, "{parent:?} {role_mode:?}");
            assert_eq!(narrowed.approval_policy, ApprovalPolicy::Untrusted);
        }
    }

    #[test]
    fn tools_never_widen() {
        let mut parent = root();
        parent.tools.retain(|t| *t != "apply_patch");
        let child = parent.narrow_for(&role(Some(&["apply_patch", "exec_command"]), None, true));
        assert_eq!(child.tools, ["exec_command"]);
        // No allow-list: exactly the parent's tools.
        let child = parent.narrow_for(&role(None, None, true));
        assert_eq!(child.tools, parent.tools);
    }

    #[test]
    fn tools_keep_canonical_order() {
        let child = root().narrow_for(&role(
            Some(&["apply_patch", "list_agents", "spawn_agent"]),
            None,
            true,
        ));
        assert_eq!(child.tools, ["spawn_agent", "list_agents", "apply_patch"]);
    }

    #[test]
    fn spawning_needs_parent_and_role() {
        for (parent_spawns, role_spawns) in [(true, true), (true, false), (false, true)] {
            let mut parent = root();
            parent.can_spawn = parent_spawns;
            let child = parent.narrow_for(&role(None, None, role_spawns));
            let expect = parent_spawns && role_spawns;
            assert_eq!(child.can_spawn, expect);
            assert_eq!(child.has_tool("spawn_agent"), expect);
            assert!(child.has_tool("wait_agent"));
        }
    }

    #[test]
    fn builtin_roles_from_root() {
        let set = RoleSet::builtin();
        let narrow = |name: &str| root().narrow_for(set.get(name).expect("role"));

        let explorer = narrow("explorer");
        assert!(!explorer.has_tool("apply_patch"));
        assert!(!explorer.has_tool("spawn_agent"));
        assert!(explorer.has_tool("exec_command"));
        assert_eq!(explorer.sandbox, SandboxMode::ReadOnly);
        assert!(!explorer.can_spawn);

        let worker = narrow("worker");
        assert_eq!(worker.tools, TOOL_NAMES);
        assert_eq!(worker.sandbox, SandboxMode::WorkspaceWrite);

        let guardian = narrow("guardian");
        assert_eq!(guardian.tools, ["exec_command"]);
        assert_eq!(guardian.sandbox, SandboxMode::ReadOnly);
        assert!(!guardian.can_spawn);

        // A worker's explorer child is no wider than the explorer itself.
        let grandchild = narrow("worker").narrow_for(set.get("explorer").expect("explorer"));
        assert_eq!(grandchild.tools, explorer.tools);
        assert_eq!(grandchild.sandbox, explorer.sandbox);
        assert!(!grandchild.admits_mcp("mcp__fs__write_file", false));
        assert!(grandchild.admits_mcp("mcp__fs__read_file", true));
    }

    #[test]
    fn mcp_tools_narrow_down_the_tree() {
        let root = root();
        assert!(root.admits_mcp("mcp__fs__write_file", false));
        // A role that lists only fs tools: nothing else, read-only or not.
        let fs_only = root.narrow_for(&role(Some(&["exec_command", "mcp__fs__*"]), None, true));
        assert!(fs_only.admits_mcp("mcp__fs__write_file", false));
        assert!(!fs_only.admits_mcp("mcp__web__get", true));
        assert!(!fs_only.may_use_mcp_server("web"));
        // Its child, whose role lists web tools, gets neither fs nor web: never wider.
        let child = fs_only.narrow_for(&role(Some(&["mcp__web__*"]), None, true));
        assert!(!child.admits_mcp("mcp__web__get", true));
        assert!(!child.admits_mcp("mcp__fs__read", true));
        // A read-only role without patterns: read-only tools only; listing one lets it in.
        let reader = root.narrow_for(&role(None, Some(SandboxMode::ReadOnly), true));
        assert!(reader.admits_mcp("mcp__fs__read_file", true));
        assert!(!reader.admits_mcp("mcp__fs__write_file", false));
        let listed = root.narrow_for(&role(
            Some(&["mcp__fs__write_file"]),
            Some(SandboxMode::ReadOnly),
            true,
        ));
        assert!(listed.admits_mcp("mcp__fs__write_file", false));
    }
}
