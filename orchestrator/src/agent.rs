//! One agent: its identity (fixed at spawn), its runtime state and its rollout writer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arbor_mailbox::Mailbox;
use arbor_protocol::{AgentPath, AgentStatus, ResponseItem, RolloutItem, ThreadId};
use arbor_roles::Capabilities;
use arbor_rollout::{RolloutError, RolloutWriter};
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
    /// The rollout file: the source of truth for this agent's history.
    pub rollout_path: PathBuf,
    /// Role instructions given to the model with every request.
    pub instructions: String,
    /// Internal agents (the guardian) are outside `list_agents`, wait targets and the caps.
    pub internal: bool,
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
    /// Ended turns whose barrier, result mail and final status are still being written.
    pub settling: u32,
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
    /// A turn is queued, running or settling: waits, wake-once and eviction treat the agent as
    /// busy.
    pub fn active(&self) -> bool {
        self.scheduled || self.settling > 0
    }
}

/// What only a resident agent has: its rollout writer and its task.
#[derive(Debug)]
struct Resident {
    rollout: Arc<Mutex<RolloutWriter>>,
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
    /// Serialises the turn-end barriers of this agent's rollout, and holds when the last one
    /// started (see `turn_end`).
    pub barriers: tokio::sync::Mutex<Option<std::time::Instant>>,
    /// The mails this agent has sent and not yet delivered, delivered in the order sent.
    pub outbox: Mutex<crate::outbox::Outbox>,
    /// Subprocesses this agent has running (an agent with one is never evicted).
    pub live: LiveProcesses,
}

impl Agent {
    /// A new, not yet resident agent in `status`.
    pub fn new(identity: Identity, token: CancellationToken, status: AgentStatus) -> Arc<Self> {
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
                settling: 0,
                closed: false,
                last_message: None,
                cancel_reason: None,
                usage: arbor_protocol::Usage::default(),
                last_model_error: None,
                approvals_open: 0,
            }),
            resident: Mutex::new(None),
            residency_lock: tokio::sync::Mutex::new(()),
            barriers: tokio::sync::Mutex::new(None),
            outbox: Mutex::default(),
            live: LiveProcesses::new(),
        })
    }

    /// Makes the agent resident with `rollout`; returns its task's token and "run a turn"
    /// receiver.
    pub fn install(
        &self,
        rollout: RolloutWriter,
    ) -> (CancellationToken, mpsc::UnboundedReceiver<()>) {
        let (go, go_rx) = mpsc::unbounded_channel();
        let task = self.token.child_token();
        *self.lock_resident() = Some(Resident {
            rollout: Arc::new(Mutex::new(rollout)),
            go,
            task: task.clone(),
        });
        (task, go_rx)
    }

    /// Takes the runtime away (eviction): stops the task and returns the rollout writer so the
    /// caller can sync and drop it.
    pub fn uninstall(&self) -> Option<Arc<Mutex<RolloutWriter>>> {
        let resident = self.lock_resident().take()?;
        resident.task.cancel();
        Some(resident.rollout)
    }

    /// Whether the agent has a runtime.
    pub fn is_resident(&self) -> bool {
        self.lock_resident().is_some()
    }

    fn lock_resident(&self) -> MutexGuard<'_, Option<Resident>> {
        self.resident.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rollout(&self) -> Result<Arc<Mutex<RolloutWriter>>, RolloutError> {
        self.lock_resident()
            .as_ref()
            .map(|r| Arc::clone(&r.rollout))
            .ok_or_else(|| RolloutError::Io {
                path: self.identity.rollout_path.clone(),
                op: "append",
                source: std::io::Error::other("the agent is not resident"),
            })
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

    /// Appends items to the rollout (written to the OS, not yet synced).
    pub fn record(&self, items: &[RolloutItem]) -> Result<(), RolloutError> {
        let rollout = self.rollout()?;
        let mut writer = rollout.lock().unwrap_or_else(PoisonError::into_inner);
        match items {
            [one] => writer.append(one),
            many => writer.append_batch(many),
        }
    }

    /// Syncs the rollout to disk on a blocking thread (a durability barrier).
    pub async fn sync_rollout(&self) -> Result<(), RolloutError> {
        sync_writer(self.rollout()?).await
    }

    /// The offset just after the last line of the rollout (0 when the agent is not resident).
    pub fn rollout_end(&self) -> u64 {
        self.with_writer(RolloutWriter::end)
    }

    /// Whether the rollout is on disk up to `end`.
    pub fn rollout_synced_to(&self, end: u64) -> bool {
        self.with_writer(RolloutWriter::synced_to) >= end
    }

    fn with_writer(&self, read: impl FnOnce(&RolloutWriter) -> u64) -> u64 {
        self.lock_resident().as_ref().map_or(0, |r| {
            read(&r.rollout.lock().unwrap_or_else(PoisonError::into_inner))
        })
    }

    /// Bytes, lines and syncs written to this agent's rollout by its current writer.
    pub fn rollout_stats(&self) -> arbor_rollout::WriterStats {
        self.lock_resident()
            .as_ref()
            .map(|r| {
                r.rollout
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .stats()
            })
            .unwrap_or_default()
    }

    /// Asks the agent's task to run one turn. False when the agent is not resident.
    pub fn send_go(&self) -> bool {
        self.lock_resident()
            .as_ref()
            .is_some_and(|r| r.go.send(()).is_ok())
    }
}

/// Syncs a rollout writer on a blocking thread. The writer stays free meanwhile: lines
/// appended during the sync are simply left for the next barrier.
pub async fn sync_writer(rollout: Arc<Mutex<RolloutWriter>>) -> Result<(), RolloutError> {
    fn lock(rollout: &Mutex<RolloutWriter>) -> MutexGuard<'_, RolloutWriter> {
        rollout.lock().unwrap_or_else(PoisonError::into_inner)
    }
    let Some(barrier) = lock(&rollout).barrier()? else {
        return Ok(());
    };
    let path = lock(&rollout).path().to_path_buf();
    let (barrier, synced) = tokio::task::spawn_blocking(move || {
        let synced = barrier.sync();
        (barrier, synced)
    })
    .await
    .map_err(|err| RolloutError::Io {
        path,
        op: "sync",
        source: std::io::Error::other(err.to_string()),
    })?;
    lock(&rollout).barrier_done(&barrier, &synced);
    synced
}
