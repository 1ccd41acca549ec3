//! Worktrees from another `arbor` process (`arbor diff`, `arbor merge`, `arbor tree`, `arbor
//! close` on a stopped session): what the session's view (the store with the log's later lines)
//! says about them, and git. A merge or a removal is a `worktree` line appended with
//! `append_external` under the session's worktree lock, so a live driver and later readers see
//! it; nothing here revives an agent or writes the store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arbor_agent_graph::{AgentRow, WorktreeRecord};
use arbor_protocol::{
    AgentPath, ChangeSummary, RolloutItem, ThreadId, WorktreeFact, WorktreeMerged,
};
use arbor_rollout::log::append_external;
use arbor_worktree::{Author, Git, MergeReport, MergeSpec, Strategy};

use super::worktree::{WORKTREES_DIR, lock, not_a_worktree};
use crate::error::OrchestratorError;
use crate::open::SessionView;

/// Longest diff `arbor diff` prints (a longer one is cut in the middle).
pub const CLI_DIFF_MAX_BYTES: usize = 64 * 1024 * 1024;

/// An agent of a view with a worktree.
#[derive(Debug, Clone)]
pub struct Found {
    pub row: AgentRow,
    pub record: WorktreeRecord,
}

impl Found {
    /// The worktree's directory.
    pub fn dir(&self, home: &Path) -> PathBuf {
        home.join(&self.record.path)
    }

    /// Its changes merge into `into` from here: the last commit merged there, else its start.
    fn merge_base_for(&self, into: &str) -> String {
        match (&self.record.merged, &self.record.merged_into) {
            (Some(commit), Some(merged_into)) if merged_into == into => commit.clone(),
            _ => self.record.base.clone(),
        }
    }
}

fn refused(message: impl Into<String>) -> OrchestratorError {
    OrchestratorError::Refused(message.into())
}

/// The agent `target` names (a path: the open agent there, else the newest; or a thread id),
/// closed ones included (a closed agent's kept worktree can still be merged), if it has a
/// worktree.
pub fn find(view: &SessionView, target: &str) -> Result<Found, OrchestratorError> {
    let target = target.trim();
    let session = view.root.id();
    let row = match ThreadId::parse(target) {
        Ok(id) => view.state.thread(id),
        Err(_) => {
            let path = AgentPath::root()
                .resolve(target)
                .map_err(|err| refused(format!("target `{target}`: {err}")))?;
            view.state.at_path(&path)
        }
    }
    .ok_or_else(|| refused(format!("agent `{target}` not found in session {session}")))?;
    let record = view
        .state
        .worktree(row.record.id())
        .cloned()
        .ok_or_else(|| refused(not_a_worktree(row.record.path())))?;
    if record.removed {
        return Err(refused(format!(
            "the worktree of {} was removed when it was closed",
            row.record.path()
        )));
    }
    Ok(Found {
        row: row.clone(),
        record,
    })
}

fn git() -> Result<Git, OrchestratorError> {
    Git::system().map_err(|err| refused(err.to_string()))
}

/// Git failing is the command failing (exit 1), not a wrong request.
fn failed(err: arbor_worktree::WorktreeError) -> OrchestratorError {
    match err {
        arbor_worktree::WorktreeError::Refused(message) => refused(message),
        err => OrchestratorError::Start(err.to_string()),
    }
}

/// The change summary of every worktree agent of the view whose worktree is there.
pub fn changes(
    home: &Path,
    view: &SessionView,
) -> BTreeMap<ThreadId, Result<ChangeSummary, String>> {
    let mut out = BTreeMap::new();
    let Ok(git) = Git::system() else {
        return out;
    };
    for record in view.state.worktrees.values().filter(|r| !r.removed) {
        let dir = home.join(&record.path);
        let summary = if !arbor_worktree::is_populated(&dir) {
            Err(format!(
                "{} is missing or not checked out yet",
                dir.display()
            ))
        } else {
            arbor_worktree::status(
                &git,
                &dir,
                &record.base,
                record.merged.as_deref(),
                &record.prefix,
            )
            .map(|status| status.summary)
            .map_err(|err| err.to_string())
        };
        out.insert(record.thread_id, summary);
    }
    out
}

/// `arbor diff`: what the agent changed since it started, or under `path` only.
pub fn diff(
    home: &Path,
    session: &str,
    target: &str,
    path: Option<&str>,
) -> Result<String, OrchestratorError> {
    let view = SessionView::open(home, session)?;
    let found = find(&view, target)?;
    let dir = found.dir(home);
    if !arbor_worktree::is_populated(&dir) {
        return Err(refused(format!(
            "the worktree of {} ({}) is missing or not checked out yet",
            found.row.record.path(),
            dir.display()
        )));
    }
    let git = git()?;
    arbor_worktree::diff(
        &git,
        &dir,
        &found.record.base,
        &found.record.prefix,
        path,
        CLI_DIFF_MAX_BYTES,
    )
    .map_err(failed)
}

/// What `arbor merge` did.
#[derive(Debug)]
pub struct OutsideMerge {
    pub path: AgentPath,
    pub report: MergeReport,
    pub commit: String,
    pub into: PathBuf,
    pub branch: String,
}

