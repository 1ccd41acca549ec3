//! The work tools, `exec_command` and `apply_patch`, run in the agent's own cwd: commands in
//! the agent's sandbox after the approval gate, patches confined to what that sandbox would
//! allow a command to write.

use std::sync::Arc;

use arbor_tools::{ExecArgs, ExecConfig, ExecRequest, run_exec};
use serde::Deserialize;

use super::{ToolResult, parse_args};
use crate::agent::Agent;
use crate::approval;
use crate::runtime::Inner;

pub async fn exec_command(inner: &Arc<Inner>, agent: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args = ExecArgs::parse(arguments).map_err(|err| err.to_string())?;
    let request = ExecRequest::from_args(&args, &agent.identity.cwd, &ExecConfig::default())
        .map_err(|err| err.to_string())?;
    let launcher = approval::gate_exec(inner, agent, &args, &request.workdir).await?;
    let request = request
        .with_launcher(launcher)
        .with_environment(inner.config.shell_environment.clone())
        .with_live(agent.live.clone());
    Ok(run_exec(request).await.to_model_output())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
}

pub async fn apply_patch(inner: &Arc<Inner>, agent: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: PatchArgs = parse_args("apply_patch", arguments)?;
    let cwd = agent.identity.cwd.clone();
    let mode = agent.identity.caps.sandbox;
    // A patch passes its own approval gate (`untrusted` asks for it) before it is applied.
    approval::gate_patch(inner, agent, &args.patch).await?;
    tokio::task::spawn_blocking(move || arbor_tools::apply_patch_confined(&cwd, &args.patch, mode))
        .await
        .map_err(|err| format!("apply_patch failed to run: {err}"))?
        .map(|summary| summary.to_string())
        .map_err(|err| err.to_string())
}
