//! Whole-tree resume: take the session's lease, bring the store and the rollouts up to the
//! log (open = reconcile), then register every agent reachable through open edges with its
//! status, unread mail and pending approvals — no runtime and no model call. Agents are
//! revived lazily when a turn is granted to them; [`Orchestrator::finish_owed`] grants the
//! turns the last run still owed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arbor_agent_graph::{EdgeStatus, SessionState, Store, ThreadRecord};
use arbor_model::ModelClient;
use arbor_protocol::{AgentPath, AgentStatus, RolloutItem, SandboxMode, StatusChanged, ThreadId};
use arbor_roles::{Capabilities, Role, RoleSet};
use arbor_rollout::log::SessionLog;

use crate::agent::{Agent, Identity};
use crate::config::RunConfig;
use crate::ctx::{Ctx, SessionFiles};
use crate::error::OrchestratorError;
use crate::facade::Orchestrator;
use crate::lease::Lease;
use crate::open::{Reconciled, find_root, log_path_of, reconcile};
use crate::projection::Projection;
use crate::session::handle::Restored;
use crate::worktrees::hooks::restore;
use crate::worktrees::repository::SessionRepository;
use crate::worktrees::worktree::{AgentWorktree, instructions};
use arbor_tree::{Answer, Input, Registration};

/// What a resume found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeInfo {
    /// Agents registered (the root included).
    pub agents: usize,
    /// The pid of a dead driver whose lease was taken over.
    pub took_over_from: Option<u32>,
    /// Things the user should know (roles that no longer exist, repaired statuses).
    pub notices: Vec<String>,
}

struct Loaded {
    store: Store,
    roles: RoleSet,
    policy: arbor_tools::Policy,
    lease: Lease,
    root: ThreadRecord,
    log_path: PathBuf,
    reconciled: Reconciled,
    mcp_tools: Option<arbor_mcp::CachedTools>,
    repository: SessionRepository,
}

fn load(
    home: PathBuf,
    cwd: PathBuf,
    session: String,
    mcp: bool,
) -> Result<Loaded, OrchestratorError> {
    let store = Store::open(&home)?;
    let root = find_root(&store, &session)?;
    // Workspace roles come from the session's own workspace, wherever the user stands now.
    let workspace = if root.meta.cwd.is_empty() {
        cwd
    } else {
        PathBuf::from(&root.meta.cwd)
    };
    let roles = RoleSet::load(&home, &workspace)?;
    let policy = arbor_tools::Policy::load(&home, &workspace)?;
    // Probe the kernel's sandbox support here, off the async workers (once per process).
    arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    let lease = Lease::acquire(&home, root.id())?;
    let log_path = log_path_of(&home, &root);
    let reconciled = reconcile(&home, &store, root.id(), &log_path)?;
    let mcp_tools = mcp.then(|| arbor_mcp::ToolCache::in_home(&home).snapshot());
    // The root's header (the store keeps no copy) says which repository the session started
    // in; after `reconcile` its rollout holds the header.
    let header = arbor_rollout::RolloutReader::open(&home.join(&root.rollout_path))
        .ok()
        .and_then(|reader| reader.meta().repository.clone());
    let repository = SessionRepository::recorded(header.as_ref(), &workspace);
    Ok(Loaded {
        store,
        roles,
        policy,
        lease,
        root,
        log_path,
        reconciled,
        mcp_tools,
        repository,
    })
}