/// `arbor merge`: commits the agent's work on its branch and merges it into `into` (by
/// default the checkout it forked from). Refused while the agent works.
pub fn merge(
    home: &Path,
    session: &str,
    target: &str,
    into: Option<&Path>,
    strategy: Strategy,
) -> Result<OutsideMerge, OrchestratorError> {
    let first = SessionView::open(home, session)?;
    let session_id = first.root.id();
    let _held = lock(home, session_id).map_err(refused)?;
    // Read again under the lock: a merge that just ended counts for where this one starts.
    let view = SessionView::of(home, first.store.clone(), first.root.clone())?;
    let found = find(&view, target)?;
    let path = found.row.record.path().clone();
    let status = found.row.reported_status(view.driven);
    if status.is_active() {
        return Err(refused(format!(
            "{path} is still working ({status}); wait for it to finish, or stop it with \
             `arbor interrupt`, before merging its changes"
        )));
    }
    let dir = found.dir(home);
    let git = git()?;
    if !dir.is_dir() {
        return Err(refused(format!(
            "the worktree of {path} ({}) is missing",
            dir.display()
        )));
    }
    arbor_worktree::populate(&git, &dir).map_err(failed)?;
    let into = match into {
        Some(dir) => std::fs::canonicalize(dir)
            .map_err(|err| refused(format!("--into {}: {err}", dir.display())))?,
        None => PathBuf::from(&found.record.source),
    };
    let into_text = into.display().to_string();
    let message = format!("arbor: work of {path}");
    let (commit, _) =
        arbor_worktree::commit_work(&git, &dir, &Author::arbor(path.as_str()), &message)
            .map_err(failed)?;
    let from = found.merge_base_for(&into_text);
    let ours = found
        .row
        .record
        .parent_id()
        .and_then(|id| view.state.thread(id))
        .map_or_else(AgentPath::root, |parent| parent.record.path().clone());
    let spec = MergeSpec {
        worktree: &dir,
        commit: &commit,
        from: &from,
        prefix: &found.record.prefix,
        into: &into,
        strategy,
        ours_label: ours.as_str(),
        theirs_label: path.as_str(),
    };
    let report = arbor_worktree::merge(&git, &spec).map_err(failed)?;
    if report.conflicts.is_empty() && commit != from {
        let fact = WorktreeFact::Merged(WorktreeMerged {
            commit: commit.clone(),
            into: into_text,
            files: report.merged.clone(),
        });
        append_external(
            &view.log_path,
            found.record.thread_id,
            &[RolloutItem::Worktree(Box::new(fact))],
        )?;
    }
    Ok(OutsideMerge {
        path,
        report,
        commit,
        into,
        branch: found.record.branch,
    })
}

/// What closing an agent did to one worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// Nothing was unmerged: the worktree and its branch are gone.
    Removed { path: AgentPath, dir: PathBuf },
    /// Something was: the work is committed on the branch, which stays with the worktree.
    Kept {
        path: AgentPath,
        dir: PathBuf,
        branch: String,
        changes: String,
    },
}

/// `arbor close` of a session no process drives: releases the worktrees of the closed agent
/// and its descendants (as a live driver would), deepest first.
pub fn release_closed(
    home: &Path,
    session: &str,
    target: ThreadId,
) -> Result<Vec<Released>, OrchestratorError> {
    let view = SessionView::open(home, session)?;
    if view.driven {
        return Ok(Vec::new());
    }
    let _held = lock(home, view.root.id()).map_err(refused)?;
    let mut ids = vec![target];
    let mut at = 0;
    while at < ids.len() {
        let parent = ids[at];
        ids.extend(
            view.state
                .threads
                .values()
                .filter(|row| row.record.parent_id() == Some(parent))
                .map(|row| row.record.id()),
        );
        at += 1;
    }
    let git = git()?;
    let mut released = Vec::new();
    for id in ids.into_iter().rev() {
        let (Some(record), Some(row)) = (view.state.worktree(id), view.state.thread(id)) else {
            continue;
        };
        let dir = home.join(&record.path);
        if record.removed || !arbor_worktree::is_populated(&dir) {
            continue;
        }
        let path = row.record.path().clone();
        let status = arbor_worktree::status(
            &git,
            &dir,
            &record.base,
            record.merged.as_deref(),
            &record.prefix,
        )
        .map_err(failed)?;
        if status.unmerged == 0 {
            let common = arbor_worktree::Repo::discover(&git, &dir)
                .map_err(failed)?
                .map(|repo| repo.common_dir)
                .ok_or_else(|| refused(format!("{} is not a git worktree", dir.display())))?;
            arbor_worktree::remove(&git, &common, &dir, Some(&record.branch)).map_err(failed)?;
            append_external(
                &view.log_path,
                id,
                &[RolloutItem::Worktree(Box::new(WorktreeFact::Removed))],
            )?;
            released.push(Released::Removed { path, dir });
        } else {
            let message = format!("arbor: work of {path}, kept when it was closed");
            arbor_worktree::commit_work(&git, &dir, &Author::arbor(path.as_str()), &message)
                .map_err(failed)?;
            released.push(Released::Kept {
                path,
                dir,
                branch: record.branch.clone(),
                changes: status.summary.text(),
            });
        }
    }
    Ok(released)
}

/// The folder of a session's worktrees.
pub fn session_folder(home: &Path, session: ThreadId) -> PathBuf {
    home.join(WORKTREES_DIR).join(session.to_string())
}
