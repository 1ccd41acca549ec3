//! Shared runtime state (`Inner`): configuration, the session log and its projections, the
//! model, the registry, events, usage and residency (the turn scheduler is in `scheduler`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::Store;
use arbor_model::ModelClient;
use arbor_protocol::{AgentStatus, Event, RolloutItem, StatusChanged, ThreadId};
use arbor_roles::{NicknamePool, Role, RoleSet};
use arbor_rollout::log::SessionLog;
use arbor_tools::Policy;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::Agent;
use crate::approval::Approvals;
use crate::config::RunConfig;
use crate::events::EventBus;
use crate::projection::Projection;
use crate::registry::Registry;

/// Everything the agents of one session share.
pub struct Inner {
    pub config: RunConfig,
    pub session_id: ThreadId,
    /// The session log: every fact of the session is appended here.
    pub log: SessionLog,
    /// The rollouts and the store, written from the log's synced lines.
    pub projection: Arc<Projection>,
    pub store: Store,
    pub model: Arc<dyn ModelClient>,
    pub roles: RoleSet,
    /// The command policy, the sandboxes and the approval broker.
    pub approvals: Approvals,
    pub registry: Registry,
    pub events: EventBus,
    /// Bumped after every change a waiter may care about (status, mail, residency).
    pub changed: watch::Sender<u64>,
    pub(crate) sched: Mutex<crate::scheduler::Scheduler>,
    /// Turns queued or running, anywhere in the tree. Zero means quiescent.
    pub(crate) busy: AtomicUsize,
    /// Notified when `busy` drops to zero, so quiescence waits do not wake on every change.
    pub(crate) quiet: tokio::sync::Notify,
    /// Nickname pools: the built-in one under "", roles with their own candidates by name.
    nicknames: Mutex<HashMap<String, NicknamePool>>,
    /// The session's token: every agent's token descends from it.
    pub root_token: CancellationToken,
    pub tracker: TaskTracker,
    /// Lines of other processes applied by the ingest task so far.
    pub(crate) ingested: watch::Sender<u64>,
    /// Tokens used by the tree in this run, and the agents a spent budget kept from starting.
    usage: Mutex<(arbor_protocol::Usage, Vec<arbor_protocol::AgentPath>)>,
    /// Tool specs by tool list: built once, shared by every request.
    tool_specs: Mutex<HashMap<Vec<String>, Arc<Vec<arbor_protocol::ToolSpec>>>>,
    /// Resident children, least recently used last.
    resident: Mutex<lru::LruCache<ThreadId, ()>>,
    /// False once the session drains: no new turn starts.
    pub(crate) accepting: std::sync::atomic::AtomicBool,
    /// Why the session is stopping (`user_interrupt`, `parent_exit`), for aborted turns.
    stop_reason: Mutex<Option<String>>,
    /// The session's MCP servers and the tools agents are offered from them.
    pub mcp: crate::tools::mcp::McpTools,
    /// `AGENTS.md` instructions by directory, read once per session.
    pub(crate) project_docs: crate::project_docs::ProjectDocs,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("session_id", &self.session_id)
            .field("agents", &self.registry.len())
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Assembles the shared state of a session.
    pub fn new(
        config: RunConfig,
        session: Session,
        model: Arc<dyn ModelClient>,
        roles: RoleSet,
        policy: Policy,
    ) -> Self {
        let approvals = Approvals::new(policy, config.allow_network, config.approval_terminal)
            .protecting_home(&config.home);
        let mcp = crate::tools::mcp::McpTools::new(&config);
        let project_docs = crate::project_docs::ProjectDocs::new(config.project_docs);
        Self {
            mcp,
            project_docs,
            approvals,
            config,
            session_id: session.id,
            events: EventBus::new(session.log.clone()),
            log: session.log,
            projection: session.projection,
            store: session.store,
            model,
            roles,
            registry: Registry::default(),
            changed: watch::Sender::new(0),
            sched: Mutex::new(crate::scheduler::Scheduler::default()),
            busy: AtomicUsize::new(0),
            quiet: tokio::sync::Notify::new(),
            nicknames: Mutex::new(HashMap::new()),
            root_token: CancellationToken::new(),
            tracker: TaskTracker::new(),
            stop_reason: Mutex::new(None),
            accepting: std::sync::atomic::AtomicBool::new(true),
            resident: Mutex::new(lru::LruCache::unbounded()),
            tool_specs: Mutex::new(HashMap::new()),
            ingested: watch::Sender::new(0),
            usage: Mutex::new((arbor_protocol::Usage::default(), Vec::new())),
        }
    }

