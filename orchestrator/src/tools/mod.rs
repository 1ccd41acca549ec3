//! Tool calls: dispatch by name, argument parsing, target resolution, and running the calls of
//! one response (tree calls in call order, slow calls concurrently, results in call order).

pub(crate) mod args;
pub mod manage;
pub mod mcp;
mod messaging;
pub mod spawn;
pub mod specs;
mod started;
mod wait;
mod work;

use std::collections::HashMap;
use std::sync::Arc;

use arbor_protocol::ToolSpec;
use arbor_protocol::text::truncate_middle;
use tokio::task::JoinSet;

use crate::agent::Agent;
use crate::config::TOOL_OUTPUT_MAX_BYTES;
use crate::ctx::Ctx;
use crate::worktrees::tools as worktree_tools;
pub use args::{Call, resolve_target};
pub use started::Started;

/// Runs the calls of one response and returns their outputs in call order. Calls that change
/// the tree run one after another in call order; `exec_command`, `apply_patch` and
/// `wait_agent` run concurrently with everything else.
pub async fn run_calls(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    calls: &[Call],
    mut started: HashMap<String, Started>,
) -> Vec<String> {
    let mut outputs: Vec<Option<String>> = vec![None; calls.len()];
    let mut slow = JoinSet::new();
    for (index, call) in calls.iter().enumerate() {
        if let Some(handle) = started.remove(&call.call_id) {
            // Started while the response streamed: collect it with the other slow calls.
            slow.spawn(async move { (index, handle.output().await) });
        } else if is_slow(&call.name) && calls.len() > 1 {
            let ctx = Arc::clone(ctx);
            let agent = Arc::clone(agent);
            let call = call.clone();
            slow.spawn(async move { (index, dispatch(&ctx, &agent, &call).await) });
        } else {
            outputs[index] = Some(dispatch(ctx, agent, call).await);
        }
    }
    while let Some(joined) = slow.join_next().await {
        match joined {
            Ok((index, output)) => outputs[index] = Some(output),
            Err(err) => tracing::error!(error = %err, "tool task failed"),
        }
    }
    outputs
        .into_iter()
        .map(|output| output.unwrap_or_else(|| "the tool failed to run".to_string()))
        .collect()
}

/// Tools that may run concurrently with everything else (and start while a response streams).
pub fn is_slow(name: &str) -> bool {
    matches!(name, "exec_command" | "apply_patch" | "wait_agent") || arbor_mcp::is_mcp(name)
}

/// Runs one call and returns the model-visible output (bounded).
pub async fn dispatch(ctx: &Arc<Ctx>, agent: &Arc<Agent>, call: &Call) -> String {
    // MCP tools are checked against the agent's gates by `mcp::call`.
    let mcp = arbor_mcp::is_mcp(&call.name);
    let result = if !mcp && !agent.identity.caps.tools.iter().any(|t| t == &call.name) {
        Err(format!(
            "tool `{}` is not available to this agent",
            call.name
        ))
    } else if let Some(problem) = arbor_model::arguments::problem(&call.arguments) {
        Err(bad_arguments(&call.name, &problem))
    } else {
        match call.name.as_str() {
            "spawn_agent" => spawn::spawn_agent(ctx, agent, &call.arguments).await,
            "send_message" => messaging::send_message(ctx, agent, &call.arguments).await,
            "followup_task" => messaging::followup_task(ctx, agent, &call.arguments).await,
            "wait_agent" => wait::wait_agent(ctx, agent, &call.arguments).await,
            "list_agents" => manage::list_agents(ctx, agent, &call.arguments).await,
            "close_agent" => manage::close_agent(ctx, agent, &call.arguments).await,
            "diff_agent" => worktree_tools::diff_agent(ctx, agent, &call.arguments).await,
            "merge_agent" => worktree_tools::merge_agent(ctx, agent, &call.arguments).await,
            "interrupt_agent" => manage::interrupt_agent(ctx, agent, &call.arguments).await,
            "exec_command" => work::exec_command(ctx, agent, &call.arguments).await,
            "apply_patch" => work::apply_patch(ctx, agent, &call.arguments).await,
            _ if mcp => mcp::call(ctx, agent, call).await,
            other => Err(format!("unknown tool `{other}`")),
        }
    };
    let text = match result {
        Ok(output) | Err(output) => output,
    };
    truncate_middle(&text, TOOL_OUTPUT_MAX_BYTES)
}

/// What the model reads for a call whose arguments are not one JSON object: nothing ran, what
/// was wrong, and how its call now reads in its history.
fn bad_arguments(tool: &str, problem: &str) -> String {
    format!(
        "{tool} did not run: its arguments must be one JSON object, but {problem}. They stay \
         in your history as {{\"{key}\": \"<what you wrote>\"}}. Call {tool} again with \
         complete JSON arguments.",
        key = arbor_model::arguments::INVALID_JSON_KEY
    )
}

/// The tools an agent is offered, in its role's stable order. Built once per distinct tool
/// list and shared by every request of every agent that has it; each agent keeps its own
/// reference, so a request costs no lookup.
pub fn specs_for(ctx: &Ctx, agent: &Agent) -> Arc<Vec<ToolSpec>> {
    Arc::clone(agent.specs.get_or_init(|| build_specs(ctx, agent)))
}

fn build_specs(ctx: &Ctx, agent: &Agent) -> Arc<Vec<ToolSpec>> {
    let mut key: Vec<String> = agent
        .identity
        .caps
        .tools
        .iter()
        .map(|t| t.to_string())
        .collect();
    key.extend(ctx.mcp.spec_key(&agent.identity.caps.mcp));
    ctx.tool_specs(&key, || {
        let tools = &agent.identity.caps.tools;
        let mut specs: Vec<ToolSpec> = specs::builtin(&ctx.roles.describe_for_spawn())
            .into_iter()
            .filter(|spec| tools.iter().any(|name| *name == spec.name))
            .collect();
        let added = mcp::specs(ctx, agent, specs.len());
        specs.extend(added);
        specs
    })
}