impl Orchestrator {
    /// Resumes a stopped session: takes its lease, brings it up to its log and registers its
    /// open tree without loading any runtime or calling the model. `session` is what
    /// [`arbor_agent_graph::Store::find_session`] takes: a handle, an id, a unique prefix of
    /// one, or `--last`.
    pub async fn resume(
        mut config: RunConfig,
        model: Arc<dyn ModelClient>,
        session: &str,
    ) -> Result<(Self, ResumeInfo), OrchestratorError> {
        let (home, cwd, session) = (config.home.clone(), config.cwd.clone(), session.to_string());
        let mcp = !config.mcp_servers.is_empty();
        let loaded = tokio::task::spawn_blocking(move || load(home, cwd, session, mcp))
            .await
            .map_err(|err| OrchestratorError::Start(err.to_string()))??;
        config.cwd = PathBuf::from(&loaded.root.meta.cwd);
        let took_over_from = loaded.lease.took_over_from;
        let Reconciled {
            state,
            start,
            mut notices,
        } = loaded.reconciled;
        let (log, outlets) = SessionLog::start(&loaded.log_path, start)
            .map_err(|err| OrchestratorError::Start(err.to_string()))?;
        let projection = Projection::start(
            &config.home,
            loaded.store.clone(),
            state.clone(),
            outlets.synced,
        )
        .map_err(|err| OrchestratorError::Start(err.to_string()))?;
        let files = SessionFiles {
            id: loaded.root.id(),
            handle: loaded.root.meta.handle.clone(),
            log,
            projection,
            store: loaded.store,
            mcp_tools: loaded.mcp_tools,
            repository: loaded.repository,
        };
        let orch = Orchestrator::assemble(
            config,
            files,
            model,
            loaded.roles,
            loaded.policy,
            loaded.lease,
            outlets.external,
        );
        if let Some(pid) = took_over_from {
            notices.push(format!(
                "took over the lease of process {pid}, which is gone"
            ));
        }
        let cwds = state
            .threads
            .values()
            .map(|row| PathBuf::from(&row.record.meta.cwd));
        orch.ctx.project_docs.preload(cwds.collect()).await;
        let registered = register_tree(&orch.ctx, &state, &mut notices);
        let root = registered
            .get(&loaded.root.id())
            .cloned()
            .ok_or_else(|| OrchestratorError::Start("the session's root is missing".into()))?;
        let pending: Vec<_> = state
            .approvals
            .iter()
            .filter(|a| a.outcome == arbor_agent_graph::ApprovalOutcome::Pending)
            .cloned()
            .collect();
        if !pending.is_empty() {
            notices.push(format!(
                "{} approval request(s) still pending from the last run: `arbor approve` lets \
                 the identical retry through once",
                pending.len()
            ));
        }
        let info = ResumeInfo {
            agents: registered.len(),
            took_over_from,
            notices,
        };
        // Nothing waits for the session task to take the tree in: the registry has every
        // handle, and whatever asks the session task about an agent is handled after the tree
        // (one channel, in order).
        crate::approval::restore(&orch.ctx, &state, pending);
        orch.set_root(root);
        Ok((orch, info))
    }

    /// Grants every turn the last run still owed: agents holding unconsumed mail that asks for
    /// a turn (a spawn's task, a follow-up) are started, within the running cap, and idle
    /// parents owed a wake-once get it (the root only when a process drives it).
    pub fn finish_owed(&self) {
        self.ctx.session.send(Input::FinishOwed);
    }

    /// Starts a turn for every open agent the last run left interrupted (Ctrl-C, SIGTERM, a
    /// crash, `--no-wait-children`), whose input says it continues its task; with `skip_root`
    /// the root is left out (a prompt of its own follows). The turns the last run owed start
    /// too, as [`Self::finish_owed`] starts them, in the same step. Returns the agents
    /// continued, in creation order.
    pub async fn continue_interrupted(&self, skip_root: bool) -> Vec<AgentPath> {
        self.announce();
        let answer = self
            .ctx
            .session
            .ask(|ticket| Input::Continue { ticket, skip_root })
            .await;
        match answer {
            Some(Answer::Continued(paths)) => paths,
            _ => Vec::new(),
        }
    }
}

/// The status of an agent whose task the log lost.
pub const LOST_TASK: &str =
    "its task was lost: arbor stopped before the task reached the session log";