    /// Applies every line other processes have appended to the log up to now before going on
    /// (an answer given with `arbor approve` counts for the request this process opens next).
    pub async fn catch_up(&self) -> Result<(), String> {
        let sent = self.log.catch_up().await.map_err(|err| err.to_string())?;
        let mut ingested = self.ingested.subscribe();
        ingested
            .wait_for(|applied| *applied >= sent)
            .await
            .map(|_| ())
            .map_err(|_| "the session stopped".to_string())
    }

    /// Draws a nickname for a new agent of `role` (the role's own candidates if it has them).
    pub fn draw_nickname(&self, role: &Role) -> String {
        let key = if role.nickname_candidates.is_some() {
            role.name.as_str()
        } else {
            ""
        };
        let mut pools = self
            .nicknames
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let seed = self.nickname_seed();
        pools
            .entry(key.to_string())
            .or_insert_with(|| NicknamePool::new(role.nicknames(), seed))
            .draw()
    }

    /// Marks a stored nickname as used, so a resumed session never hands it out twice.
    pub fn mark_nickname_used(&self, role: &Role, nickname: &str) {
        let key = if role.nickname_candidates.is_some() {
            role.name.as_str()
        } else {
            ""
        };
        let seed = self.nickname_seed();
        let mut pools = self
            .nicknames
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        pools
            .entry(key.to_string())
            .or_insert_with(|| NicknamePool::new(role.nicknames(), seed))
            .mark_used(nickname);
    }

    fn nickname_seed(&self) -> u64 {
        let text = self.session_id.to_string();
        text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// Starts no new turn from now on (running turns go on until they end or are stopped).
    pub fn stop_accepting(&self) {
        self.accepting.store(false, Ordering::SeqCst);
        self.bump();
    }

    /// Cancels every agent of the session, recording why.
    pub fn stop(&self, reason: &str) {
        self.stop_accepting();
        *self
            .stop_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(reason.to_string());
        self.root_token.cancel();
    }

    /// Why turns cut short by a cancellation ended (`interrupted` unless the session stops).
    pub fn stop_reason(&self) -> String {
        self.stop_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "interrupted".to_string())
    }

    /// Wakes everything waiting on a change.
    pub fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Sets an agent's status: memory, then a line of the log, then the event.
    pub fn set_status(&self, agent: &Agent, status: AgentStatus) {
        let previous = std::mem::replace(&mut agent.state().status, status.clone());
        self.persist_status(agent, &status);
        let quiet = in_flight(&previous) && in_flight(&status);
        self.events.emit(Event::AgentStatus {
            path: agent.path().clone(),
            status,
        });
        // Moving between the statuses of a busy agent changes no waiter's condition (those
        // follow `scheduled`, mail and approvals, which wake waiters themselves).
        if !quiet {
            self.bump();
        }
    }

    /// Records a status in the log (for the store and for other processes' reads).
    pub fn persist_status(&self, agent: &Agent, status: &AgentStatus) {
        self.persist_status_id(agent.id(), status);
    }

    /// Records a status of the agent `id` in the log.
    pub fn persist_status_id(&self, id: ThreadId, status: &AgentStatus) {
        let line = RolloutItem::Status(StatusChanged {
            status: status.clone(),
        });
        if let Err(err) = self.log.append(id, [line]) {
            tracing::error!(error = %err, "status not recorded");
        }
    }

