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
use arbor_protocol::{AgentStatus, SandboxMode, ThreadId};
use arbor_roles::{Capabilities, RoleSet};
use arbor_rollout::log::SessionLog;

use crate::agent::{Agent, Identity};
use crate::open::{Reconciled, log_path_of, reconcile};
use crate::projection::Projection;
use crate::runtime::{Inner, Session};
use crate::{Lease, Orchestrator, OrchestratorError, RunConfig};

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

/// Finds a session's root by id or prefix; a child's id is refused with the root's id.
pub fn find_root(store: &Store, session: &str) -> Result<ThreadRecord, OrchestratorError> {
    if let Ok(id) = ThreadId::parse(session.trim())
        && let Some(thread) = store.thread(id)?
        && thread.parent_id.is_some()
    {
        return Err(OrchestratorError::Start(format!(
            "{id} is the agent {} of session {}, not a session; resume the whole tree with `arbor resume {}`",
            thread.path, thread.session_id, thread.session_id
        )));
    }
    Ok(store.find_session_by_prefix(session)?)
}

struct Loaded {
    store: Store,
    roles: RoleSet,
    policy: arbor_tools::Policy,
    lease: Lease,
    root: ThreadRecord,
    log_path: PathBuf,
    reconciled: Reconciled,
}

fn load(home: PathBuf, cwd: PathBuf, session: String) -> Result<Loaded, OrchestratorError> {
    let store = Store::open(&home)?;
    let root = find_root(&store, &session)?;
    // Workspace roles come from the session's own workspace, wherever the user stands now.
    let workspace = if root.cwd.is_empty() {
        cwd
    } else {
        PathBuf::from(&root.cwd)
    };
    let roles = RoleSet::load(&home, &workspace)?;
    let policy = arbor_tools::Policy::load(&home, &workspace)?;
    // Probe the kernel's sandbox support here, off the async workers (once per process).
    arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    let lease = Lease::acquire(&home, root.id)?;
    let log_path = log_path_of(&home, &root);
    let reconciled = reconcile(&home, &store, root.id, &log_path)?;
    Ok(Loaded {
        store,
        roles,
        policy,
        lease,
        root,
        log_path,
        reconciled,
    })
}

impl Orchestrator {
    /// Resumes a stopped session: takes its lease, brings it up to its log and registers its
    /// open tree without loading any runtime or calling the model. `session` is the root id, a
    /// unique prefix of it, or `--last` handled by the caller.
    pub async fn resume(
        mut config: RunConfig,
        model: Arc<dyn ModelClient>,
        session: &str,
    ) -> Result<(Self, ResumeInfo), OrchestratorError> {
        let (home, cwd, session) = (config.home.clone(), config.cwd.clone(), session.to_string());
        let loaded = tokio::task::spawn_blocking(move || load(home, cwd, session))
            .await
            .map_err(|err| OrchestratorError::Start(err.to_string()))??;
        config.cwd = PathBuf::from(&loaded.root.cwd);
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
        let inner = Arc::new(Inner::new(
            config,
            Session {
                id: loaded.root.id,
                log,
                projection,
                store: loaded.store,
            },
            model,
            loaded.roles,
            loaded.policy,
        ));
        if let Some(pid) = took_over_from {
            notices.push(format!(
                "took over the lease of process {pid}, which is gone"
            ));
        }
        let cwds = state.threads.values().map(|row| PathBuf::from(&row.record.cwd));
        inner.project_docs.preload(cwds.collect()).await;
        let registered = register_tree(&inner, &state, &mut notices);
        let root = registered
            .get(&loaded.root.id)
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
        crate::approval::restore(&inner, &state, pending);
        let orch = Orchestrator::assemble(inner, loaded.lease, Some(root), outlets.external);
        Ok((orch, info))
    }

