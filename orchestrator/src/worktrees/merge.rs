//! Merging a worktree agent's changes back into the checkout it forked from: its work is
//! committed on its branch, then merged three-way (`arbor_worktree::merge`: all of it or, with a
//! conflict, nothing). A clean merge is a `merged` line of the agent's, durable before the
//! session's worktree lock is let go. With `auto_merge`, a turn that completes merges its
//! clean changes; the turn's result mail ends with the agent's change summary and what the
//! merge did.

use std::path::PathBuf;
use std::sync::Arc;

use arbor_protocol::{AgentPath, Event, RolloutItem, WorktreeFact, WorktreeMerged};
use arbor_rollout::log::Urgency;
use arbor_worktree::{Author, Git, MergeReport, MergeSpec, Strategy};

use super::hooks::durable_now;
use super::summary::work_status;
use super::worktree::{AgentWorktree, lock, not_a_worktree};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// What a merge did.
#[derive(Debug)]
pub struct Merged {
    pub report: MergeReport,
    /// The commit on the agent's branch that holds what was merged.
    pub commit: String,
    /// The checkout it merged into.
    pub into: PathBuf,
}

/// The worktree of `agent`, if it still has one.
pub fn worktree_of(agent: &Agent) -> Result<Arc<AgentWorktree>, String> {
    let wt = agent
        .identity
        .worktree
        .clone()
        .ok_or_else(|| not_a_worktree(agent.path()))?;
    if wt.is_removed() {
        return Err(format!(
            "the worktree of {} was removed when it was closed",
            agent.path()
        ));
    }
    Ok(wt)
}

/// The path of the agent whose checkout `agent` forked from.
fn parent_label(ctx: &Ctx, agent: &Agent) -> AgentPath {
    agent
        .identity
        .parent()
        .and_then(|id| ctx.registry.get(id))
        .map_or_else(AgentPath::root, |parent| parent.path().clone())
}

/// Merges `target`'s changes into the checkout it forked from with `strategy`.
pub async fn merge_worktree(
    ctx: &Arc<Ctx>,
    target: &Arc<Agent>,
    strategy: Strategy,
) -> Result<Merged, String> {
    let wt = worktree_of(target)?;
    wt.ready().await?;
    // The merge writes a checkout: the log holds what asked for it first.
    durable_now(ctx).await?;
    // Merges another process made (`arbor merge`) count for where this one starts.
    ctx.catch_up().await.map_err(|err| err.to_string())?;
    let ours = parent_label(ctx, target);
    let theirs = target.path().clone();
    let (home, session) = (ctx.config.home.clone(), ctx.session_id);
    let job = Arc::clone(&wt);
    let (held, commit, from, report) = tokio::task::spawn_blocking(move || {
        let held = lock(&home, session)?;
        let git = Git::system().map_err(|err| err.to_string())?;
        let message = format!("arbor: work of {theirs}");
        let (commit, _) =
            arbor_worktree::commit_work(&git, &job.dir, &Author::arbor(theirs.as_str()), &message)
                .map_err(|err| err.to_string())?;
        let from = job.merged_from();
        let spec = MergeSpec {
            worktree: &job.dir,
            commit: &commit,
            from: &from,
            prefix: &job.prefix,
            into: &job.source,
            strategy,
            ours_label: ours.as_str(),
            theirs_label: theirs.as_str(),
        };
        let report = arbor_worktree::merge(&git, &spec).map_err(|err| err.to_string())?;
        Ok::<_, String>((held, commit, from, report))
    })
    .await
    .map_err(|err| format!("the merge failed to run: {err}"))??;
    if report.conflicts.is_empty() && commit != from {
        let fact = WorktreeFact::Merged(WorktreeMerged {
            commit: commit.clone(),
            into: wt.source.display().to_string(),
            files: report.merged.clone(),
        });
        let lsn = target
            .record([RolloutItem::Worktree(Box::new(fact))])
            .map_err(|err| format!("the merge was not recorded: {err}"))?;
        wt.set_merged(&commit, &wt.source.display().to_string());
        ctx.log
            .durable(lsn, Urgency::Now)
            .await
            .map_err(|err| format!("the merge was not recorded: {err}"))?;
    }
    drop(held);
    ctx.events.emit(Event::WorktreeMerged {
        path: target.path().clone(),
        into: wt.source.display().to_string(),
        merged: report.merged.clone(),
        conflicts: report.conflicts.iter().map(|c| c.path.clone()).collect(),
    });
    Ok(Merged {
        report,
        commit,
        into: wt.source.clone(),
    })
}

/// Whether `agent`'s clean changes merge when its turn completes: its role's `auto_merge`,
/// else the config's.
fn auto_merge(ctx: &Ctx, agent: &Agent) -> bool {
    ctx.roles
        .get(&agent.identity.meta.role)
        .ok()
        .and_then(|role| role.auto_merge)
        .unwrap_or(ctx.config.auto_merge)
}

/// What a worktree agent's result mail ends with: its change summary, and with `auto_merge`
/// (on a turn that `completed`) what the merge did. `None` for other agents, and for a closed
/// one (which sends no result).
pub async fn turn_end_note(ctx: &Arc<Ctx>, agent: &Arc<Agent>, completed: bool) -> Option<String> {
    let wt = agent.identity.worktree.clone()?;
    if !ctx.registry.is_open(agent) || wt.is_removed() || agent.identity.parent().is_none() {
        return None;
    }
    let parent = parent_label(ctx, agent);
    let merged = if completed && auto_merge(ctx, agent) {
        Some(merge_worktree(ctx, agent, Strategy::Merge).await)
    } else {
        None
    };
    let mut lines = vec![match work_status(&wt).await {
        Ok(status) => format!(
            "Worktree {} (branch {}): {}.",
            wt.cwd().display(),
            wt.branch,
            status.summary.text()
        ),
        Err(err) => format!(
            "Worktree {}: its changes are unknown: {err}",
            wt.cwd().display()
        ),
    }];
    match merged {
        None => {}
        Some(Ok(merged))
            if merged.report.conflicts.is_empty() && merged.report.merged.is_empty() => {}
        Some(Ok(merged)) if merged.report.conflicts.is_empty() => lines.push(format!(
            "Auto-merge: merged into {parent}'s checkout {}: {}.",
            merged.into.display(),
            merged.report.merged.join(", ")
        )),
        Some(Ok(merged)) => lines.push(format!(
            "Auto-merge: not merged, {parent}'s checkout is unchanged; conflicts in {}. Left \
             for {parent}: diff_agent shows the changes, merge_agent merges them (strategy \
             ours, theirs or union resolves the conflicts).",
            merged
                .report
                .conflicts
                .iter()
                .map(|c| c.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Some(Err(err)) => lines.push(format!("Auto-merge failed: {err}")),
    }
    Some(format!("---\n{}", lines.join("\n")))
}