    /// Adds one response's tokens; returns the agent's and the tree's totals. Emits
    /// `budget.exhausted` the moment the budget is crossed.
    pub fn add_usage(
        &self,
        agent: &Agent,
        used: arbor_protocol::Usage,
    ) -> (arbor_protocol::Usage, arbor_protocol::Usage) {
        let add = |total: &mut arbor_protocol::Usage| {
            total.input_tokens += used.input_tokens;
            total.cached_input_tokens += used.cached_input_tokens;
            total.output_tokens += used.output_tokens;
        };
        let agent_total = {
            let mut state = agent.state();
            add(&mut state.usage);
            state.usage
        };
        let (tree_total, crossed) = {
            let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
            let before = self.over_budget_with(&usage.0);
            add(&mut usage.0);
            (usage.0, !before && self.over_budget_with(&usage.0))
        };
        if crossed && let Some(limit) = self.config.budget_tokens {
            self.events.emit(Event::BudgetExhausted {
                limit,
                used: tree_total.input_tokens + tree_total.output_tokens,
            });
        }
        (agent_total, tree_total)
    }

    fn over_budget_with(&self, total: &arbor_protocol::Usage) -> bool {
        self.config
            .budget_tokens
            .is_some_and(|limit| total.input_tokens + total.output_tokens >= limit)
    }

    /// Whether the tree's token budget is used up.
    pub fn over_budget(&self) -> bool {
        let usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        self.over_budget_with(&usage.0)
    }

    /// Tokens used by the tree in this run, and the agents the budget kept from a new turn.
    pub fn usage_report(&self) -> (arbor_protocol::Usage, Vec<arbor_protocol::AgentPath>) {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn budget_stopped(&self, agent: &Agent) {
        let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        if !usage.1.contains(agent.path()) {
            usage.1.push(agent.path().clone());
        }
    }

    /// The specs for a tool list, built by `build` the first time the list is seen.
    pub fn tool_specs(
        &self,
        tools: &[String],
        build: impl FnOnce() -> Vec<arbor_protocol::ToolSpec>,
    ) -> Arc<Vec<arbor_protocol::ToolSpec>> {
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

    /// Marks an agent as just used (it keeps its residency longest).
    pub fn touch(&self, agent: &Agent) {
        if crate::residency::counts_for_residency(agent) {
            self.lock_resident().put(agent.id(), ());
        }
    }

    /// Frees an agent's residency slot.
    pub fn forget_resident(&self, agent: &Agent) {
        self.lock_resident().pop(&agent.id());
        self.bump();
    }

    /// Claims a residency slot for `id`, or names the agent to evict, or says to wait.
    pub fn claim_slot(&self, id: ThreadId) -> crate::residency::Claim {
        use crate::residency::Claim;
        let mut resident = self.lock_resident();
        if resident.contains(&id) || resident.len() < self.config.max_resident {
            resident.put(id, ());
            return Claim::Granted;
        }
        let victim = resident
            .iter()
            .rev()
            .filter_map(|(candidate, ())| self.registry.get(*candidate))
            .find(|candidate| crate::residency::evictable(self, candidate));
        match victim {
            Some(victim) => Claim::Evict(victim),
            None => Claim::Wait,
        }
    }

    /// Resident children right now.
    pub fn resident_count(&self) -> usize {
        self.lock_resident().len()
    }

    fn lock_resident(&self) -> std::sync::MutexGuard<'_, lru::LruCache<ThreadId, ()>> {
        self.resident.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a session runs on: its id, its log, the projections of the log and the store.
#[derive(Debug)]
pub struct Session {
    pub id: ThreadId,
    pub log: SessionLog,
    pub projection: Arc<Projection>,
    pub store: Store,
}

/// Statuses of an agent whose turn is queued or under way, short of an approval.
fn in_flight(status: &AgentStatus) -> bool {
    matches!(
        status,
        AgentStatus::PendingInit
            | AgentStatus::Queued
            | AgentStatus::Running
            | AgentStatus::Waiting
    )
}
