//! MCP tools in the turn loop: before an agent's request is built its MCP servers are listed
//! (started then, if no agent needed them yet); its tool list adds the tools its capabilities
//! admit, in server order, after the built-in tools; a call passes the approval gate, waits
//! for the log's sync when the tool may change something, and goes to the shared server.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use arbor_mcp::McpHub;
use arbor_protocol::{Event, ToolSpec};
use arbor_roles::McpGate;

use super::{Call, ToolResult};
use crate::agent::Agent;
use crate::config::RunConfig;
use crate::runtime::Inner;

/// The most tools one request offers (the providers' limit); MCP tools past it are left out.
pub const MAX_TOOLS_PER_REQUEST: usize = 128;

/// The session's MCP servers, and which agents' servers are listed already.
#[derive(Debug)]
pub struct McpTools {
    pub hub: Arc<McpHub>,
    /// Gate chains whose servers are listed: their agents' requests need nothing more.
    prepared: Mutex<HashSet<Vec<McpGate>>>,
}

impl McpTools {
    pub fn new(config: &RunConfig) -> Self {
        Self {
            hub: Arc::new(McpHub::new(
                config.mcp_servers.clone(),
                config.cwd.clone(),
                Some(arbor_mcp::ToolCache::new(config.home.join("mcp"))),
                true,
            )),
            prepared: Mutex::new(HashSet::new()),
        }
    }

    fn prepared(&self) -> std::sync::MutexGuard<'_, HashSet<Vec<McpGate>>> {
        self.prepared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The part of a tool-spec cache key that MCP tools add: the agent's gates.
    pub fn spec_key(&self, agent: &Agent) -> Option<String> {
        (!self.hub.is_empty()).then(|| format!("mcp:{:?}", agent.identity.caps.mcp))
    }
}

/// Lists the servers `agent` may use before its request is built (starting those no agent has
/// needed yet, all at once, each within its startup timeout). Free once done.
pub async fn prepare(inner: &Inner, agent: &Agent) {
    let tools = &inner.mcp;
    if tools.hub.is_empty() {
        return;
    }
    let caps = &agent.identity.caps;
    if tools.prepared().contains(&caps.mcp) {
        return;
    }
    let gates = caps.clone();
    tools
        .hub
        .listings(|server| gates.may_use_mcp_server(server))
        .await;
    tools.prepared().insert(caps.mcp.clone());
    emit_notices(inner);
}

/// The MCP tools `agent` is offered (its servers listed by [`prepare`]), after `built_in`
/// others, within [`MAX_TOOLS_PER_REQUEST`].
pub fn specs(inner: &Inner, agent: &Agent, built_in: usize) -> Vec<ToolSpec> {
    let caps = &agent.identity.caps;
    let hub = &inner.mcp.hub;
    let mut specs = Vec::new();
    let mut left_out = Vec::new();
    for config in hub.configs() {
        if !caps.may_use_mcp_server(&config.name) {
            continue;
        }
        let Some(listing) = hub.listed(&config.name) else {
            continue;
        };
        for tool in &listing.tools {
            if !caps.admits_mcp(&tool.qualified, tool.read_only) {
                continue;
            }
            if built_in + specs.len() < MAX_TOOLS_PER_REQUEST {
                specs.push(tool.spec.clone());
            } else {
                left_out.push(tool.qualified.clone());
            }
        }
    }
    if !left_out.is_empty() {
        inner.events.emit(Event::McpNotice {
            server: String::new(),
            message: format!(
                "{} MCP tools are not offered to {}: a request may offer at most {MAX_TOOLS_PER_REQUEST} tools (narrow them with enabled_tools or a role's tools list): {}",
                left_out.len(),
                agent.path(),
                left_out.join(", ")
            ),
        });
    }
    specs
}

/// Runs one MCP tool call: the tool as offered, the agent's right to it, the approval gate,
/// the sync (for a tool that may change something), then the server.
pub async fn call(inner: &Arc<Inner>, agent: &Arc<Agent>, call: &Call) -> ToolResult {
    let tool = inner.mcp.hub.tool(&call.name).await;
    emit_notices(inner);
    let tool = tool?;
    if !agent
        .identity
        .caps
        .admits_mcp(&tool.qualified, tool.read_only)
    {
        return Err(format!("tool `{}` is not available to this agent", call.name));
    }
    let arguments: serde_json::Value = super::parse_args(&call.name, &call.arguments)?;
    if !arguments.is_object() {
        return Err(format!(
            "invalid arguments for {}: expected one JSON object",
            call.name
        ));
    }
    crate::approval::gate_mcp(inner, agent, &tool, &arguments).await?;
    if !tool.read_only {
        // It may change the workspace or the world: the log explains it first.
        super::work::durable_now(inner).await?;
    }
    let result = inner.mcp.hub.call(&tool, &call.arguments).await;
    emit_notices(inner);
    result
}

/// Announces what the servers have to say (starts, crashes, tools left out).
fn emit_notices(inner: &Inner) {
    for (server, message) in inner.mcp.hub.take_notices() {
        inner.events.emit(Event::McpNotice { server, message });
    }
}

/// Stops every server of the session with its process tree.
pub async fn stop(inner: &Inner) {
    inner.mcp.hub.stop().await;
}
