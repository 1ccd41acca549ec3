//! What the rest of the orchestrator asks of a worktree agent: its worktree restored at resume,
//! present before a revival, written before a work tool runs, its sandbox, and the facts other
//! processes appended about it.

use std::sync::Arc;

use arbor_protocol::{ThreadId, WorktreeFact};
use arbor_rollout::log::Urgency;

use super::worktree::{AgentWorktree, missing};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Waits until everything appended so far is on disk: a branch made, a checkout written or a
/// worktree removed is a change outside the session, and the log holds what asked for it first.
pub async fn durable_now(ctx: &Ctx) -> Result<(), String> {
    ctx.log
        .durable(ctx.log.appended(), Urgency::Now)
        .await
        .map_err(|err| format!("not done: {err}"))
}

/// The worktree of a stored agent, for registration at resume; a missing one is a notice now
/// and an error when the agent is revived.
pub fn restore(
    ctx: &Ctx,
    state: &arbor_agent_graph::SessionState,
    id: ThreadId,
    path: &arbor_protocol::AgentPath,
    notices: &mut Vec<String>,
) -> Option<Arc<AgentWorktree>> {
    let record = state.worktree(id).filter(|record| !record.removed)?;
    let wt = AgentWorktree::from_record(&ctx.config.home, record);
    if !wt.dir.is_dir() {
        notices.push(format!("{path}: {}", missing(&wt)));
    }
    Some(Arc::new(wt))
}

/// Before an agent is revived: its worktree must still be there.
pub fn check_present(agent: &Agent) -> Result<(), String> {
    match &agent.identity.worktree {
        Some(wt) if !wt.is_removed() && !wt.dir.is_dir() => Err(missing(wt)),
        _ => Ok(()),
    }
}

/// Waits until the agent's worktree (if it has one) has its files, before a work tool runs.
pub async fn ready(agent: &Agent) -> Result<(), String> {
    match &agent.identity.worktree {
        Some(wt) => wt.ready().await,
        None => Ok(()),
    }
}

/// A fact another process appended about an agent's worktree (`arbor merge`).
pub fn ingest(ctx: &Ctx, thread: ThreadId, fact: &WorktreeFact) {
    let Some(wt) = ctx
        .registry
        .get(thread)
        .and_then(|agent| agent.identity.worktree.clone())
    else {
        return;
    };
    match fact {
        WorktreeFact::Merged(merged) => wt.set_merged(&merged.commit, &merged.into),
        WorktreeFact::Removed => wt.set_removed(),
        WorktreeFact::Created(_) => {}
    }
}

/// The sandbox of a worktree agent: rooted at its cwd, writable although the worktree lies
/// in the (protected) arbor home, with the checkouts it forked from read-only.
pub fn launcher(ctx: &Ctx, agent: &Agent) -> Option<Arc<arbor_tools::SandboxLauncher>> {
    let wt = agent.identity.worktree.as_ref()?;
    let mut read_only = vec![wt.source_top(), ctx.config.cwd.clone()];
    read_only.dedup();
    Some(ctx.approvals.worktree_launcher(
        agent.identity.caps.sandbox,
        agent.identity.cwd(),
        read_only,
    ))
}
