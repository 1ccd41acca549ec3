//! One agent's worktree as this process knows it ([`AgentWorktree`]: where it is, its branch,
//! what it started from, what of it was merged), the instructions a worktree agent works under,
//! and the session's worktree lock. A leaf: it knows nothing of agents or the session.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::WorktreeRecord;
use arbor_protocol::{AgentPath, ThreadId, WorktreeCreated, WorktreeFact};
use arbor_worktree::Git;

/// The folder of `$ARBOR_HOME` that holds every session's worktrees.
pub const WORKTREES_DIR: &str = "worktrees";

/// One agent's worktree as this process knows it.
#[derive(Debug)]
pub struct AgentWorktree {
    /// The worktree's top directory (absolute).
    pub dir: PathBuf,
    /// The same, relative to `$ARBOR_HOME` (what the log stores).
    pub stored_path: String,
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The parent's checkout it forked from (its cwd then): where its changes merge back.
    pub source: PathBuf,
    /// The agent's cwd inside the worktree, relative to its top.
    pub prefix: String,
    /// The last commit of it merged back, and the checkout it went into. Not the session's
    /// state: a fact about the worktree, set by the merges (of this process or, through its
    /// `merged` line, of another) and read by the summaries and merges that follow.
    merged: Mutex<Option<(String, String)>>,
    removed: AtomicBool,
    /// Its files are written (once, in the background after spawn or at first use).
    ready: tokio::sync::OnceCell<Result<(), String>>,
}

impl AgentWorktree {
    pub fn new(home: &Path, fact: &WorktreeCreated) -> Self {
        Self {
            dir: home.join(&fact.path),
            stored_path: fact.path.clone(),
            branch: fact.branch.clone(),
            base: fact.base.clone(),
            source: PathBuf::from(&fact.source),
            prefix: fact.prefix.clone(),
            merged: Mutex::new(None),
            removed: AtomicBool::new(false),
            ready: tokio::sync::OnceCell::new(),
        }
    }

    /// The worktree a stored record describes.
    pub fn from_record(home: &Path, record: &WorktreeRecord) -> Self {
        let wt = Self::new(home, &created_of(record));
        *wt.lock_merged() = record
            .merged
            .clone()
            .map(|commit| (commit, record.merged_into.clone().unwrap_or_default()));
        wt.removed.store(record.removed, Ordering::SeqCst);
        wt
    }

    /// The fact that records it.
    pub fn created(&self) -> WorktreeFact {
        WorktreeFact::Created(WorktreeCreated {
            path: self.stored_path.clone(),
            branch: self.branch.clone(),
            base: self.base.clone(),
            source: self.source.display().to_string(),
            prefix: self.prefix.clone(),
        })
    }

    /// Where the agent works: its prefix inside the worktree.
    pub fn cwd(&self) -> PathBuf {
        arbor_worktree::Repo::inside(&self.dir, &self.prefix)
    }

    /// The top of the checkout it forked from (its source without the prefix).
    pub fn source_top(&self) -> PathBuf {
        let depth = self.prefix.split('/').filter(|p| !p.is_empty()).count();
        self.source
            .ancestors()
            .nth(depth)
            .unwrap_or(&self.source)
            .to_path_buf()
    }

    /// The commit its changes merge into its source from: the last one merged there, else the
    /// one it started from.
    pub fn merged_from(&self) -> String {
        let source = self.source.display().to_string();
        match self.lock_merged().as_ref() {
            Some((commit, into)) if *into == source => commit.clone(),
            _ => self.base.clone(),
        }
    }

    /// The last commit of it merged anywhere: its changes since are the unmerged ones.
    pub fn merged(&self) -> Option<String> {
        self.lock_merged()
            .as_ref()
            .map(|(commit, _)| commit.clone())
    }

    pub fn set_merged(&self, commit: &str, into: &str) {
        *self.lock_merged() = Some((commit.to_string(), into.to_string()));
    }

    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    pub fn set_removed(&self) {
        self.removed.store(true, Ordering::SeqCst);
    }

    fn lock_merged(&self) -> std::sync::MutexGuard<'_, Option<(String, String)>> {
        self.merged.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until its files are written (writing them the first time): the work tools, the
    /// summaries and merges all start with this.
    pub async fn ready(self: &Arc<Self>) -> Result<(), String> {
        let wt = Arc::clone(self);
        self.ready
            .get_or_init(|| async move {
                if wt.is_removed() {
                    return Err(format!("the worktree {} was removed", wt.dir.display()));
                }
                if !wt.dir.is_dir() {
                    return Err(missing(&wt));
                }
                let done = Arc::clone(&wt);
                tokio::task::spawn_blocking(move || {
                    let git = Git::system().map_err(|err| err.to_string())?;
                    arbor_worktree::populate(&git, &done.dir).map_err(|err| err.to_string())?;
                    // Kept read-only by the sandbox only if it exists (like the workspace's).
                    let arbor_dir = done.cwd().join(".arbor");
                    if arbor_dir.symlink_metadata().is_err() {
                        let _ = std::fs::create_dir(&arbor_dir);
                    }
                    Ok(())
                })
                .await
                .unwrap_or_else(|err| Err(format!("checking out the worktree failed: {err}")))
            })
            .await
            .clone()
    }
}

/// The text for a worktree that is not where the log says.
pub fn missing(wt: &AgentWorktree) -> String {
    format!(
        "its worktree {} is missing (branch {}); restore it with `git worktree add {} {}`, or \
         close the agent",
        wt.dir.display(),
        wt.branch,
        wt.dir.display(),
        wt.branch
    )
}

fn created_of(record: &WorktreeRecord) -> WorktreeCreated {
    WorktreeCreated {
        path: record.path.clone(),
        branch: record.branch.clone(),
        base: record.base.clone(),
        source: record.source.clone(),
        prefix: record.prefix.clone(),
    }
}

/// The instructions of an agent, with what working in a worktree means for it.
pub fn instructions(base: Arc<str>, worktree: Option<&AgentWorktree>) -> Arc<str> {
    match worktree {
        None => base,
        Some(wt) => Arc::from(format!(
            "{base}\n\nYou work in a git worktree of your own, {}, on branch {}, made from your \
             parent's checkout as it was when you were spawned; no other agent writes there. \
             Your parent's checkout is read-only to you, and so is the repository's .git: do not \
             commit, arbor commits your work on your branch when your parent merges it. Your \
             final answer tells your parent what you changed.",
            wt.cwd().display(),
            wt.branch
        )),
    }
}

/// The session's lock for changes to worktrees and merges into checkouts (other `arbor`
/// processes take it too): `$ARBOR_HOME/worktrees/<session>/.lock`.
pub fn lock(home: &Path, session: ThreadId) -> Result<std::fs::File, String> {
    let dir = home.join(WORKTREES_DIR).join(session.to_string());
    std::fs::create_dir_all(&dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let path = dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
    file.lock()
        .map_err(|err| format!("cannot lock {}: {err}", path.display()))?;
    Ok(file)
}

/// The error for an agent that works in its parent's checkout.
pub fn not_a_worktree(path: &AgentPath) -> String {
    format!(
        "{path} works in the shared checkout (isolation \"shared\"): its changes are already \
         there, so there is nothing to diff or merge"
    )
}
