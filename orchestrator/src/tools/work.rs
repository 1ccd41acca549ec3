//! The work tools, `exec_command` and `apply_patch`, run in the agent's own cwd. Approvals and
//! the sandbox plug in through the tools crate's `Launcher` seam.

use std::sync::Arc;

use arbor_tools::{ExecArgs, ExecConfig, ExecRequest, run_exec};
use serde::Deserialize;

use super::{ToolResult, parse_args};
use crate::agent::Agent;
use crate::runtime::Inner;

pub async fn exec_command(_inner: &Arc<Inner>, agent: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args = ExecArgs::parse(arguments).map_err(|err| err.to_string())?;
    let request = ExecRequest::from_args(&args, &agent.identity.cwd, &ExecConfig::default())
        .map_err(|err| err.to_string())?
        .with_live(agent.live.clone());
    Ok(run_exec(request).await.to_model_output())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
}

pub async fn apply_patch(_inner: &Arc<Inner>, agent: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: PatchArgs = parse_args("apply_patch", arguments)?;
    let cwd = agent.identity.cwd.clone();
    tokio::task::spawn_blocking(move || arbor_tools::apply_patch(&cwd, &args.patch))
        .await
        .map_err(|err| format!("apply_patch failed to run: {err}"))?
        .map(|summary| summary.to_string())
        .map_err(|err| err.to_string())
}
