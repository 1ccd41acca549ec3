//! MCP tools in the turn loop: before an agent's request is built its MCP servers are listed
//! (started then, if no agent needed them yet); its tool list adds the tools its capabilities
//! admit, in server order, after the built-in tools; a call passes the approval gate, waits
//! for the log's sync when the tool may change something, and goes to the shared server.

use std::sync::Arc;

use arbor_protocol::{Event, ToolSpec};

use super::args::{Call, ToolResult, parse_args};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// The most tools one request offers (the providers' limit); MCP tools past it are left out.
pub const MAX_TOOLS_PER_REQUEST: usize = 128;

/// Lists the servers `agent` may use before its request is built (starting those no agent has
/// needed yet, all at once, each within its startup timeout). Free once done.
pub async fn prepare(ctx: &Ctx, agent: &Agent) {
    let servers = &ctx.mcp;
    if servers.hub.is_empty() {
        return;
    }
    let caps = &agent.identity.caps;
    if servers.is_prepared(&caps.mcp) {
        return;
    }
    servers
        .hub
        .listings(|server| caps.may_use_mcp_server(server))
        .await;
    servers.mark_prepared(&caps.mcp);
    emit_notices(ctx);
}

/// The MCP tools `agent` is offered (its servers listed by [`prepare`]), after `built_in`
/// others, within [`MAX_TOOLS_PER_REQUEST`].
pub fn specs(ctx: &Ctx, agent: &Agent, built_in: usize) -> Vec<ToolSpec> {
    let caps = &agent.identity.caps;
    let hub = &ctx.mcp.hub;
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
        ctx.events.emit(Event::McpNotice {
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
pub async fn call(ctx: &Arc<Ctx>, agent: &Arc<Agent>, call: &Call) -> ToolResult {
    let tool = ctx.mcp.hub.tool(&call.name).await;
    emit_notices(ctx);
    let tool = tool?;
    if !agent
        .identity
        .caps
        .admits_mcp(&tool.qualified, tool.read_only)
    {
        return Err(format!(
            "tool `{}` is not available to this agent",
            call.name
        ));
    }
    let arguments: serde_json::Value = parse_args(&call.name, &call.arguments)?;
    if !arguments.is_object() {
        return Err(format!(
            "invalid arguments for {}: expected one JSON object",
            call.name
        ));
    }
    crate::approval::gate_mcp(ctx, agent, &tool, &arguments).await?;
    if !tool.read_only {
        // It may change the workspace or the world: the log explains it first.
        super::work::durable_now(ctx).await?;
    }
    let result = ctx.mcp.hub.call(&tool, &call.arguments).await;
    emit_notices(ctx);
    result
}

/// Announces what the servers have to say (starts, crashes, tools left out).
fn emit_notices(ctx: &Ctx) {
    for (server, message) in ctx.mcp.hub.take_notices() {
        ctx.events.emit(Event::McpNotice { server, message });
    }
}

/// Stops every server of the session with its process tree.
pub async fn stop(ctx: &Ctx) {
    ctx.mcp.hub.stop().await;
}
