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
    /// Role instructions given to the model with every request.
    pub instructions: String,
    /// Internal agents (the guardian) are outside `list_agents`, wait targets and the caps.
    pub internal: bool,
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
    pub history: Vec<ResponseItem>,
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
}

/// A live agent.
#[derive(Debug)]
pub struct Agent {
    pub identity: Identity,
    /// Cancelled when the agent is closed or the session shuts down; a child of the parent's.
    pub token: CancellationToken,
    state: Mutex<AgentState>,
    rollout: Arc<Mutex<RolloutWriter>>,
    /// Tells the agent's task to run one turn.
    go: mpsc::UnboundedSender<()>,
    /// Subprocesses this agent has running (an agent with one is never evicted).
    pub live: LiveProcesses,
}

impl Agent {
    /// A new agent in `status`, with its task's "run a turn" channel.
    pub fn new(
        identity: Identity,
        token: CancellationToken,
        rollout: RolloutWriter,
        status: AgentStatus,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<()>) {
        let (go, go_rx) = mpsc::unbounded_channel();
        let agent = Arc::new(Self {
            identity,
            token,
            state: Mutex::new(AgentState {
                status,
                history: Vec::new(),
                turns: Vec::new(),
                mailbox: Mailbox::new(),
                pending_input: Vec::new(),
                turn_no: 0,
                turn_token: None,
                scheduled: false,
                closed: false,
                last_message: None,
                cancel_reason: None,
            }),
            rollout: Arc::new(Mutex::new(rollout)),
            go,
            live: LiveProcesses::new(),
        });
        (agent, go_rx)
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
        let mut writer = self.rollout.lock().unwrap_or_else(PoisonError::into_inner);
        match items {
            [one] => writer.append(one),
            many => writer.append_batch(many),
        }
    }

    /// Syncs the rollout to disk on a blocking thread (a durability barrier).
    pub async fn sync_rollout(&self) -> Result<(), RolloutError> {
        let rollout = Arc::clone(&self.rollout);
        tokio::task::spawn_blocking(move || {
            rollout
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .sync()
        })
        .await
        .map_err(|err| RolloutError::Io {
            path: PathBuf::new(),
            op: "sync",
            source: std::io::Error::other(err.to_string()),
        })?
    }

    /// Bytes, lines and syncs written to this agent's rollout so far.
    pub fn rollout_stats(&self) -> arbor_rollout::WriterStats {
        self.rollout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stats()
    }

    /// Asks the agent's task to run one turn. False if the task is gone.
    pub fn send_go(&self) -> bool {
        self.go.send(()).is_ok()
    }
}
