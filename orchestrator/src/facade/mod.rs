//! The `Orchestrator` facade: what the CLI and the tests drive. It starts or resumes a session
//! (its files, its lease, the session task), gives the root its prompt, reads the session's
//! state through the session task, and shuts the session down.

mod approvals;
mod compact;
mod files;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arbor_agent_graph::{SessionState, Store};
use arbor_model::ModelClient;
use arbor_protocol::{
    AgentPath, AgentStatus, Event, EventLine, ResponseItem, RolloutLine, ThreadId, Timestamp,
};
use arbor_roles::{Capabilities, RoleSet};
use arbor_rollout::log::{SessionLog, Start, Urgency};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::agent::Agent;
use crate::config::RunConfig;
use crate::ctx::{Ctx, SessionFiles};
use crate::durability::{create_log, watch_failure};
use crate::error::OrchestratorError;
use crate::lease::Lease;
use crate::projection::Projection;
use crate::session::{SessionHandle, SpawnSpec};
use crate::worktrees::repository::SessionRepository;
use arbor_tools::SandboxStatus;
use arbor_tree::{AgentSnapshot, Answer, Input};

/// How long shutdown waits for agent tasks to persist their final state.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The tokio runtime a session runs on (`arbor exec`, `resume`, `followup`, and the
/// benchmarks, so they measure what users run): the session task and every agent task on one
/// worker thread, the caller's own future (the CLI printing events, reading the terminal) on
/// the caller's thread. Agents wait on models, tools and the disk, not on the CPU; on one
/// thread a mail's append, its delivery and the recipient's next step follow each other without
/// a wake-up across threads, which is most of what a message costs besides its sync
/// (`docs/durability.md`). Blocking work (store reads, child processes) runs on tokio's
/// blocking pool.
pub fn session_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
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
    pub(crate) ctx: Arc<Ctx>,
    /// The session task, awaited at shutdown. A lock only to take it out once.
    task: Mutex<Option<JoinHandle<()>>>,
    root: tokio::sync::OnceCell<Arc<Agent>>,
    lease: Lease,
    /// `session.started` has been emitted.
    announced: std::sync::atomic::AtomicBool,
    /// The stamp of a new session's root header (its rollout's and the log's folder).
    root_stamp: Timestamp,
    /// The session's state as its task left it, for reads after shutdown.
    ended: std::sync::OnceLock<Ended>,
}

/// What the session task answered last, before it ended.
#[derive(Debug, Clone)]
struct Ended {
    agents: Vec<AgentSnapshot>,
    usage: arbor_protocol::Usage,
    kept: Vec<AgentPath>,
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
        let mcp = !config.mcp_servers.is_empty();
        let (store, roles, policy, lease, log_path, mcp_tools, (repository, handle)) =
            tokio::task::spawn_blocking(move || {
                // What the kernel offers is probed once per process (it forks a probe): here, off
                // the async workers.
                arbor_tools::sandbox_status(sandbox);
                let store = Store::open(&home)?;
                let handle =
                    arbor_protocol::pick_handle(|h| store.handle_taken(h).unwrap_or(false));
                let roles = RoleSet::load(&home, &cwd)?;
                let policy = arbor_tools::Policy::load(&home, &cwd)?;
                if protect {
                    files::protect_arbor_dir(&cwd);
                }
                let lease = Lease::acquire(&home, session_id)?;
                let log_path = create_log(&home, session_id, root_stamp)?;
                let mcp_tools = mcp.then(|| arbor_mcp::ToolCache::in_home(&home).snapshot());
                let found = (SessionRepository::at_start(&cwd), handle); // before any command
                Ok::<_, OrchestratorError>((
                    store, roles, policy, lease, log_path, mcp_tools, found,
                ))
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
        let files = SessionFiles {
            id: session_id,
            handle: Some(handle),
            log,
            projection,
            store,
            mcp_tools,
            repository,
        };
        let mut orch = Self::assemble(config, files, model, roles, policy, lease, outlets.external);
        orch.root_stamp = root_stamp;
        Ok(orch)
    }

    /// The session's context and its task, over files already open.
    pub(crate) fn assemble(
        config: RunConfig,
        files: SessionFiles,
        model: Arc<dyn ModelClient>,
        roles: RoleSet,
        policy: arbor_tools::Policy,
        lease: Lease,
        external: mpsc::UnboundedReceiver<RolloutLine>,
    ) -> Self {
        let (handle, rx) = SessionHandle::channel();
        let ctx = Arc::new(Ctx::new(config, files, model, roles, policy, handle));
        let task = crate::session::start(&ctx, rx, external);
        watch_failure(&ctx);
        Self {
            ctx,
            task: Mutex::new(Some(task)),
            root: tokio::sync::OnceCell::new(),
            lease,
            announced: std::sync::atomic::AtomicBool::new(false),
            root_stamp: Timestamp::now(),
            ended: std::sync::OnceLock::new(),
        }
    }

    /// Every agent as the session knows it (as it ended, after shutdown).
    async fn snapshot(&self) -> Vec<AgentSnapshot> {
        match self.ended.get() {
            Some(ended) => ended.agents.clone(),
            None => self.ctx.session.snapshot().await,
        }
    }

    /// The root of a resumed session.
    pub(crate) fn set_root(&self, root: Arc<Agent>) {
        let _ = self.root.set(root);
    }

    /// The pid of a dead driver whose lease this process took over.
    pub fn took_over_from(&self) -> Option<u32> {
        self.lease.took_over_from
    }

    pub(crate) fn announce(&self) {
        if !self
            .announced
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            self.ctx.events.emit(Event::SessionStarted {
                session_id: self.ctx.session_id,
                handle: self.ctx.handle.clone(),
            });
        }
    }

