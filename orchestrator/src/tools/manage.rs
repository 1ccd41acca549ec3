//! `list_agents` (with a worktree agent's `changes` and `branch`; a list too long for one
//! result says how many it left out), `close_agent` (which releases the closed agents'
//! worktrees) and `interrupt_agent`.

use std::sync::Arc;

use arbor_protocol::AgentStatus;
use serde::Deserialize;
use serde_json::json;

use super::args::{ToolResult, parse_args, resolve_target};
use crate::agent::Agent;
use crate::config::TOOL_OUTPUT_MAX_BYTES;
use crate::ctx::Ctx;
use crate::worktrees::close::release;
use crate::worktrees::summary::{changes_json, work_status};
use arbor_tree::Scope;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path_prefix: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetArgs {
    target: String,
}

pub async fn list_agents(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: ListArgs = parse_args("list_agents", arguments)?;
    let prefix = match args.path_prefix.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(prefix) => Some(
            caller
                .path()
                .resolve(prefix)
                .map_err(|err| err.to_string())?,
        ),
    };
    let scope = prefix.map_or(Scope::All, Scope::Within);
    let mut agents = Vec::new();
    let listed = ctx.session.snapshot_of(scope).await.into_iter();
    for agent in listed.filter(|agent| !agent.internal && !agent.behind_closed) {
        let handle = ctx.registry.get(agent.id);
        let meta = handle.as_ref().map(|h| &h.identity.meta);
        let mut entry = json!({
            "agent_name": agent.path.as_str(),
            "agent_status": agent.status,
            "nickname": meta.and_then(|m| m.nickname.clone()),
            "role": meta.map(|m| m.role.clone()),
            "resident": agent.resident,
            "unread": agent.unread,
        });
        if agent.status == AgentStatus::Queued {
            entry["queue_position"] = json!(agent.queue_position);
        }
        // A worktree agent's changes, from git.
        let worktree = handle.and_then(|h| h.identity.worktree.clone());
        if let Some(wt) = worktree.filter(|wt| !wt.is_removed()) {
            entry["changes"] = changes_json(&work_status(&wt).await);
            entry["branch"] = json!(wt.branch);
        }
        agents.push(entry);
    }
    Ok(bounded_list(agents))
}

/// Room kept in a listing for its closing and its note.
const LIST_ROOM: usize = 512;

/// `{"agents": [...]}` within the tool output bound: the agents that fit, in order, and, when
/// some do not, how many and how to see them, instead of a list cut in the middle.
fn bounded_list(agents: Vec<serde_json::Value>) -> String {
    let budget = TOOL_OUTPUT_MAX_BYTES - LIST_ROOM;
    let total = agents.len();
    let mut used = 0;
    let mut shown = Vec::new();
    for agent in agents {
        let size = agent.to_string().len() + 1;
        if used + size > budget {
            break;
        }
        used += size;
        shown.push(agent);
    }
    let omitted = total - shown.len();
    let mut output = json!({ "agents": shown });
    if omitted > 0 {
        output["omitted"] = json!(omitted);
        output["note"] = json!(format!(
            "{omitted} more agents are not listed (the result is bounded): list a subtree with \
             path_prefix"
        ));
    }
    output.to_string()
}

pub async fn close_agent(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: TargetArgs = parse_args("close_agent", arguments)?;
    let target = resolve_target(ctx, caller, &args.target)?;
    if target.path().is_root() {
        return Err("root is not a spawned agent".to_string());
    }
    if caller.path().is_within(target.path()) {
        return Err(format!(
            "close_agent cannot close the caller itself or an ancestor: {}",
            target.path()
        ));
    }
    let previous = ctx.session.close(target.id(), Some(caller.id())).await?;
    let mut output = json!({ "previous_status": previous });
    if let Some(worktree) = release(ctx, &target).await {
        output["worktree"] = worktree;
    }
    Ok(output.to_string())
}

pub async fn interrupt_agent(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: TargetArgs = parse_args("interrupt_agent", arguments)?;
    let target = resolve_target(ctx, caller, &args.target)?;
    if target.id() == caller.id() {
        return Err("interrupt_agent cannot interrupt the caller itself".to_string());
    }
    let previous = ctx
        .session
        .interrupt(target.id(), "interrupted")
        .await
        .ok_or("the session stopped")?;
    Ok(json!({ "previous_status": previous }).to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn a_long_list_says_how_many_it_left_out() {
        let agents: Vec<Value> = (0..150)
            .map(|i| {
                json!({"agent_name": format!("/root/worker_{i:03}"), "agent_status": "running",
                    "nickname": "Somebody the 2nd", "role": "worker", "resident": true, "unread": 0})
            })
            .collect();
        let output = super::bounded_list(agents);
        assert!(
            output.len() <= crate::config::TOOL_OUTPUT_MAX_BYTES,
            "{}",
            output.len()
        );
        let parsed: Value = serde_json::from_str(&output).expect("whole JSON");
        let shown = parsed["agents"].as_array().expect("agents").len();
        assert!(shown > 0 && shown < 150, "{shown}");
        assert_eq!(parsed["omitted"], 150 - shown);
        assert_eq!(
            parsed["note"],
            format!(
                "{} more agents are not listed (the result is bounded): list a subtree with \
                 path_prefix",
                150 - shown
            )
        );
        let short = super::bounded_list(vec![json!({"agent_name": "/root"})]);
        assert_eq!(short, r#"{"agents":[{"agent_name":"/root"}]}"#);
    }
}
