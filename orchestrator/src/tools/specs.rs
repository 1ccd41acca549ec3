//! The JSON schemas of the multi-agent tools, and every built-in tool as the model sees it
//! ([`builtin`]: what agents are offered, what scripts are checked against and what
//! `docs/tools.md` is generated from).

use arbor_protocol::ToolSpec;
use serde_json::{Value, json};

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    }
}

/// Every built-in tool, in the canonical order of `arbor_roles::TOOL_NAMES`; `roles_text` is the
/// list of roles `spawn_agent`'s description ends with. An agent is offered the ones its role
/// allows, in this order, then its MCP tools.
pub fn builtin(roles_text: &str) -> Vec<ToolSpec> {
    let mut all = vec![spawn_agent(roles_text)];
    all.extend(messaging_tools());
    all.extend(crate::worktrees::tools::specs());
    all.push(arbor_tools::exec_tool_spec());
    all.push(arbor_tools::apply_patch_tool_spec());
    let order = |spec: &ToolSpec| {
        arbor_roles::TOOL_NAMES
            .iter()
            .position(|name| *name == spec.name)
            .unwrap_or(usize::MAX)
    };
    all.sort_by_key(order);
    all
}

/// `spawn_agent`, with the available roles listed in its description.
pub fn spawn_agent(roles_text: &str) -> ToolSpec {
    spec(
        "spawn_agent",
        &format!(
            "Start a child agent with its own task. The child's path is <your path>/<task_name>; \
             its first task is `message`. Returns {{\"task_name\": <path>, \"nickname\": ...}}. \
             The child reports its final answer to you as mail.\n\n{roles_text}"
        ),
        object(
            json!({
                "task_name": {"type": "string", "description": "Name of the child: lowercase letters, digits and underscores."},
                "message": {"type": "string", "description": "The child's task."},
                "agent_type": {"type": "string", "description": "Role of the child (default: `default`)."},
                "model": {"type": "string", "description": "Model for the child (default: the role's, else yours)."},
                "reasoning_effort": {"type": "string", "description": "Reasoning effort for the child."},
                "fork_turns": {"type": "string", "description": "Copy your recent turns into the child: `none` (default), `all`, or a positive integer N for the last N turns."},
                "isolation": {"type": "string", "enum": ["shared", "worktree"], "description": "`shared`: the child works in your checkout; `worktree`: in a git worktree of its own, on a new branch from your current state (uncommitted changes included), merged back with merge_agent. Default: its role's, else the configured default for children that edit."},
            }),
            &["task_name", "message"],
        ),
    )
}

/// Every multi-agent tool but `spawn_agent` and the worktree tools, in canonical order.
fn messaging_tools() -> Vec<ToolSpec> {
    let target = json!({"type": "string", "description": "Agent path (absolute, or relative to you for descendants) or thread id."});
    let message =
        json!({"type": "string", "description": "The text the agent reads, as mail from you."});
    vec![
        spec(
            "send_message",
            "Queue a message for another agent without waking it. It reads the message at its next turn.",
            object(
                json!({"target": target, "message": message}),
                &["target", "message"],
            ),
        ),
        spec(
            "followup_task",
            "Give another agent (not the root) a new task: wakes it if idle, otherwise joins its running turn.",
            object(
                json!({"target": target, "message": message}),
                &["target", "message"],
            ),
        ),
        spec(
            "wait_agent",
            "Wait for agents (default: your open children). mode `any` returns when you hold mail from a target; \
             `all` when no target has a running or queued turn. A target waiting for an approval is still working: \
             the wait goes on, and the result's `awaiting_approval` lists such targets when it returns. \
             Never consumes mail. timeout_ms: default 30000, minimum 1000, maximum 3600000.",
            object(
                json!({
                    "targets": {"type": "array", "items": {"type": "string"}, "description": "Agents to wait for (paths or thread ids); default: your open children."},
                    "mode": {"type": "string", "enum": ["any", "all"], "description": "`any` (default): until you hold mail from a target; `all`: until no target is working."},
                    "timeout_ms": {"type": "integer", "minimum": 0, "description": "How long to wait at most, in milliseconds."},
                }),
                &[],
            ),
        ),
        spec(
            "list_agents",
            "List the agents of this session with their status, role, residency and unread mail.",
            object(
                json!({"path_prefix": {"type": "string", "description": "List only this agent and the agents under it (a path, absolute or relative to you)."}}),
                &[],
            ),
        ),
        spec(
            "close_agent",
            "Close an agent: its edge is closed and it and its descendants stop. Returns its previous status.",
            object(json!({"target": target}), &["target"]),
        ),
        spec(
            "interrupt_agent",
            "Stop an agent's current turn; the agent stays available. Returns its previous status.",
            object(json!({"target": target}), &["target"]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_tool_a_role_may_name_has_one_spec_in_canonical_order() {
        let names: Vec<String> = super::builtin("").into_iter().map(|s| s.name).collect();
        assert_eq!(names, arbor_roles::TOOL_NAMES);
    }
}
