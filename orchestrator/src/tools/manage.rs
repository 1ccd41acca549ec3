//! `list_agents`, `close_agent` and `interrupt_agent`.

use std::sync::Arc;

use arbor_protocol::AgentStatus;
use serde::Deserialize;
use serde_json::json;

use super::args::{ToolResult, parse_args, resolve_target};
use crate::agent::Agent;
use crate::ctx::Ctx;

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
    let agents: Vec<_> = ctx
        .session
        .snapshot()
        .await
        .into_iter()
        .filter(|agent| !agent.internal && !agent.behind_closed)
        .filter(|agent| prefix.as_ref().is_none_or(|p| agent.path.is_within(p)))
        .map(|agent| {
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
            entry
        })
        .collect();
    Ok(json!({ "agents": agents }).to_string())
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
    Ok(json!({ "previous_status": previous }).to_string())
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
