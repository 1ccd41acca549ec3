//! One agent: its identity (fixed at spawn), its runtime state, and its handle on the session
//! log (every line it records is a line of the log, projected into its rollout later).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arbor_mailbox::Mailbox;
use arbor_protocol::{AgentPath, AgentStatus, ResponseItem, RolloutItem, ThreadId};
use arbor_roles::Capabilities;
use arbor_rollout::log::{LogError, SessionLog};
use arbor_tools::LiveProcesses;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Who an agent is. Never changes after spawn (behaviour §2 "beyond": a revived agent keeps
/// its own model, effort, role and sandbox).
#[derive(Debug, Clone)]
pub struct Identity {
    pub id: ThreadId,
    pub path: AgentPath,
    pub parent: Option<ThreadId>,
    pub depth: u32,
    pub nickname: Option<String>,
    pub role: String,
    pub model: String,
    pub effort: Option<String>,
    pub caps: Capabilities,
    pub cwd: PathBuf,
    /// The rollout file (written from the session log): what revival replays.
    pub rollout_path: PathBuf,
    /// Role instructions given to the model with every request.
    pub instructions: String,
    /// Internal agents (the guardian) are outside `list_agents`, wait targets and the caps.
    pub internal: bool,
    /// The git worktree it works in (isolation `worktree`); `cwd` is inside it.
    pub worktree: Option<Arc<crate::worktrees::AgentWorktree>>,
}

/// An agent's model history, shared with the requests made from it: appending copies it only
/// while a request still holds the previous version.
#[derive(Debug, Clone, Default)]
pub struct History(Arc<Vec<ResponseItem>>);

impl History {
    /// Appends items.
    pub fn extend(&mut self, items: impl IntoIterator<Item = ResponseItem>) {
        Arc::make_mut(&mut self.0).extend(items);
    }

    /// The history as it is now, for a request.
    pub fn snapshot(&self) -> Arc<Vec<ResponseItem>> {
        Arc::clone(&self.0)
    }
}

impl From<Vec<ResponseItem>> for History {
    fn from(items: Vec<ResponseItem>) -> Self {
        Self(Arc::new(items))
    }
}

impl std::ops::Deref for History {
    type Target = [ResponseItem];
    fn deref(&self) -> &[ResponseItem] {
        &self.0
    }
}

/// The bounds of one past turn inside the history, for `fork_turns`.
#[derive(Debug, Clone)]
pub struct TurnSpan {
    pub start: usize,
    pub final_answer: Option<String>,
}

/// What changes while an agent lives.
#[derive(Debug)]
pub struct AgentState {
    pub status: AgentStatus,
    pub history: History,
    pub turns: Vec<TurnSpan>,
    pub mailbox: Mailbox,
    /// Input for the next turn that is not mail (the user's prompt to the root).
    pub pending_input: Vec<ResponseItem>,
    /// Number of the last turn started (turns count from 1).
    pub turn_no: u64,
    /// Cancels the running turn only (interrupt).
    pub turn_token: Option<CancellationToken>,
    /// A turn is queued or running for this agent.
    pub scheduled: bool,
    pub closed: bool,
    /// Model-visible last final answer, kept for `completed` statuses.
    pub last_message: Option<String>,
    /// Why the running turn was cancelled, set by whoever cancels it.
    pub cancel_reason: Option<String>,
    /// Tokens this agent used, as far as this process knows (replayed on revival).
    pub usage: arbor_protocol::Usage,
    /// The model's error when the last turn ended on one (the guardian's reviews classify it).
    pub last_model_error: Option<arbor_model::ModelError>,
    /// Approval requests of this agent waiting for an answer.
    pub approvals_open: u32,
}

impl AgentState {
    /// A turn is queued or running: waits, wake-once and eviction treat the agent as busy.
    pub fn active(&self) -> bool {
        self.scheduled
    }
}

/// What only a resident agent has: its task.
#[derive(Debug)]
struct Resident {
    /// Tells the agent's task to run one turn.
    go: mpsc::UnboundedSender<()>,
    /// Stops the task (eviction); a child of the agent's token.
    task: CancellationToken,
}

/// An agent known to this process: resident (with a runtime) or evicted (identity, status and
/// mailbox only; its history is on disk).
#[derive(Debug)]
pub struct Agent {
    pub identity: Identity,
    /// Cancelled when the agent is closed or the session shuts down; a child of the parent's.
    pub token: CancellationToken,
    state: Mutex<AgentState>,
    resident: Mutex<Option<Resident>>,
    /// Serialises revivals and evictions of this agent.
    pub residency_lock: tokio::sync::Mutex<()>,
    /// The session log, where everything the agent records goes.
    log: SessionLog,
    /// The lsn of the last line this agent recorded: its rollout holds everything once the
    /// log's projections have come that far.
    pub last_recorded: std::sync::atomic::AtomicU64,
    /// Subprocesses this agent has running (an agent with one is never evicted).
    pub live: LiveProcesses,
}

impl Agent {
    /// A new, not yet resident agent in `status`.
    pub fn new(
        identity: Identity,
        token: CancellationToken,
        status: AgentStatus,
        log: SessionLog,
    ) -> Arc<Self> {
        Arc::new(Self {
            identity,
            token,
            state: Mutex::new(AgentState {
                status,
                history: History::default(),
                turns: Vec::new(),
                mailbox: Mailbox::new(),
                pending_input: Vec::new(),
                turn_no: 0,
                turn_token: None,
                scheduled: false,
                closed: false,
                last_message: None,
                cancel_reason: None,
                usage: arbor_protocol::Usage::default(),
                last_model_error: None,
                approvals_open: 0,
            }),
            resident: Mutex::new(None),
            residency_lock: tokio::sync::Mutex::new(()),
            log,
            last_recorded: std::sync::atomic::AtomicU64::new(0),
            live: LiveProcesses::new(),
        })
    }

    /// Makes the agent resident; returns its task's token and "run a turn" receiver.
    pub fn install(&self) -> (CancellationToken, mpsc::UnboundedReceiver<()>) {
        let (go, go_rx) = mpsc::unbounded_channel();
        let task = self.token.child_token();
        *self.lock_resident() = Some(Resident {
            go,
            task: task.clone(),
        });
        (task, go_rx)
    }

    /// Takes the runtime away (eviction): stops the task. False when it had none.
    pub fn uninstall(&self) -> bool {
        let Some(resident) = self.lock_resident().take() else {
            return false;
        };
        resident.task.cancel();
        true
    }

    /// Whether the agent has a runtime.
    pub fn is_resident(&self) -> bool {
        self.lock_resident().is_some()
    }

    fn lock_resident(&self) -> MutexGuard<'_, Option<Resident>> {
        self.resident.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent's path.
    pub fn path(&self) -> &AgentPath {
        &self.identity.path
    }

    /// The agent's id.
    pub fn id(&self) -> ThreadId {
        self.identity.id
    }

    /// Locks the runtime state. Never held across an `.await`.
    pub fn state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current status.
    pub fn status(&self) -> AgentStatus {
        self.state().status.clone()
    }

    /// Records items of this agent: lines of the session log, visible to the session at once,
    /// durable with the log's next sync. Returns the log's lsn of the last one.
    pub fn record(&self, items: &[RolloutItem]) -> Result<u64, LogError> {
        let lsn = self.log.append(self.identity.id, items.iter().cloned())?;
        self.last_recorded
            .fetch_max(lsn, std::sync::atomic::Ordering::AcqRel);
        Ok(lsn)
    }

    /// Asks the agent's task to run one turn. False when the agent is not resident.
    pub fn send_go(&self) -> bool {
        self.lock_resident()
            .as_ref()
            .is_some_and(|r| r.go.send(()).is_ok())
    }
}
