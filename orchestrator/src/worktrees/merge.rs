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

use super::summary::work_status;
use super::{AgentWorktree, lock};
use crate::agent::Agent;
use crate::runtime::Inner;
use crate::turn_end::Outcome;

/// What a merge did.
#[derive(Debug)]
pub struct Merged {
    pub report: MergeReport,
    /// The commit on the agent's branch that holds what was merged.
    pub commit: String,
    /// The checkout it merged into.
    pub into: PathBuf,
}

/// The error for an agent that works in its parent's checkout.
pub fn not_a_worktree(path: &AgentPath) -> String {
    format!(
        "{path} works in the shared checkout (isolation \"shared\"): its changes are already \
         there, so there is nothing to diff or merge"
    )
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
fn parent_label(inner: &Inner, agent: &Agent) -> AgentPath {
    agent
        .identity
        .parent
        .and_then(|id| inner.registry.get(id))
        .map_or_else(AgentPath::root, |parent| parent.path().clone())
}

/// Merges `target`'s changes into the checkout it forked from with `strategy`.
pub async fn merge_worktree(
    inner: &Arc<Inner>,
    target: &Arc<Agent>,
    strategy: Strategy,
) -> Result<Merged, String> {
    let wt = worktree_of(target)?;
    wt.ready().await?;
    // The merge writes a checkout: the log holds what asked for it first.
    crate::tools::work::durable_now(inner).await?;
    // Merges another process made (`arbor merge`) count for where this one starts.
    inner.catch_up().await?;
    let ours = parent_label(inner, target);
    let theirs = target.path().clone();
    let (home, session) = (inner.config.home.clone(), inner.session_id);
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
            .record(&[RolloutItem::Worktree(fact)])
            .map_err(|err| format!("the merge was not recorded: {err}"))?;
        wt.set_merged(&commit, &wt.source.display().to_string());
        inner
            .log
            .durable(lsn, Urgency::Now)
            .await
            .map_err(|err| format!("the merge was not recorded: {err}"))?;
    }
    drop(held);
    inner.events.emit(Event::WorktreeMerged {
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
fn auto_merge(inner: &Inner, agent: &Agent) -> bool {
    inner
        .roles
        .get(&agent.identity.role)
        .ok()
        .and_then(|role| role.auto_merge)
        .unwrap_or(inner.config.auto_merge)
}

/// What a worktree agent's result mail ends with: its change summary, and with `auto_merge`
/// (on a completed turn) what the merge did. `None` for other agents.
pub async fn turn_end_note(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    outcome: &Outcome,
) -> Option<String> {
    let wt = agent.identity.worktree.clone()?;
    if agent.state().closed || wt.is_removed() || agent.identity.parent.is_none() {
        return None;
    }
    let parent = parent_label(inner, agent);
    let merged = if matches!(outcome, Outcome::Completed(_)) && auto_merge(inner, agent) {
        Some(merge_worktree(inner, agent, Strategy::Merge).await)
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
