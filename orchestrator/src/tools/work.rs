//! The work tools, `exec_command` and `apply_patch`, run in the agent's own cwd: commands in
//! the agent's sandbox after the approval gate, patches confined to what that sandbox would
//! allow a command to write. Either touches the workspace only once the session log is durable
//! up to the call that asked for it (behaviour §9): a crash never leaves a side effect that the
//! log does not explain.

use std::sync::Arc;

use arbor_rollout::log::Urgency;
use arbor_tools::{ExecArgs, ExecConfig, ExecRequest, run_exec};
use serde::Deserialize;

use super::args::{ToolResult, parse_args};
use crate::agent::Agent;
use crate::approval;
use crate::ctx::Ctx;
use crate::worktrees::hooks::ready;

pub async fn exec_command(ctx: &Arc<Ctx>, agent: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args = ExecArgs::parse(arguments).map_err(|err| err.to_string())?;
    ready(agent).await?;
    let request = ExecRequest::from_args(&args, agent.identity.cwd(), &ExecConfig::default())
        .map_err(|err| err.to_string())?;
    let launcher = approval::gate_exec(ctx, agent, &args, &request.workdir).await?;
    durable_now(ctx).await?;
    let request = request
        .with_launcher(launcher)
        .with_environment(ctx.config.shell_environment.clone())
        .with_live(agent.live.clone());
    Ok(run_exec(request).await.to_model_output())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
}

pub async fn apply_patch(ctx: &Arc<Ctx>, agent: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: PatchArgs = parse_args("apply_patch", arguments)?;
    ready(agent).await?;
    let cwd = agent.identity.cwd().to_path_buf();
    let mode = agent.identity.caps.sandbox;
    // A patch passes its own approval gate (`untrusted` asks for it) before it is applied.
    approval::gate_patch(ctx, agent, &args.patch).await?;
    durable_now(ctx).await?;
    tokio::task::spawn_blocking(move || arbor_tools::apply_patch_confined(&cwd, &args.patch, mode))
        .await
        .map_err(|err| format!("apply_patch failed to run: {err}"))?
        .map(|summary| summary.to_string())
        .map_err(|err| err.to_string())
}

/// Waits until everything appended so far is on disk; a failed log refuses the side effect.
pub(super) async fn durable_now(ctx: &Ctx) -> Result<(), String> {
    let upto = ctx.log.appended();
    ctx.log
        .durable(upto, Urgency::Now)
        .await
        .map_err(|err| format!("not run: {err}"))
}
