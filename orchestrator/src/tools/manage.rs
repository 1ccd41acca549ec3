//! `list_agents`, `close_agent` and `interrupt_agent`.

use std::sync::Arc;

use arbor_protocol::{AgentClosed, AgentStatus, Event, RolloutItem};
use serde::Deserialize;
use serde_json::json;

use super::{ToolResult, parse_args, resolve_target};
use crate::agent::Agent;
use crate::runtime::Inner;
use crate::turn::cancel_turn;

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

pub fn list_agents(inner: &Arc<Inner>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
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
    let agents: Vec<_> = inner
        .registry
        .all()
        .into_iter()
        .filter(|agent| !agent.identity.internal && !behind_closed_edge(inner, agent))
        .filter(|agent| prefix.as_ref().is_none_or(|p| agent.path().is_within(p)))
        .filter_map(|agent| {
            let state = agent.state();
            if state.closed {
                return None;
            }
            let mut entry = json!({
                "agent_name": agent.path().as_str(),
                "agent_status": state.status,
                "nickname": agent.identity.nickname,
                "role": agent.identity.role,
                "resident": agent.is_resident(),
                "unread": state.mailbox.unread(),
            });
            if state.status == AgentStatus::Queued {
                entry["queue_position"] = json!(inner.queue_position(agent.id()));
            }
            Some(entry)
        })
        .collect();
    Ok(json!({ "agents": agents }).to_string())
}

/// True when the agent or one of its ancestors is closed: it is hidden behind that edge.
fn behind_closed_edge(inner: &Inner, agent: &Arc<Agent>) -> bool {
    let mut current = Some(Arc::clone(agent));
    while let Some(agent) = current {
        if agent.state().closed {
            return true;
        }
        current = agent.identity.parent.and_then(|id| inner.registry.get(id));
    }
    false
}

pub async fn close_agent(inner: &Arc<Inner>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: TargetArgs = parse_args("close_agent", arguments)?;
    let target = resolve_target(inner, caller, &args.target)?;
    if target.path().is_root() {
        return Err("root is not a spawned agent".to_string());
    }
    if caller.path().is_within(target.path()) {
        return Err(format!(
            "close_agent cannot close the caller itself or an ancestor: {}",
            target.path()
        ));
    }
    let previous = close(inner, Some(caller.as_ref()), &target).await?;
    let mut output = json!({ "previous_status": previous });
    if let Some(worktree) = crate::worktrees::release(inner, &target).await {
        output["worktree"] = worktree;
    }
    Ok(output.to_string())
}

/// Closes `target` on behalf of `closer`: the close is a line of the closer's (which closes
/// the target's edge in the store), and the target and its live descendants stop.
pub async fn close(
    inner: &Arc<Inner>,
    closer: Option<&Agent>,
    target: &Arc<Agent>,
) -> Result<AgentStatus, String> {
    let (previous, running) = {
        let mut state = target.state();
        if state.closed {
            return Err(format!("agent {} is closed", target.path()));
        }
        state.closed = true;
        let previous = state.status.clone();
        state.status = AgentStatus::Closed;
        (previous, state.turn_token.is_some())
    };
    // A close by an agent is a line of its own; one from outside the tree is already in the
    // log (`user_close`).
    if let Some(closer) = closer {
        closer
            .record(&[RolloutItem::AgentClosed(AgentClosed {
                target_id: target.id(),
                target: target.path().clone(),
                previous_status: previous.clone(),
            })])
            .map_err(|err| err.to_string())?;
    }
    inner.registry.release_path(target);
    if running {
        cancel_turn(target, "closed");
    }
    for descendant in descendants(inner, target) {
        cancel_turn(&descendant, "parent_closed");
    }
    target.token.cancel();
    inner.set_status(target, AgentStatus::Closed);
    inner.events.emit(Event::AgentStatus {
        path: target.path().clone(),
        status: AgentStatus::Closed,
    });
    Ok(previous)
}

fn descendants(inner: &Inner, agent: &Agent) -> Vec<Arc<Agent>> {
    let mut out = Vec::new();
    let mut frontier = vec![agent.id()];
    while let Some(id) = frontier.pop() {
        for child in inner.registry.children(id) {
            frontier.push(child.id());
            out.push(child);
        }
    }
    out
}

pub fn interrupt_agent(inner: &Arc<Inner>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: TargetArgs = parse_args("interrupt_agent", arguments)?;
    let target = resolve_target(inner, caller, &args.target)?;
    let previous = target.status();
    if target.id() == caller.id() {
        return Err("interrupt_agent cannot interrupt the caller itself".to_string());
    }
    interrupt(inner, &target);
    Ok(json!({ "previous_status": previous }).to_string())
}

/// Stops an agent's running turn, or takes its queued turn out of the queue. An idle or
/// evicted agent is left as it is.
pub fn interrupt(inner: &Arc<Inner>, target: &Arc<Agent>) {
    if inner.dequeue(target) {
        target.state().scheduled = false;
        let status = match target.state().last_message.clone() {
            Some(message) => AgentStatus::Completed(Some(message)),
            None => AgentStatus::Interrupted("interrupted".to_string()),
        };
        inner.set_status(target, status);
    } else {
        cancel_turn(target, "interrupted");
    }
}