    /// What the root's sandbox really enforces on this machine (tell the user when nothing).
    pub fn sandbox_status(&self) -> SandboxStatus {
        // The root's, narrowed by the `default` role as in `root()`.
        let config = &self.ctx.config;
        let sandbox = match self.ctx.roles.get(arbor_roles::DEFAULT_ROLE) {
            Ok(role) => {
                let caps = Capabilities::root(config.sandbox, config.approval_policy);
                caps.narrow_for(role).sandbox
            }
            Err(_) => config.sandbox,
        };
        self.ctx.approvals.sandbox_status(sandbox, &config.cwd)
    }

    /// The session id (the root thread's id).
    pub fn session_id(&self) -> ThreadId {
        self.ctx.session_id
    }

    /// The session's handle (`None` for a session made before handles).
    pub fn handle(&self) -> Option<&str> {
        self.ctx.handle.as_deref()
    }

    /// The store this session writes to.
    pub fn store(&self) -> &Store {
        &self.ctx.store
    }

    /// Every event emitted from now on, in causal order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<EventLine> {
        self.ctx.events.subscribe()
    }

    /// Creates the root agent (once) and gives it `prompt` as a user message, starting a turn.
    pub async fn start(&self, prompt: &str) -> Result<(), OrchestratorError> {
        let created = self.root.get().is_none();
        let root = self.root().await?;
        self.announce();
        if created {
            self.ctx.events.emit(Event::AgentSpawned {
                path: AgentPath::root(),
                nickname: None,
                role: root.identity.meta.role.clone(),
                parent: None,
            });
        }
        self.ctx.session.send(Input::Prompt {
            agent: root.id(),
            items: vec![ResponseItem::Message {
                role: "user".to_string(),
                content: prompt.to_string(),
            }],
        });
        Ok(())
    }

    async fn root(&self) -> Result<&Arc<Agent>, OrchestratorError> {
        self.root
            .get_or_try_init(|| async {
                let ctx = &self.ctx;
                let role = ctx.roles.get(arbor_roles::DEFAULT_ROLE)?;
                let caps = Capabilities::root(ctx.config.sandbox, ctx.config.approval_policy);
                let cwd = ctx.config.cwd.clone();
                let instructions = ctx.project_docs.for_new_agent(role, &cwd, false).await;
                let spawned = ctx
                    .session
                    .spawn(SpawnSpec {
                        id: ctx.session_id,
                        path: AgentPath::root(),
                        parent: None,
                        role: role.clone(),
                        model: ctx.config.model.clone(),
                        provider: Some(ctx.model.catalog().default_provider().to_string()),
                        effort: ctx.config.reasoning_effort.clone(),
                        // A user's `default` role narrows the root as it does any agent of it:
                        // it may take tools, spawning or sandbox away, never add them.
                        caps: caps.narrow_for(role),
                        nickname: false,
                        cwd,
                        internal: false,
                        instructions,
                        stamp: Some(self.root_stamp),
                        history: Vec::new(),
                        task: None,
                        worktree: None,
                    })
                    .await?;
                // The session is known to every other process (its root in the store) before
                // anything is announced: one sync, once per session.
                let upto = ctx.log.appended();
                ctx.log.durable(upto, Urgency::Now).await?;
                ctx.projection.projected(upto).await?;
                Ok(spawned.agent)
            })
            .await
    }

    /// Resident child runtimes right now (the root and internal agents never count).
    pub async fn resident_children(&self) -> usize {
        match self
            .ctx
            .session
            .ask(|ticket| Input::Report { ticket })
            .await
        {
            Some(Answer::Report { resident, .. }) => resident,
            _ => 0,
        }
    }

    /// Waits until no agent has an active or queued turn and none is owed a wake.
    pub async fn wait_quiescent(&self) {
        self.ctx.session.quiescent().await;
    }

    /// Waits until the root's turn is no longer scheduled.
    pub async fn wait_root_idle(&self) {
        if let Some(root) = self.root.get() {
            self.ctx.session.idle(root.id()).await;
        }
    }

    /// The root's status, `not_found` before [`Orchestrator::start`].
    pub async fn root_status(&self) -> AgentStatus {
        match self.root.get() {
            Some(root) => self
                .snapshot()
                .await
                .into_iter()
                .find(|a| a.id == root.id())
                .map_or(AgentStatus::NotFound, |snapshot| snapshot.status),
            None => AgentStatus::NotFound,
        }
    }

    /// The root's last final answer.
    pub async fn root_last_message(&self) -> Option<String> {
        let root = self.root.get()?;
        let all = self.snapshot().await;
        all.into_iter().find(|a| a.id == root.id())?.last_message
    }

    /// A snapshot of the agent at `path` (open), or the most recent closed one there.
    pub async fn agent(&self, path: &AgentPath) -> Option<AgentView> {
        let all = self.snapshot().await;
        let open = all.iter().find(|a| &a.path == path && !a.closed);
        let found = open.or_else(|| all.iter().rev().find(|a| &a.path == path))?;
        self.view(found)
    }

    /// Snapshots of every agent, in creation order.
    pub async fn agents(&self) -> Vec<AgentView> {
        let all = self.snapshot().await;
        all.iter().filter_map(|a| self.view(a)).collect()
    }

    fn view(&self, snapshot: &AgentSnapshot) -> Option<AgentView> {
        let agent = self.ctx.registry.get(snapshot.id)?;
        let meta = &agent.identity.meta;
        Some(AgentView {
            id: snapshot.id,
            path: snapshot.path.clone(),
            nickname: meta.nickname.clone(),
            role: meta.role.clone(),
            model: meta.model.clone(),
            sandbox: agent.identity.caps.sandbox.as_str().to_string(),
            status: snapshot.status.clone(),
            unread: snapshot.unread,
            history: agent.runtime().history.to_vec(),
            closed: snapshot.closed,
            resident: snapshot.resident,
        })
    }

    /// Mail from the user (author `/root`, from outside the tree) to `target`, a path or a
    /// thread id: a line of the log, then delivered; a follow-up wakes (and revives) it.
    pub async fn send_from_user(
        &self,
        target: &str,
        kind: arbor_protocol::MailKind,
        content: &str,
    ) -> Result<arbor_protocol::Mail, OrchestratorError> {
        self.announce();
        let root = self
            .root
            .get()
            .ok_or_else(|| OrchestratorError::Refused("the session has no root yet".into()))?;
        let recipient = crate::tools::resolve_target(&self.ctx, root, target)
            .map_err(OrchestratorError::Refused)?;
        crate::mail::send_from_user(&self.ctx, &recipient, kind, content)
    }

    /// Tokens the tree used in this run, and the agents a spent budget kept from a new turn.
    pub async fn usage_report(&self) -> (arbor_protocol::Usage, Vec<AgentPath>) {
        if let Some(ended) = self.ended.get() {
            return (ended.usage, ended.kept.clone());
        }
        match self
            .ctx
            .session
            .ask(|ticket| Input::Report { ticket })
            .await
        {
            Some(Answer::Report { usage, kept, .. }) => (usage, kept),
            _ => Default::default(),
        }
    }

    /// Reports the end of the run (`session.completed`) with the root's last answer.
    pub async fn complete(&self) {
        let final_message = self.root_last_message().await;
        self.ctx.events.emit(Event::SessionCompleted {
            session_id: self.ctx.session_id,
            final_message,
        });
    }

    /// Interrupts every running turn (Ctrl-C): turns end as `interrupted: <reason>`, their
    /// state is persisted, and no new turn starts.
    pub fn interrupt_all(&self, reason: &str) {
        self.ctx.session.send(Input::Stop {
            reason: reason.to_string(),
        });
    }

    /// Stops every agent but the root (for `--no-wait-children` after the root's turn).
    pub fn stop_children(&self, reason: &str) {
        self.ctx.session.send(Input::StopChildren {
            reason: reason.to_string(),
        });
    }

    /// Shuts the session down: stop every turn, wait for every agent task with a grace period,
    /// end the session task, then write and sync the log, and let the projections finish.
    pub async fn shutdown(&self, reason: &str) {
        self.interrupt_all(reason);
        // The session task stops the agents; until it has, their tokens may not be cancelled.
        self.ctx.session.ask(|ticket| Input::Sync { ticket }).await;
        self.ctx.root_token.cancel();
        self.ctx.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.ctx.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_s = SHUTDOWN_GRACE.as_secs(),
                "agent tasks did not stop in time"
            );
        }
        // What the agents' last steps sent is handled before the session task ends, and what
        // it knows then stays readable.
        if self.ended.get().is_none() {
            let agents = self.ctx.session.snapshot().await;
            let (usage, kept) = self.usage_report().await;
            let _ = self.ended.set(Ended {
                agents,
                usage,
                kept,
            });
        }
        self.ctx.session.shutdown();
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        // No MCP server (nor anything it started) outlives the session.
        crate::tools::mcp::stop(&self.ctx).await;
        let (log, projection, store) = (
            self.ctx.log.clone(),
            Arc::clone(&self.ctx.projection),
            self.ctx.store.clone(),
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
