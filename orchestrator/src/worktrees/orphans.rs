//! Orphan worktrees: folders under `$ARBOR_HOME/worktrees/<session>/` that no open agent
//! works in — kept when their agent was closed with unmerged changes, made by a spawn that
//! arbor stopped before recording, or left by a session that is gone. `arbor doctor` lists
//! them; `arbor gc` removes them with [`remove_orphan_worktree`], which first commits what a
//! worktree holds on its branch and keeps the branch while anything on it is unmerged, so no
//! work is lost.

use std::path::{Path, PathBuf};

use arbor_agent_graph::STATE_FILE_NAME;
use arbor_protocol::{AgentPath, RolloutItem, ThreadId, WorktreeFact};
use arbor_rollout::log::append_external;
use arbor_worktree::{Author, Git, Repo};

use super::worktree::{WORKTREES_DIR, lock};
use crate::open::SessionView;

/// A worktree folder no open agent owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanWorktree {
    pub dir: PathBuf,
    /// The session whose folder holds it (when the folder is named by one).
    pub session: Option<ThreadId>,
    /// The agent it was made for, when the session knows it.
    pub agent: Option<(ThreadId, AgentPath)>,
    pub branch: Option<String>,
    /// Why it is an orphan.
    pub reason: String,
    /// Files changed in it and not merged back, when git could tell.
    pub unmerged: Option<u64>,
    base: Option<String>,
    merged: Option<String>,
    prefix: String,
}

/// Every orphan worktree under `home`, by folder.
pub fn list_orphan_worktrees(home: &Path) -> Result<Vec<OrphanWorktree>, String> {
    let root = home.join(WORKTREES_DIR);
    let Ok(sessions) = std::fs::read_dir(&root) else {
        return Ok(Vec::new());
    };
    let has_store = home.join(STATE_FILE_NAME).exists();
    let git = Git::system().ok();
    let mut orphans = Vec::new();
    for session_dir in sessions.flatten() {
        let name = session_dir.file_name().to_string_lossy().into_owned();
        let session = ThreadId::parse(&name).ok();
        let view = session
            .filter(|_| has_store)
            .and_then(|id| SessionView::open(home, &id.to_string()).ok());
        let Ok(entries) = std::fs::read_dir(session_dir.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.starts_with('.') || !entry.path().is_dir() {
                continue;
            }
            let stored = format!("{WORKTREES_DIR}/{name}/{file}");
            if let Some(orphan) = judge(&entry.path(), &stored, session, view.as_ref()) {
                orphans.push(with_unmerged(orphan, git.as_ref()));
            }
        }
    }
    orphans.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(orphans)
}

/// Whether the worktree at `dir` is an orphan, and why.
fn judge(
    dir: &Path,
    stored: &str,
    session: Option<ThreadId>,
    view: Option<&SessionView>,
) -> Option<OrphanWorktree> {
    let mut orphan = OrphanWorktree {
        dir: dir.to_path_buf(),
        session,
        agent: None,
        branch: None,
        reason: String::new(),
        unmerged: None,
        base: None,
        merged: None,
        prefix: String::new(),
    };
    let Some(view) = view else {
        orphan.reason = match session {
            Some(id) => format!("its session {id} is not in the store"),
            None => "its folder is not named by a session".to_string(),
        };
        return Some(orphan);
    };
    let Some(record) = view.state.worktrees.values().find(|r| r.path == stored) else {
        orphan.reason = "no agent of its session owns it (arbor stopped between making it and \
                         recording it)"
            .to_string();
        return Some(orphan);
    };
    let row = view.state.thread(record.thread_id)?;
    orphan.agent = Some((record.thread_id, row.record.path().clone()));
    orphan.branch = Some(record.branch.clone());
    orphan.base = Some(record.base.clone());
    orphan.merged = record.merged.clone();
    orphan.prefix = record.prefix.clone();
    orphan.reason = if record.removed {
        "its agent's worktree was removed, but the folder is still there".to_string()
    } else if view.state.behind_closed(row) {
        format!("its agent {} is closed", row.record.path())
    } else {
        return None;
    };
    Some(orphan)
}

