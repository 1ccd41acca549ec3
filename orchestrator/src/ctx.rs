//! What the turns and tools of a session share: its configuration, its log and the
//! projections of it, the model, the roles, the approval gate, the MCP servers, the project
//! instructions, the agents' handles, the event bus, and the handle on the session task, through which every change to the session's state
//! goes. Nothing here is the session's state; that belongs to the session task.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::Store;
use arbor_model::ModelClient;
use arbor_protocol::{ThreadId, ToolSpec};
use arbor_roles::RoleSet;
use arbor_rollout::log::SessionLog;
use arbor_tools::Policy;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::approval::state::Approvals;
use crate::config::RunConfig;
use crate::error::OrchestratorError;
use crate::events::EventBus;
use crate::mcp_servers::McpServers;
use crate::project_docs::ProjectDocs;
use crate::projection::Projection;
use crate::registry::Registry;
use crate::session::handle::SessionHandle;
use crate::worktrees::repository::SessionRepository;

/// What a session runs on: its id, its log, the projections of the log and the store, and
/// the MCP tool lists cached in the home (read when servers are configured).
#[derive(Debug)]
pub struct SessionFiles {
    pub id: ThreadId,
    /// The session's handle (`None` for a session made before handles).
    pub handle: Option<String>,
    pub log: SessionLog,
    pub projection: Arc<Projection>,
    pub store: Store,
    pub mcp_tools: Option<arbor_mcp::CachedTools>,
    /// The repository the workspace was in when the session was made.
    pub repository: SessionRepository,
}

/// The shared context of one session.
pub struct Ctx {
    pub config: RunConfig,
    pub session_id: ThreadId,
    /// The session's handle, written into the root's header.
    pub handle: Option<String>,
    /// The session log: every fact of the session is appended here.
    pub log: SessionLog,
    /// The rollouts and the store, written from the log's synced lines.
    pub projection: Arc<Projection>,
    pub store: Store,
    pub model: Arc<dyn ModelClient>,
    pub roles: RoleSet,
    /// The command policy, the sandboxes and the approval broker.
    pub approvals: Approvals,
    /// The one repository the session makes worktrees in.
    pub repository: SessionRepository,
    /// The session's MCP servers and the tools agents are offered from them.
    pub mcp: McpServers,
    /// `AGENTS.md` instructions by directory, read once per session.
    pub project_docs: ProjectDocs,
    /// Every agent's handle, by id and by open path.
    pub registry: Registry,
    pub events: EventBus,
    /// The session task.
    pub session: SessionHandle,
    /// Set by the session task once the tree's token budget is used up: a running turn makes
    /// no further request.
    budget_spent: AtomicBool,
    /// Tool specs by tool list, built once and shared by every request. A cache, not state of
    /// the session: any thread may fill it, and what it holds never changes.
    tool_specs: Mutex<HashMap<Vec<String>, Arc<Vec<ToolSpec>>>>,
    /// The session's token: every agent's token descends from it.
    pub root_token: CancellationToken,
    pub tracker: TaskTracker,
    /// Lines of other processes the session task applied so far.
    pub ingested: watch::Sender<u64>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("session_id", &self.session_id)
            .field("agents", &self.registry.len())
            .finish_non_exhaustive()
    }
}

impl Ctx {
    /// Assembles a session's context around the handle on its (not yet started) task.
    pub fn new(
        config: RunConfig,
        files: SessionFiles,
        model: Arc<dyn ModelClient>,
        roles: RoleSet,
        policy: Policy,
        session: SessionHandle,
    ) -> Self {
        let approvals = Approvals::new(policy, config.allow_network, config.approval_terminal)
            .protecting_home(&config.home)
            .protecting_repository(files.repository.git_dirs(&config.cwd));
        Self {
            approvals,
            mcp: McpServers::new(&config, files.mcp_tools.as_ref()),
            project_docs: ProjectDocs::new(config.project_docs),
            config,
            session_id: files.id,
            handle: files.handle,
            events: EventBus::new(files.log.clone()),
            log: files.log,
            projection: files.projection,
            store: files.store,
            repository: files.repository,
            model,
            roles,
            registry: Registry::default(),
            session,
            budget_spent: AtomicBool::new(false),
            tool_specs: Mutex::new(HashMap::new()),
            root_token: CancellationToken::new(),
            tracker: TaskTracker::new(),
            ingested: watch::Sender::new(0),
        }
    }

    /// Applies every line other processes have appended to the log up to now before going on
    /// (an answer given with `arbor approve` counts for the request this process opens next).
    pub async fn catch_up(&self) -> Result<(), OrchestratorError> {
        let sent = self.log.catch_up().await?;
        let mut ingested = self.ingested.subscribe();
        ingested
            .wait_for(|applied| *applied >= sent)
            .await
            .map(|_| ())
            .map_err(|_| OrchestratorError::Stopped)
    }

    /// Whether the tree's token budget is used up.
    pub fn budget_spent(&self) -> bool {
        self.budget_spent.load(Ordering::Acquire)
    }

    /// The session task saw the budget used up.
    pub fn spend_budget(&self) {
        self.budget_spent.store(true, Ordering::Release);
    }

    /// The specs for a tool list, built by `build` the first time the list is seen.
    pub fn tool_specs(
        &self,
        tools: &[String],
        build: impl FnOnce() -> Vec<ToolSpec>,
    ) -> Arc<Vec<ToolSpec>> {
        let mut cache = self
            .tool_specs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(specs) = cache.get(tools) {
            return Arc::clone(specs);
        }
        let specs = Arc::new(build());
        cache.insert(tools.to_vec(), Arc::clone(&specs));
        specs
    }
}
