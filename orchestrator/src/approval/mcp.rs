//! The approval gate of MCP tool calls (behaviour §7): a call is judged by the command policy
//! as the pseudo-command `mcp__<server>__<tool>` (`pattern = ["mcp__fs__write_file"]`, or
//! `["mcp__fs__*"]` for a whole server). A `forbidden` rule refuses it, a `prompt` rule asks,
//! an `allow` rule lets it run; otherwise a tool its server marks read-only runs and any other
//! asks for approval, under `on-request` and `untrusted` alike (an MCP tool runs outside the
//! sandbox, so there is nothing weaker to fall back on). Policy `never` refuses what would ask.

use std::sync::Arc;

use arbor_agent_graph::OverrideKey;
use arbor_mcp::McpTool;
use arbor_protocol::{AgentPath, ThreadId};
use arbor_tools::{Decision, Evaluation};
use serde_json::{Value, json};

use super::gate::{refuse_forbidden, seek_approval};
use super::need::{Need, mcp_key, rule_text};
use super::request::Request;
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Decides whether `agent` may call `tool` with `arguments`, asking for approval when it must;
/// `Err` is the text its model reads instead.
pub async fn gate_mcp(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    tool: &McpTool,
    arguments: &Value,
) -> Result<(), String> {
    let evaluation = ctx.approvals.policy.evaluate_mcp(&tool.qualified);
    let cwd = agent.identity.cwd().display().to_string();
    let request = |reason: &str| Request {
        id: ThreadId::new().to_string(),
        action: action(tool, arguments, &cwd, reason),
        justification: None,
        key: key(agent.path(), tool, arguments, &cwd),
        turn: agent.runtime().turn_no,
    };
    match assess(&evaluation, tool) {
        Need::Run => Ok(()),
        Need::Forbidden(rule) => {
            let refused = request(&format!("forbidden by {rule}"));
            Err(refuse_forbidden(ctx, agent, &refused, &rule).await)
        }
        Need::Approval(reason) => seek_approval(ctx, agent, &request(&reason)).await,
    }
}

/// Judges one call: rules first (the strictest wins), then the server's read-only mark.
pub fn assess(evaluation: &Evaluation, tool: &McpTool) -> Need {
    match evaluation.decision {
        Some(Decision::Forbidden) => Need::Forbidden(rule_text(evaluation, Decision::Forbidden)),
        Some(Decision::Prompt) => Need::Approval(format!(
            "{} asks for approval",
            rule_text(evaluation, Decision::Prompt)
        )),
        Some(Decision::Allow) => Need::Run,
        None if tool.read_only => Need::Run,
        None => Need::Approval(format!(
            "MCP tool `{}` of server `{}` is not marked read-only by its server, and no rule allows it",
            tool.name, tool.server
        )),
    }
}

/// The exact planned action, as approvers (the guardian included) see it.
fn action(tool: &McpTool, arguments: &Value, cwd: &str, reason: &str) -> Value {
    json!({
        "tool": tool.qualified,
        "command": command(tool, arguments),
        "mcp_server": tool.server,
        "mcp_tool": tool.name,
        "arguments": arguments,
        "read_only": tool.read_only,
        "cwd": cwd,
        "approval_reason": reason,
    })
}

/// `mcp__fs__write_file {"path":"a"}`: the call in one line, for prompts and listings.
fn command(tool: &McpTool, arguments: &Value) -> String {
    format!("{} {arguments}", tool.qualified)
}

/// What makes a retry identical: requester, tool and arguments.
fn key(requester: &AgentPath, tool: &McpTool, arguments: &Value, cwd: &str) -> OverrideKey {
    mcp_key(requester, &command(tool, arguments), cwd)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn tool(read_only: bool) -> McpTool {
        McpTool {
            server: "fs".into(),
            name: "write_file".into(),
            qualified: "mcp__fs__write_file".into(),
            spec: arbor_protocol::ToolSpec {
                name: "mcp__fs__write_file".into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            },
            read_only,
        }
    }

    fn judge(rules: &str, read_only: bool) -> String {
        let mut policy = arbor_tools::Policy::empty();
        policy
            .add_file(Path::new("r.toml"), rules)
            .expect("rules load");
        match assess(
            &policy.evaluate_mcp("mcp__fs__write_file"),
            &tool(read_only),
        ) {
            Need::Run => "run".into(),
            Need::Forbidden(rule) => format!("forbidden: {rule}"),
            Need::Approval(reason) => format!("ask: {reason}"),
        }
    }

    #[test]
    fn write_tools_ask_unless_a_rule_allows_them() {
        assert_eq!(judge("", true), "run");
        assert_eq!(
            judge("", false),
            "ask: MCP tool `write_file` of server `fs` is not marked read-only by its server, and no rule allows it"
        );
        let allow = "[[rule]]\npattern = [\"mcp__fs__write_file\"]\ndecision = \"allow\"\n";
        assert_eq!(judge(allow, false), "run");
        let prompt = "[[rule]]\npattern = [\"mcp__fs__*\"]\ndecision = \"prompt\"\n";
        assert_eq!(
            judge(prompt, true),
            "ask: rule `mcp__fs__*` asks for approval"
        );
        let forbid = "[[rule]]\npattern = [\"mcp__fs__write_file\"]\ndecision = \"forbidden\"\n";
        assert_eq!(
            judge(&format!("{allow}\n{forbid}"), false),
            "forbidden: rule `mcp__fs__write_file`"
        );
    }

    #[test]
    fn stored_requests_give_back_their_key() {
        let path = AgentPath::parse("/root/w").expect("path");
        let args = json!({"path": "a.txt", "content": "x"});
        let action = action(&tool(false), &args, "/w", "r");
        let record = arbor_agent_graph::ApprovalRecord::pending(
            "r1".into(),
            ThreadId::new(),
            ThreadId::new(),
            path.clone(),
            action,
            None,
        );
        assert_eq!(
            super::super::need::record_key(&record),
            Some(key(&path, &tool(false), &args, "/w"))
        );
    }
}