fn with_unmerged(mut orphan: OrphanWorktree, git: Option<&Git>) -> OrphanWorktree {
    if let (Some(git), Some(base)) = (git, &orphan.base)
        && arbor_worktree::is_populated(&orphan.dir)
        && let Ok(status) = arbor_worktree::status(
            git,
            &orphan.dir,
            base,
            orphan.merged.as_deref(),
            &orphan.prefix,
        )
    {
        orphan.unmerged = Some(status.unmerged);
    }
    orphan
}

/// Removes an orphan worktree (one [`list_orphan_worktrees`] returned). What it holds is
/// committed on its branch first; the branch is deleted only when nothing on it is unmerged.
/// Returns what was done, in one sentence.
pub fn remove_orphan_worktree(home: &Path, orphan: &OrphanWorktree) -> Result<String, String> {
    let _held = match orphan.session {
        Some(session) => Some(lock(home, session)?),
        None => None,
    };
    let git = Git::system().map_err(|err| err.to_string())?;
    // Only a worktree of its own (a `.git` file at its top), never a repository around it.
    let top = std::fs::canonicalize(&orphan.dir).unwrap_or_else(|_| orphan.dir.clone());
    let repo = Repo::discover(&git, &orphan.dir).ok().flatten();
    let Some(repo) = repo.filter(|repo| repo.toplevel == top && orphan.dir.join(".git").is_file())
    else {
        std::fs::remove_dir_all(&orphan.dir)
            .map_err(|err| format!("cannot remove {}: {err}", orphan.dir.display()))?;
        return Ok(format!(
            "removed {} (not a git worktree)",
            orphan.dir.display()
        ));
    };
    let label = orphan
        .agent
        .as_ref()
        .map_or_else(|| "/root".to_string(), |(_, path)| path.to_string());
    let mut branch = orphan.branch.clone();
    if arbor_worktree::is_populated(&orphan.dir) {
        let message = format!("arbor: work of {label}, kept when its worktree was removed");
        arbor_worktree::commit_work(&git, &orphan.dir, &Author::arbor(&label), &message)
            .map_err(|err| err.to_string())?;
        if branch.is_none() {
            branch = git_branch(&git, &orphan.dir);
        }
    }
    let delete_branch = orphan.unmerged == Some(0);
    let deleted = if delete_branch {
        branch.as_deref()
    } else {
        None
    };
    arbor_worktree::remove(&git, &repo.common_dir, &orphan.dir, deleted)
        .map_err(|err| err.to_string())?;
    if let (Some(session), Some((id, _))) = (orphan.session, &orphan.agent)
        && let Ok(view) = SessionView::open(home, &session.to_string())
    {
        append_external(
            &view.log_path,
            *id,
            &[RolloutItem::Worktree(Box::new(WorktreeFact::Removed))],
        )
        .map_err(|err| err.to_string())?;
    }
    Ok(match (&branch, delete_branch) {
        (Some(branch), false) => format!(
            "removed {}; its work stays on branch {branch}",
            orphan.dir.display()
        ),
        _ => format!("removed {} and its branch", orphan.dir.display()),
    })
}

/// Removes the worktrees of sessions just deleted (each one an orphan now) and their folders;
/// what became of each, in one sentence.
pub fn remove_sessions_worktrees(home: &Path, sessions: &[ThreadId]) -> Vec<String> {
    let orphans = match list_orphan_worktrees(home) {
        Ok(orphans) => orphans,
        Err(err) => return vec![format!("worktrees not looked at: {err}")],
    };
    let mut done: Vec<String> = orphans
        .iter()
        .filter(|orphan| orphan.session.is_some_and(|id| sessions.contains(&id)))
        .map(|orphan| remove_orphan_worktree(home, orphan).unwrap_or_else(|err| err))
        .collect();
    for session in sessions {
        let folder = super::outside::session_folder(home, *session);
        // Its lock file may remain; anything else there is a worktree that was not removed.
        let lock = folder.join(".lock");
        if folder.is_dir()
            && std::fs::read_dir(&folder).is_ok_and(|mut entries| {
                entries.all(|entry| entry.is_ok_and(|entry| entry.path() == lock))
            })
            && let Err(err) = std::fs::remove_dir_all(&folder)
        {
            done.push(format!("cannot remove {}: {err}", folder.display()));
        }
    }
    done
}

/// The branch checked out in a worktree.
fn git_branch(git: &Git, dir: &Path) -> Option<String> {
    let repo = Repo::discover(git, dir).ok()??;
    let head = std::fs::read_to_string(repo.git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}
