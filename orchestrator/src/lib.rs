//! The arbor runtime: the `Orchestrator` facade, the agent registry, one task per resident
//! agent, the turn loop, multi-agent tools, mail delivery, the session lease, and the approval
//! gate with its broker (`approval/`).
//!
//! **API Boundary:** `Orchestrator` is what the CLI and the tests drive; everything else is
//! internal.

mod agent;
mod approval;
pub mod config;
mod durability;
mod events;
mod external;
mod ingest;
pub mod lease;
mod legacy;
mod lifecycle;
mod mail;
pub mod open;
mod project_docs;
mod projection;
mod registry;
mod residency;
mod resume;
mod runtime;
mod sampling;
mod scheduler;
mod tools;
mod turn;
mod turn_end;

use std::sync::Arc;
use std::time::Duration;

use arbor_agent_graph::{SessionState, Store};
use arbor_model::ModelClient;
use arbor_protocol::{
    AgentPath, AgentStatus, Event, EventLine, ResponseItem, RolloutLine, ThreadId, Timestamp,
};
use arbor_roles::{Capabilities, RoleSet};
use arbor_rollout::log::{SessionLog, Start, Urgency};
use tokio::sync::mpsc;

use crate::agent::Agent;
pub use crate::approval::{
    ApprovalPrompt, FORBIDDEN_SENTENCE, GUARDIAN_CANNOT_ASK_SENTENCE, TerminalAnswer,
};
pub use crate::config::RunConfig;
pub use crate::durability::LogTotals;
use crate::durability::{create_log, watch_failure};
pub use crate::external::{
    ExternalAnswer, ExternalError, SentExternal, answer_external, close_external,
    interrupt_external, send_external,
};
pub use crate::lease::{Lease, LeaseError};
use crate::lifecycle::{NewAgent, create_agent};
pub use crate::open::SessionView;
use crate::projection::Projection;
pub use crate::resume::{ResumeInfo, find_root};
use crate::runtime::{Inner, Session};
pub use arbor_tools::SandboxStatus;

/// How long shutdown waits for agent tasks to persist their final state.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The tokio runtime a session runs on (`arbor exec`, `resume`, `followup`, and the
/// benchmarks, so they measure what users run): every agent task on one worker thread, the
/// caller's own future (the CLI printing events, reading the terminal) on the caller's thread.
/// Agents wait on models, tools and the disk, not on the CPU; on one thread a mail's commit,
/// its delivery and the recipient's next step follow each other without a wake-up across
/// threads, which is most of what a message costs besides its sync (`docs/durability.md`).
/// Blocking work (store reads, child processes, rollout syncs) runs on tokio's blocking pool.
pub fn session_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
}

/// Why a session could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Store(#[from] arbor_agent_graph::StoreError),
    #[error(transparent)]
    Roles(#[from] arbor_roles::RoleError),
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Policy(#[from] arbor_tools::PolicyError),
    #[error("{0}")]
    Start(String),
}

/// A snapshot of one agent, for callers outside the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentView {
    pub id: ThreadId,
    pub path: AgentPath,
    pub nickname: Option<String>,
    pub role: String,
    pub model: String,
    pub sandbox: String,
    pub status: AgentStatus,
    pub unread: usize,
    pub history: Vec<ResponseItem>,
    pub closed: bool,
    pub resident: bool,
}

/// One session being driven by this process.
#[derive(Debug)]
pub struct Orchestrator {
    inner: Arc<Inner>,
    root: tokio::sync::OnceCell<Arc<Agent>>,
    lease: Lease,
    /// `session.started` has been emitted.
    announced: std::sync::atomic::AtomicBool,
    /// The stamp of a new session's root header (its rollout's and the log's folder).
    root_stamp: Timestamp,
}

impl Orchestrator {
    /// Prepares a new session: opens the store, loads the roles, takes the lease and creates
    /// the session's log. Nothing is written to the log until [`Orchestrator::start`].
    pub async fn new(
        config: RunConfig,
        model: Arc<dyn ModelClient>,
    ) -> Result<Self, OrchestratorError> {
        let home = config.home.clone();
        let cwd = config.cwd.clone();
        let session_id = ThreadId::new();
        // The root's header stamp names its rollout's date folder, which holds the log too.
        let root_stamp = Timestamp::now();
        let sandbox = config.sandbox;
        let protect = sandbox == arbor_protocol::SandboxMode::WorkspaceWrite;
        let (store, roles, policy, lease, log_path) = tokio::task::spawn_blocking(move || {
            // What the kernel offers is probed once per process (it forks a probe): here, off
            // the async workers.
            arbor_tools::sandbox_status(sandbox);
            let store = Store::open(&home)?;
            let roles = RoleSet::load(&home, &cwd)?;
            let policy = arbor_tools::Policy::load(&home, &cwd)?;
            if protect {
                protect_arbor_dir(&cwd);
            }
            let lease = Lease::acquire(&home, session_id)?;
            let log_path = create_log(&home, session_id, root_stamp)?;
            Ok::<_, OrchestratorError>((store, roles, policy, lease, log_path))
        })
        .await
        .map_err(|err| OrchestratorError::Start(err.to_string()))??;
        let (log, outlets) = SessionLog::start(&log_path, Start::default())
            .map_err(|err| OrchestratorError::Start(err.to_string()))?;
        let projection = Projection::start(
            &config.home,
            store.clone(),
            SessionState::new(session_id),
            outlets.synced,
        )
        .map_err(|err| OrchestratorError::Start(err.to_string()))?;
        let session = Session {
            id: session_id,
            log,
            projection,
            store,
        };
        let inner = Arc::new(Inner::new(config, session, model, roles, policy));
        let mut orch = Self::assemble(inner, lease, None, outlets.external);
        orch.root_stamp = root_stamp;
        Ok(orch)
    }

