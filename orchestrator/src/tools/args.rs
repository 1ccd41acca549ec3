//! What every tool shares: the call, the result type, argument parsing and target resolution.

use std::sync::Arc;

use arbor_protocol::ThreadId;
use serde::de::DeserializeOwned;

use crate::agent::Agent;
use crate::ctx::Ctx;

/// One function call from a model response.
#[derive(Debug, Clone)]
pub struct Call {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
}

/// What a tool returns: output text for the model, or an error text given to it verbatim.
pub type ToolResult = Result<String, String>;

/// Parses a tool's arguments, naming the tool in the error.
pub fn parse_args<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text).map_err(|err| format!("invalid arguments for {tool}: {err}"))
}

/// Resolves a tool's `target` (a thread id or a path) to an open agent, as the caller names
/// it. Internal agents are not reachable by models.
pub fn resolve_target(ctx: &Ctx, caller: &Agent, target: &str) -> Result<Arc<Agent>, String> {
    let target = target.trim();
    if let Ok(id) = ThreadId::parse(target) {
        return match ctx.registry.get(id) {
            Some(agent) if agent.identity.internal => Err(format!("agent `{target}` not found")),
            Some(agent) if !ctx.registry.is_open(&agent) => {
                Err(format!("agent {} is closed", agent.path()))
            }
            Some(agent) => Ok(agent),
            None => Err(format!("agent `{target}` not found")),
        };
    }
    let path = caller
        .path()
        .resolve(target)
        .map_err(|err| err.to_string())?;
    match ctx.registry.open_at(&path) {
        Some(agent) if !agent.identity.internal => Ok(agent),
        Some(_) => Err(format!("live agent path `{path}` not found")),
        None => {
            let was_closed = ctx.registry.all().iter().any(|agent| agent.path() == &path);
            if was_closed {
                Err(format!("agent {path} is closed"))
            } else {
                Err(format!("live agent path `{path}` not found"))
            }
        }
    }
}