/// Registers the agents reachable from the root through open edges, parents first.
fn register_tree(
    ctx: &Arc<Ctx>,
    state: &SessionState,
    notices: &mut Vec<String>,
) -> HashMap<ThreadId, Arc<Agent>> {
    let mut registered: HashMap<ThreadId, Arc<Agent>> = HashMap::new();
    let mut tree = Vec::with_capacity(state.threads.len());
    let mut rows: Vec<_> = state.threads.values().collect();
    rows.sort_by_key(|row| (row.record.meta.depth, row.record.id()));
    for row in rows {
        let parent = match row.record.parent_id() {
            None => None,
            Some(id) => match registered.get(&id) {
                Some(parent) => Some(Arc::clone(parent)),
                None => continue,
            },
        };
        if row.edge == Some(EdgeStatus::Closed) {
            continue;
        }
        let mut status = row.reported_status(false);
        let unread: Vec<_> = state.unread(row.record.id()).cloned().collect();
        if status == AgentStatus::PendingInit
            && parent.is_some()
            && unread.is_empty()
            && row.record.meta.role != arbor_roles::GUARDIAN_ROLE
        {
            // Its header reached the log and its task did not (a write cut by a crash): it
            // would wait for a task forever.
            status = AgentStatus::Errored(LOST_TASK.to_string());
        }
        let worktree = restore(ctx, state, row.record.id(), row.record.path(), notices);
        let (agent, role) = handle_of(ctx, &row.record, parent.as_ref(), worktree, notices);
        if status != row.record.status {
            // A status the last run left active (or a lost task) is recorded as it is now.
            let line = RolloutItem::Status(StatusChanged {
                status: status.clone(),
            });
            if let Err(err) = ctx.log.append(row.record.id(), [line]) {
                tracing::error!(error = %err, "status not recorded");
            }
        }
        let last_message = match &status {
            AgentStatus::Completed(message) => message.clone(),
            _ => None,
        };
        let registration = Registration {
            id: row.record.id(),
            path: row.record.path().clone(),
            parent: row.record.parent_id(),
            internal: agent.identity.internal,
            status,
            fresh: false,
            unread,
            last_message,
            ticket: None,
        };
        ctx.registry.insert(Arc::clone(&agent));
        tree.push(Restored {
            agent: Arc::clone(&agent),
            role,
            registration,
        });
        registered.insert(row.record.id(), agent);
    }
    ctx.session.restore(tree);
    registered
}

/// The handle of one stored agent (not resident), and the role it runs as now.
fn handle_of(
    ctx: &Ctx,
    record: &ThreadRecord,
    parent: Option<&Arc<Agent>>,
    worktree: Option<Arc<AgentWorktree>>,
    notices: &mut Vec<String>,
) -> (Arc<Agent>, Role) {
    let role = match ctx.roles.get(&record.meta.role) {
        Ok(role) => role.clone(),
        Err(_) if record.meta.role == arbor_roles::GUARDIAN_ROLE => ctx.roles.guardian().clone(),
        Err(_) => {
            notices.push(format!(
                "{}: role '{}' is no longer defined; it keeps its stored settings with the default role's instructions",
                record.path(), record.meta.role
            ));
            ctx.roles
                .get(arbor_roles::DEFAULT_ROLE)
                .cloned()
                .unwrap_or_else(|_| ctx.roles.guardian().clone())
        }
    };
    let sandbox = SandboxMode::parse(&record.meta.sandbox).unwrap_or(SandboxMode::ReadOnly);
    let mut caps = match parent {
        Some(parent) => parent.identity.caps.narrow_for(&role),
        None => Capabilities::root(sandbox, ctx.config.approval_policy).narrow_for(&role),
    };
    caps.sandbox = sandbox;
    let identity = Identity {
        meta: record.meta.clone(),
        caps,
        rollout_path: ctx.config.home.join(&record.rollout_path),
        instructions: instructions(
            ctx.project_docs.instructions(
                &role,
                std::path::Path::new(&record.meta.cwd),
                record.meta.role == arbor_roles::GUARDIAN_ROLE,
            ),
            worktree.as_deref(),
        ),
        internal: record.meta.role == arbor_roles::GUARDIAN_ROLE,
        worktree,
    };
    let token = match parent {
        Some(parent) => parent.token.child_token(),
        None => ctx.root_token.child_token(),
    };
    (Agent::new(identity, token, ctx.log.clone()), role)
}
