//! Tool calls: dispatch by name, argument parsing, target resolution, and running the calls of
//! one response (tree calls in call order, slow calls concurrently, results in call order).

pub mod manage;
pub mod mcp;
mod messaging;
pub mod spawn;
pub mod specs;
mod wait;
mod work;

use std::collections::HashMap;
use std::sync::Arc;

use arbor_protocol::text::truncate_middle;
use arbor_protocol::{ThreadId, ToolSpec};
use serde::de::DeserializeOwned;
use tokio::task::JoinSet;

use crate::agent::Agent;
use crate::config::TOOL_OUTPUT_MAX_BYTES;
use crate::runtime::Inner;

/// One function call from a model response.
#[derive(Debug, Clone)]
pub struct Call {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
}

/// What a tool returns: output text for the model, or an error text given to it verbatim.
pub type ToolResult = Result<String, String>;

/// Runs the calls of one response and returns their outputs in call order. Calls that change
/// the tree run one after another in call order; `exec_command`, `apply_patch` and
/// `wait_agent` run concurrently with everything else.
pub async fn run_calls(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    calls: &[Call],
    mut started: HashMap<String, crate::sampling::Started>,
) -> Vec<String> {
    let mut outputs: Vec<Option<String>> = vec![None; calls.len()];
    let mut slow = JoinSet::new();
    for (index, call) in calls.iter().enumerate() {
        if let Some(handle) = started.remove(&call.call_id) {
            // Started while the response streamed: collect it with the other slow calls.
            slow.spawn(async move { (index, handle.output().await) });
        } else if is_slow(&call.name) && calls.len() > 1 {
            let inner = Arc::clone(inner);
            let agent = Arc::clone(agent);
            let call = call.clone();
            slow.spawn(async move { (index, dispatch(&inner, &agent, &call).await) });
        } else {
            outputs[index] = Some(dispatch(inner, agent, call).await);
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
pub async fn dispatch(inner: &Arc<Inner>, agent: &Arc<Agent>, call: &Call) -> String {
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
            "spawn_agent" => spawn::spawn_agent(inner, agent, &call.arguments).await,
            "send_message" => messaging::send_message(inner, agent, &call.arguments).await,
            "followup_task" => messaging::followup_task(inner, agent, &call.arguments).await,
            "wait_agent" => wait::wait_agent(inner, agent, &call.arguments).await,
            "list_agents" => manage::list_agents(inner, agent, &call.arguments),
            "close_agent" => manage::close_agent(inner, agent, &call.arguments).await,
            "interrupt_agent" => manage::interrupt_agent(inner, agent, &call.arguments),
            "exec_command" => work::exec_command(inner, agent, &call.arguments).await,
            "apply_patch" => work::apply_patch(inner, agent, &call.arguments).await,
            _ if mcp => mcp::call(inner, agent, call).await,
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

/// Parses a tool's arguments, naming the tool in the error.
pub fn parse_args<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text).map_err(|err| format!("invalid arguments for {tool}: {err}"))
}

/// The tools an agent is offered, in its role's stable order. Built once per distinct tool
/// list and shared by every request of every agent that has it.
pub fn specs_for(inner: &Inner, agent: &Agent) -> Arc<Vec<ToolSpec>> {
    let mut key = agent.identity.caps.tools.clone();
    key.extend(inner.mcp.spec_key(agent));
    inner.tool_specs(&key, || {
        let mut messaging = specs::messaging_tools();
        let mut specs: Vec<ToolSpec> = agent
            .identity
            .caps
            .tools
            .iter()
            .filter_map(|name| match name.as_str() {
                "spawn_agent" => Some(specs::spawn_agent(&inner.roles.describe_for_spawn())),
                "exec_command" => Some(arbor_tools::exec_tool_spec()),
                "apply_patch" => Some(arbor_tools::apply_patch_tool_spec()),
                other => messaging
                    .iter()
                    .position(|spec| spec.name == other)
                    .map(|at| messaging.swap_remove(at)),
            })
            .collect();
        let added = mcp::specs(inner, agent, specs.len());
        specs.extend(added);
        specs
    })
}

/// Resolves a tool's `target` (a thread id or a path) to an open agent, as the caller names
/// it. Internal agents are not reachable by models.
pub fn resolve_target(inner: &Inner, caller: &Agent, target: &str) -> Result<Arc<Agent>, String> {
    let target = target.trim();
    if let Ok(id) = ThreadId::parse(target) {
        return match inner.registry.get(id) {
            Some(agent) if agent.identity.internal => Err(format!("agent `{target}` not found")),
            Some(agent) if agent.state().closed => Err(format!("agent {} is closed", agent.path())),
            Some(agent) => Ok(agent),
            None => Err(format!("agent `{target}` not found")),
        };
    }
    let path = caller
        .path()
        .resolve(target)
        .map_err(|err| err.to_string())?;
    match inner.registry.open_at(&path) {
        Some(agent) if !agent.identity.internal => Ok(agent),
        Some(_) => Err(format!("live agent path `{path}` not found")),
        None => {
            let was_closed = inner
                .registry
                .all()
                .iter()
                .any(|agent| agent.path() == &path && agent.state().closed);
            if was_closed {
                Err(format!("agent {path} is closed"))
            } else {
                Err(format!("live agent path `{path}` not found"))
            }
        }
    }
}