    fn assemble(
        inner: Arc<Inner>,
        lease: Lease,
        root: Option<Arc<Agent>>,
        external: mpsc::UnboundedReceiver<RolloutLine>,
    ) -> Self {
        ingest::watch(&inner, external);
        watch_failure(&inner);
        let cell = tokio::sync::OnceCell::new();
        if let Some(root) = root {
            let _ = cell.set(root);
        }
        Self {
            inner,
            root: cell,
            lease,
            announced: std::sync::atomic::AtomicBool::new(false),
            root_stamp: Timestamp::now(),
        }
    }

    /// The pid of a dead driver whose lease this process took over.
    pub fn took_over_from(&self) -> Option<u32> {
        self.lease.took_over_from
    }

    fn announce(&self) {
        if !self
            .announced
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            self.inner.events.emit(Event::SessionStarted {
                session_id: self.inner.session_id,
            });
        }
    }

    /// The terminal's queue of approval prompts, one at a time in request order; `Some` once,
    /// when the configuration says a terminal answers (`RunConfig::approval_terminal`).
    pub fn take_approval_prompts(&self) -> Option<mpsc::UnboundedReceiver<ApprovalPrompt>> {
        self.inner.approvals.take_prompts()
    }

    /// What the root's sandbox really enforces on this machine (tell the user when nothing).
    pub fn sandbox_status(&self) -> SandboxStatus {
        // The root's, narrowed by the `default` role as in `root()`.
        let config = &self.inner.config;
        let sandbox = match self.inner.roles.get(arbor_roles::DEFAULT_ROLE) {
            Ok(role) => {
                let caps = Capabilities::root(config.sandbox, config.approval_policy);
                caps.narrow_for(role).sandbox
            }
            Err(_) => config.sandbox,
        };
        self.inner
            .approvals
            .sandbox_status(sandbox, &self.inner.config.cwd)
    }

    /// The session id (the root thread's id).
    pub fn session_id(&self) -> ThreadId {
        self.inner.session_id
    }

    /// The store this session writes to.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Every event emitted from now on, in causal order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<EventLine> {
        self.inner.events.subscribe()
    }

    /// Creates the root agent (once) and gives it `prompt` as a user message, starting a turn.
    pub async fn start(&self, prompt: &str) -> Result<(), OrchestratorError> {
        let created = self.root.get().is_none();
        let root = self.root().await?;
        self.announce();
        if created {
            self.inner.events.emit(Event::AgentSpawned {
                path: AgentPath::root(),
                nickname: None,
                role: root.identity.role.clone(),
                parent: None,
            });
        }
        root.state().pending_input.push(ResponseItem::Message {
            role: "user".to_string(),
            content: prompt.to_string(),
        });
        self.inner.request_turn(root);
        Ok(())
    }

    async fn root(&self) -> Result<&Arc<Agent>, OrchestratorError> {
        self.root
            .get_or_try_init(|| async {
                let inner = &self.inner;
                let role = inner.roles.get(arbor_roles::DEFAULT_ROLE)?;
                let caps = Capabilities::root(inner.config.sandbox, inner.config.approval_policy);
                let root = create_agent(
                    inner,
                    NewAgent {
                        id: inner.session_id,
                        path: AgentPath::root(),
                        parent: None,
                        role,
                        model: inner.config.model.clone(),
                        effort: inner.config.reasoning_effort.clone(),
                        // A user's `default` role narrows the root as it does any agent of it:
                        // it may take tools, spawning or sandbox away, never add them.
                        caps: caps.narrow_for(role),
                        nickname: None,
                        cwd: inner.config.cwd.clone(),
                        internal: false,
                        stamp: Some(self.root_stamp),
                        history: Vec::new(),
                        task: None,
                    },
                )
                .await
                .map_err(OrchestratorError::Start)?;
                // The session is known to every other process (its root in the store) before
                // anything is announced: one sync, once per session.
                let upto = inner.log.appended();
                inner
                    .log
                    .durable(upto, Urgency::Now)
                    .await
                    .map_err(|err| OrchestratorError::Start(err.to_string()))?;
                inner
                    .projection
                    .projected(upto)
                    .await
                    .map_err(OrchestratorError::Start)?;
                Ok(root)
            })
            .await
    }

    /// Resident child runtimes right now (the root and internal agents never count).
    pub fn resident_children(&self) -> usize {
        self.inner.resident_count()
    }

    /// Waits until no agent has an active or queued turn and none is owed a wake.
    pub async fn wait_quiescent(&self) {
        self.inner.quiescent().await;
    }

    /// Waits until the root's turn is no longer scheduled.
    pub async fn wait_root_idle(&self) {
        let Some(root) = self.root.get() else {
            return;
        };
        let mut changes = self.inner.changed.subscribe();
        loop {
            changes.borrow_and_update();
            if !root.state().active() {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// The root's status, `not_found` before [`Orchestrator::start`].
    pub fn root_status(&self) -> AgentStatus {
        self.root
            .get()
            .map_or(AgentStatus::NotFound, |root| root.status())
    }

    /// The root's last final answer.
    pub fn root_last_message(&self) -> Option<String> {
        self.root
            .get()
            .and_then(|root| root.state().last_message.clone())
    }

    /// A snapshot of the agent at `path` (open), or the most recent closed one there.
    pub fn agent(&self, path: &AgentPath) -> Option<AgentView> {
        let agent = self.inner.registry.open_at(path).or_else(|| {
            self.inner
                .registry
                .all()
                .into_iter()
                .rev()
                .find(|agent| agent.path() == path)
        })?;
        Some(view(&agent))
    }

    /// Snapshots of every agent, in creation order.
    pub fn agents(&self) -> Vec<AgentView> {
        self.inner.registry.all().iter().map(|a| view(a)).collect()
    }

    /// Mail from the user (author `/root`, from outside the tree) to `target`, a path or a
    /// thread id: a line of the log, then delivered; a follow-up wakes (and revives) it.
    pub async fn send_from_user(
        &self,
        target: &str,
        kind: arbor_protocol::MailKind,
        content: &str,
    ) -> Result<arbor_protocol::Mail, String> {
        self.announce();
        let root = self.root.get().ok_or("the session has no root yet")?;
        let recipient = tools::resolve_target(&self.inner, root, target)?;
        mail::send_from_user(&self.inner, &recipient, kind, content)
    }

    /// Tokens the tree used in this run, and the agents a spent budget kept from a new turn.
    pub fn usage_report(&self) -> (arbor_protocol::Usage, Vec<AgentPath>) {
        self.inner.usage_report()
    }

    /// Reports the end of the run (`session.completed`) with the root's last answer.
    pub fn complete(&self) {
        self.inner.events.emit(Event::SessionCompleted {
            session_id: self.inner.session_id,
            final_message: self.root_last_message(),
        });
    }

    /// Interrupts every running turn (Ctrl-C): turns end as `interrupted: <reason>`, their
    /// state is persisted, and no new turn starts.
    pub fn interrupt_all(&self, reason: &str) {
        self.inner.stop(reason);
    }

    /// Stops every agent but the root (for `--no-wait-children` after the root's turn).
    pub fn stop_children(&self, reason: &str) {
        self.inner.stop_accepting();
        for agent in self.inner.registry.all() {
            if !agent.path().is_root() {
                turn::cancel_turn(&agent, reason);
            }
        }
    }

    /// Shuts the session down: cancel, close the task tracker, wait for every task with a
    /// grace period, then write and sync the log, and let the projections finish.
    pub async fn shutdown(&self, reason: &str) {
        self.inner.stop(reason);
        self.inner.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.inner.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_s = SHUTDOWN_GRACE.as_secs(),
                "agent tasks did not stop in time"
            );
        }
        // No MCP server (nor anything it started) outlives the session.
        tools::mcp::stop(&self.inner).await;
        let (log, projection, store) = (
            self.inner.log.clone(),
            Arc::clone(&self.inner.projection),
            self.inner.store.clone(),
        );
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(err) = log.close() {
                tracing::debug!(error = %err, "the session log did not close cleanly");
            }
            projection.join();
            store.close();
        })
        .await;
    }
}

/// Makes sure `<workspace>/.arbor` exists, so the sandbox keeps it (and the workspace rules and
/// roles in it) read-only: a missing one could be created by a command.
fn protect_arbor_dir(workspace: &std::path::Path) {
    let dir = workspace.join(".arbor");
    if dir.symlink_metadata().is_err()
        && let Err(err) = std::fs::create_dir(&dir)
    {
        tracing::warn!(dir = %dir.display(), error = %err, "cannot create the .arbor directory");
    }
}

fn view(agent: &Agent) -> AgentView {
    let state = agent.state();
    AgentView {
        id: agent.id(),
        path: agent.path().clone(),
        nickname: agent.identity.nickname.clone(),
        role: agent.identity.role.clone(),
        model: agent.identity.model.clone(),
        sandbox: agent.identity.caps.sandbox.as_str().to_string(),
        status: state.status.clone(),
        unread: state.mailbox.unread(),
        history: state.history.to_vec(),
        closed: state.closed,
        resident: agent.is_resident(),
    }
}