    /// Grants every turn the last run still owed: agents holding unconsumed mail that asks for
    /// a turn (a spawn's task, a follow-up) are started, within the running cap, and idle
    /// parents owed a wake-once get it (the root only when a process drives it).
    pub fn finish_owed(&self) {
        let inner = &self.inner;
        for agent in inner.registry.all() {
            let owed = {
                let state = agent.state();
                !state.closed && state.mailbox.pending().any(|mail| mail.trigger_turn)
            };
            if owed && !agent.identity.internal {
                inner.request_turn(&agent);
            }
        }
        for agent in inner.registry.all() {
            crate::turn_end::maybe_wake_once(inner, &agent);
        }
    }
}

/// The status of an agent whose task the log lost.
pub const LOST_TASK: &str =
    "its task was lost: arbor stopped before the task reached the session log";

/// Registers the agents reachable from the root through open edges, parents first.
fn register_tree(
    inner: &Arc<Inner>,
    state: &SessionState,
    notices: &mut Vec<String>,
) -> HashMap<ThreadId, Arc<Agent>> {
    let mut registered: HashMap<ThreadId, Arc<Agent>> = HashMap::new();
    let mut rows: Vec<_> = state.threads.values().collect();
    rows.sort_by_key(|row| (row.record.depth, row.record.id));
    for row in rows {
        let parent = match row.record.parent_id {
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
        let unread = state.unread(row.record.id).count();
        if status == AgentStatus::PendingInit
            && parent.is_some()
            && unread == 0
            && row.record.role != arbor_roles::GUARDIAN_ROLE
        {
            // Its header reached the log and its task did not (a write cut by a crash): it
            // would wait for a task forever.
            status = AgentStatus::Errored(LOST_TASK.to_string());
        }
        let agent = register(inner, &row.record, status, parent.as_ref(), notices);
        agent
            .state()
            .mailbox
            .restore(state.unread(row.record.id).cloned());
        registered.insert(row.record.id, agent);
    }
    registered
}

/// Registers one stored agent (not resident), recording a status the last run left active.
fn register(
    inner: &Arc<Inner>,
    record: &ThreadRecord,
    status: AgentStatus,
    parent: Option<&Arc<Agent>>,
    notices: &mut Vec<String>,
) -> Arc<Agent> {
    let role = match inner.roles.get(&record.role) {
        Ok(role) => role.clone(),
        Err(_) if record.role == arbor_roles::GUARDIAN_ROLE => inner.roles.guardian().clone(),
        Err(_) => {
            notices.push(format!(
                "{}: role '{}' is no longer defined; it keeps its stored settings with the default role's instructions",
                record.path, record.role
            ));
            inner
                .roles
                .get(arbor_roles::DEFAULT_ROLE)
                .cloned()
                .unwrap_or_else(|_| inner.roles.guardian().clone())
        }
    };
    let sandbox = SandboxMode::parse(&record.sandbox).unwrap_or(SandboxMode::ReadOnly);
    let mut caps = match parent {
        Some(parent) => parent.identity.caps.narrow_for(&role),
        None => Capabilities::root(sandbox, inner.config.approval_policy).narrow_for(&role),
    };
    caps.sandbox = sandbox;
    let identity = Identity {
        id: record.id,
        path: record.path.clone(),
        parent: record.parent_id,
        depth: record.depth,
        nickname: record.nickname.clone(),
        role: record.role.clone(),
        model: record.model.clone(),
        effort: record.effort.clone(),
        caps,
        cwd: PathBuf::from(&record.cwd),
        rollout_path: inner.config.home.join(&record.rollout_path),
        instructions: inner.project_docs.instructions(
            &role,
            std::path::Path::new(&record.cwd),
            record.role == arbor_roles::GUARDIAN_ROLE,
        ),
        internal: record.role == arbor_roles::GUARDIAN_ROLE,
    };
    let token = match parent {
        Some(parent) => parent.token.child_token(),
        None => inner.root_token.child_token(),
    };
    if status != record.status {
        inner.persist_status_id(record.id, &status);
    }
    let agent = Agent::new(identity, token, status.clone(), inner.log.clone());
    if let AgentStatus::Completed(message) = status {
        agent.state().last_message = message;
    }
    if let Some(nickname) = &record.nickname {
        inner.mark_nickname_used(&role, nickname);
    }
    inner.registry.insert(Arc::clone(&agent));
    agent
}
