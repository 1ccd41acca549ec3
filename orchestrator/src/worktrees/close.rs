//! Closing a worktree agent: its worktree and branch are removed when nothing in it is
//! unmerged (a `removed` line of the agent's), and kept otherwise, its work committed on its
//! branch so that `git log <branch>` and `arbor merge` find it. Descendants behind the closed
//! edge are released the same way, deepest first. Nothing is removed that arbor cannot tell is
//! merged.

use std::sync::Arc;

use arbor_protocol::{Event, RolloutItem, WorktreeFact};
use arbor_worktree::{Author, Git, Repo};
use serde_json::{Value, json};

use super::hooks::durable_now;
use super::summary::work_status;
use super::worktree::{AgentWorktree, lock};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Releases the worktrees of a closed agent and its descendants; what happened to the
/// agent's own, for `close_agent`'s output (`None` when it had none).
pub async fn release(ctx: &Arc<Ctx>, target: &Arc<Agent>) -> Option<Value> {
    let mut agents = vec![Arc::clone(target)];
    let mut at = 0;
    while at < agents.len() {
        let children = ctx.registry.children(agents[at].id());
        agents.extend(children);
        at += 1;
    }
    let mut own = None;
    for agent in agents.iter().rev() {
        let Some(wt) = agent
            .identity
            .worktree
            .clone()
            .filter(|wt| !wt.is_removed())
        else {
            continue;
        };
        // Nothing it started may still be writing there.
        agent.live.kill_all();
        let outcome = release_one(ctx, agent, &wt).await;
        if agent.id() == target.id() {
            own = Some(outcome);
        }
    }
    own
}

async fn release_one(ctx: &Arc<Ctx>, agent: &Arc<Agent>, wt: &Arc<AgentWorktree>) -> Value {
    let dir = wt.dir.display().to_string();
    let status = match work_status(wt).await {
        Ok(status) => status,
        Err(err) => {
            return json!({"kept": dir, "branch": wt.branch, "error": err});
        }
    };
    // Removing a worktree or committing on its branch changes the user's repository: the log
    // holds the close that asks for it first.
    if let Err(err) = durable_now(ctx).await {
        return json!({"kept": dir, "branch": wt.branch, "error": err});
    }
    let (home, session) = (ctx.config.home.clone(), ctx.session_id);
    let job = Arc::clone(wt);
    let path = agent.path().clone();
    let remove = status.unmerged == 0;
    let done = tokio::task::spawn_blocking(move || -> Result<(), String> {
        let _held = lock(&home, session)?;
        let git = Git::system().map_err(|err| err.to_string())?;
        if remove {
            let repo = Repo::discover(&git, &job.dir)
                .map_err(|err| err.to_string())?
                .ok_or_else(|| format!("{} is not a git worktree", job.dir.display()))?;
            arbor_worktree::remove(&git, &repo.common_dir, &job.dir, Some(&job.branch))
                .map_err(|err| err.to_string())
        } else {
            let message = format!("arbor: work of {path}, kept when it was closed");
            arbor_worktree::commit_work(&git, &job.dir, &Author::arbor(path.as_str()), &message)
                .map(|_| ())
                .map_err(|err| err.to_string())
        }
    })
    .await
    .map_err(|err| err.to_string())
    .and_then(|done| done);
    if let Err(err) = done {
        return json!({"kept": dir, "branch": wt.branch, "error": err});
    }
    if remove {
        wt.set_removed();
        if let Err(err) = agent.record([RolloutItem::Worktree(Box::new(WorktreeFact::Removed))]) {
            tracing::error!(path = %agent.path(), error = %err, "worktree removal not recorded");
        }
        ctx.events.emit(Event::WorktreeRemoved {
            path: agent.path().clone(),
            worktree: dir.clone(),
        });
        json!({"removed": dir})
    } else {
        let changes = status.summary.text();
        ctx.events.emit(Event::WorktreeKept {
            path: agent.path().clone(),
            worktree: dir.clone(),
            branch: wt.branch.clone(),
            changes: changes.clone(),
        });
        json!({
            "kept": dir,
            "branch": wt.branch,
            "changes": changes,
            "reason": format!("{} file(s) not merged", status.unmerged),
        })
    }
}
