//! Making a child's worktree at spawn: the isolation it gets, then (for `worktree`) a branch
//! and a worktree of its parent's current state, registered before its header is written; its
//! files are checked out in the background while it starts (its work tools wait for them).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_protocol::{AgentPath, Event, Isolation, ThreadId, WorktreeCreated};
use arbor_roles::{Capabilities, Role};
use arbor_tools::gitrepo::find_repository;
use arbor_worktree::{Author, Git, NewWorktree, Repo};

use super::hooks::durable_now;
use super::isolation::{self, Asked};
use super::repository::SessionRepository;
use super::worktree::{AgentWorktree, WORKTREES_DIR, lock};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Most names tried for one worktree before giving up (`name`, `name-2`, …).
const MAX_NAME_TRIES: usize = 1000;

/// What a spawn needs for the child's isolation.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The child's worktree, when it gets one.
    pub worktree: Option<Arc<AgentWorktree>>,
    /// Why the config's default could not apply (told to the user and the model).
    pub notice: Option<String>,
}

/// Decides the isolation of the child at `path` of `caller` and, for `worktree`, makes its
/// worktree. Errors are `spawn_agent`'s, given to the model as they are.
pub async fn prepare(
    ctx: &Arc<Ctx>,
    caller: &Agent,
    path: &AgentPath,
    role: &Role,
    caps: &Capabilities,
    argument: Option<&str>,
) -> Result<Prepared, String> {
    let (isolation, asked) = isolation::decide(ctx.config.worker_isolation, role, caps, argument)?;
    if isolation == Isolation::Shared {
        return Ok(Prepared::default());
    }
    let source = caller.identity.cwd().to_path_buf();
    let refusal = match find_repository(&source) {
        None => Some((isolation::not_a_repository(&source), None)),
        Some(found) => ctx
            .repository
            .admits(&source, &found.common_dir)
            .err()
            .map(|why| (why.clone(), Some(why))),
    };
    if let Some((refusal, why)) = refusal {
        return match asked {
            Asked::Explicitly => Err(refusal),
            Asked::ByDefault => {
                let why = why
                    .as_deref()
                    .map(|why| why.strip_prefix("isolation \"worktree\": ").unwrap_or(why));
                let notice = isolation::fallback_notice(&source, path, why);
                ctx.events.emit(Event::Notice {
                    message: notice.clone(),
                });
                Ok(Prepared {
                    worktree: None,
                    notice: Some(notice),
                })
            }
        };
    }
    // A branch in the user's repository is a change outside the session: the log holds the
    // call that asks for it first.
    durable_now(ctx).await?;
    let (home, session) = (ctx.config.home.clone(), ctx.session_id);
    let (parent, child) = (caller.path().clone(), path.clone());
    let repository = ctx.repository.clone();
    let made = tokio::task::spawn_blocking(move || {
        make(&home, session, &repository, &source, &parent, &child)
    })
    .await
    .map_err(|err| format!("making the worktree failed: {err}"))??;
    Ok(Prepared {
        worktree: Some(Arc::new(made)),
        notice: None,
    })
}

/// The name of an agent's worktree and branch: its path below `/root`, segments joined by `.`
/// (which no segment contains), so nested agents get names of their own.
fn name_of(path: &AgentPath) -> String {
    path.as_str().trim_start_matches("/root/").replace('/', ".")
}

fn make(
    home: &Path,
    session: ThreadId,
    repository: &SessionRepository,
    source: &Path,
    parent: &AgentPath,
    child: &AgentPath,
) -> Result<AgentWorktree, String> {
    let git = Git::system().map_err(|err| format!("isolation \"worktree\": {err}"))?;
    let repo = Repo::discover(&git, source)
        .map_err(|err| err.to_string())?
        .ok_or_else(|| isolation::not_a_repository(source))?;
    // As git sees it too.
    repository.admits(source, &repo.common_dir)?;
    let _lock = lock(home, session)?;
    let session_text = session.to_string();
    let short = session_text.get(..8).unwrap_or(&session_text);
    let folder: PathBuf = home.join(WORKTREES_DIR).join(&session_text);
    let name = name_of(child);
    let mut chosen = None;
    for n in 1..=MAX_NAME_TRIES {
        let candidate = if n == 1 {
            name.clone()
        } else {
            format!("{name}-{n}")
        };
        let branch = format!("arbor/{short}/{candidate}");
        let taken = folder.join(&candidate).symlink_metadata().is_ok()
            || arbor_worktree::branch_exists(&git, &repo, &branch).map_err(|e| e.to_string())?;
        if !taken {
            chosen = Some((candidate, branch));
            break;
        }
    }
    let (candidate, branch) = chosen
        .ok_or_else(|| format!("no free worktree name for {child} after {MAX_NAME_TRIES} tries"))?;
    let dest = folder.join(&candidate);
    let message = format!("arbor: {parent}'s uncommitted changes, where {child} starts");
    let new = NewWorktree {
        source: &repo,
        dest: &dest,
        branch: &branch,
        author: &Author::arbor(parent.as_str()),
        message: &message,
    };
    let created = arbor_worktree::create(&git, &new).map_err(|err| err.to_string())?;
    Ok(AgentWorktree::new(
        home,
        &WorktreeCreated {
            path: format!("{WORKTREES_DIR}/{session_text}/{candidate}"),
            branch,
            base: created.base,
            source: source.display().to_string(),
            prefix: created.prefix,
        },
    ))
}

/// Removes a worktree made for a spawn that then failed, and its branch.
pub async fn discard(ctx: &Ctx, wt: &AgentWorktree) {
    let (dir, branch, source) = (wt.dir.clone(), wt.branch.clone(), wt.source.clone());
    let (home, session) = (ctx.config.home.clone(), ctx.session_id);
    let removed = tokio::task::spawn_blocking(move || -> Result<(), String> {
        let git = Git::system().map_err(|err| err.to_string())?;
        let repo = Repo::discover(&git, &source)
            .map_err(|err| err.to_string())?
            .ok_or_else(|| isolation::not_a_repository(&source))?;
        let _lock = lock(&home, session)?;
        arbor_worktree::remove(&git, &repo.common_dir, &dir, Some(&branch))
            .map_err(|err| err.to_string())
    })
    .await;
    if let Ok(Err(err)) | Err(err) = removed.map_err(|e| e.to_string()) {
        tracing::warn!(error = %err, "the worktree of a failed spawn was not removed");
    }
}

/// A child with a worktree was created: say so, and check its files out in the background.
pub fn started(ctx: &Arc<Ctx>, agent: &Arc<Agent>) {
    let Some(wt) = agent.identity.worktree.clone() else {
        return;
    };
    ctx.events.emit(Event::WorktreeCreated {
        path: agent.path().clone(),
        worktree: wt.dir.display().to_string(),
        branch: wt.branch.clone(),
    });
    let path = agent.path().clone();
    ctx.tracker.spawn(async move {
        if let Err(err) = wt.ready().await {
            tracing::warn!(path = %path, error = %err, "the worktree's files were not written");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_agents_get_names_of_their_own() {
        let name = |p: &str| name_of(&AgentPath::parse(p).expect("path"));
        assert_eq!(name("/root/worker_a"), "worker_a");
        assert_eq!(name("/root/a/b"), "a.b");
    }
}
