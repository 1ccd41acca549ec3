//! The session's approval state: the command policy, the sandboxes, the session's approvals,
//! the denial breaker, the terminal's prompts, the requests waited on and the ledger. Locks of
//! their own, not the session's state: each is an approval-side cache or queue that any turn's
//! gate reads and fills without waiting for the session task.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::OverrideKey;
use arbor_protocol::{SandboxMode, ThreadId};
use arbor_tools::{Policy, SandboxLauncher, SandboxStatus};
use tokio::sync::mpsc;

use super::ledger::Ledger;
use super::prompt::ApprovalPrompt;
use super::waiters::Watched;

/// The session's approval state.
#[derive(Debug)]
pub struct Approvals {
    pub(super) policy: Policy,
    /// One sandbox launcher per (mode, workspace), built on first use.
    launchers: Mutex<HashMap<(SandboxMode, PathBuf), Arc<SandboxLauncher>>>,
    allow_network: bool,
    /// Paths no sandbox may write, wherever they lie: the arbor home (its store holds the
    /// approvals, so a sandboxed agent could otherwise approve its own request).
    protected: Vec<PathBuf>,
    /// The git directories of the repository the session started in, read-only in every
    /// sandbox too (`worktrees/repository.rs`).
    repository: Vec<PathBuf>,
    /// Commands the user approved for the session: (canonical command, cwd, escalated).
    for_session: Mutex<HashSet<(String, String, bool)>>,
    /// Consecutive denials per agent turn (guardian reviews).
    pub(super) breaker: Mutex<arbor_guardian::DenialBreaker<ThreadId>>,
    prompts: Option<mpsc::UnboundedSender<ApprovalPrompt>>,
    prompts_rx: Mutex<Option<mpsc::UnboundedReceiver<ApprovalPrompt>>>,
    pub(super) watched: Arc<Watched>,
    /// Every request of the session and every override, as the driver knows them.
    ledger: Mutex<Ledger>,
    /// Serialises reviews through the one guardian.
    pub(super) review: tokio::sync::Mutex<()>,
    root_task: Mutex<Option<String>>,
}

impl Approvals {
    /// The approval state of a session under `policy`; `terminal` when a terminal answers.
    pub fn new(policy: Policy, allow_network: bool, terminal: bool) -> Self {
        let (prompts, prompts_rx) = if terminal {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        Self {
            policy,
            launchers: Mutex::new(HashMap::new()),
            allow_network,
            protected: Vec::new(),
            repository: Vec::new(),
            for_session: Mutex::new(HashSet::new()),
            breaker: Mutex::new(arbor_guardian::DenialBreaker::new()),
            prompts,
            prompts_rx: Mutex::new(prompts_rx),
            watched: Arc::new(Watched::default()),
            ledger: Mutex::new(Ledger::default()),
            review: tokio::sync::Mutex::new(()),
            root_task: Mutex::new(None),
        }
    }

    /// Keeps `home` read-only in every sandbox of the session, wherever it lies.
    pub fn protecting_home(mut self, home: &Path) -> Self {
        self.protected = vec![home.to_path_buf()];
        self
    }

    /// Keeps `dirs` (the git directories of the session's repository) read-only in every
    /// sandbox of the session, wherever they lie.
    pub fn protecting_repository(mut self, dirs: Vec<PathBuf>) -> Self {
        self.repository = dirs;
        self
    }

    /// The terminal's queue of approval prompts, once.
    pub fn take_prompts(&self) -> Option<mpsc::UnboundedReceiver<ApprovalPrompt>> {
        self.prompts_rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    pub(super) fn prompt(&self, prompt: ApprovalPrompt) {
        if let Some(prompts) = &self.prompts {
            let _ = prompts.send(prompt);
        }
    }

    /// The session's requests and overrides.
    pub(super) fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sandbox of `mode` rooted at `workspace`.
    pub fn launcher(&self, mode: SandboxMode, workspace: &Path) -> Arc<SandboxLauncher> {
        self.cached(mode, workspace, |launcher| launcher)
    }

    /// The sandbox of a worktree agent: `mode` rooted at its `workspace` (which stays writable
    /// although it lies in the protected home), with `read_only` (the checkouts it forked from)
    /// kept read-only like the home.
    pub fn worktree_launcher(
        &self,
        mode: SandboxMode,
        workspace: &Path,
        read_only: Vec<PathBuf>,
    ) -> Arc<SandboxLauncher> {
        self.cached(mode, workspace, |launcher| {
            launcher
                .also_read_only(read_only, "a checkout this agent forked from")
                .writable_workspace()
        })
    }

    /// The launcher of (mode, workspace), built once: the home protected, then `finish`.
    fn cached(
        &self,
        mode: SandboxMode,
        workspace: &Path,
        finish: impl FnOnce(SandboxLauncher) -> SandboxLauncher,
    ) -> Arc<SandboxLauncher> {
        let mut launchers = self
            .launchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let made = launchers
            .entry((mode, workspace.to_path_buf()))
            .or_insert_with(|| {
                let launcher = SandboxLauncher::new(mode, workspace, self.allow_network)
                    .protecting(self.protected.clone())
                    .also_read_only(
                        self.repository.clone(),
                        "the git repository the session started in",
                    );
                Arc::new(finish(launcher))
            });
        Arc::clone(made)
    }

    /// What the sandbox of `mode` at `workspace` really enforces.
    pub fn sandbox_status(&self, mode: SandboxMode, workspace: &Path) -> SandboxStatus {
        self.launcher(mode, workspace).status().clone()
    }

    pub(super) fn cached_for_session(&self, key: &OverrideKey) -> bool {
        self.for_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&(key.command.clone(), key.cwd.clone(), key.escalated))
    }

    pub(super) fn cache_for_session(&self, key: &OverrideKey) {
        self.for_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((key.command.clone(), key.cwd.clone(), key.escalated));
    }

    pub(super) fn root_task(&self) -> Option<String> {
        self.root_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set_root_task(&self, task: &str) {
        *self
            .root_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(task.to_string());
    }
}
