//! One agent's handle: its identity (fixed at spawn), its cancellation token, the runtime its
//! own turns work on (history, turn spans), and its way into the session log. What the session
//! decides about the agent (status, turn, residency, mailbox) is not here: the session task
//! owns it (the `arbor-tree` crate).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use arbor_protocol::{AgentPath, Mail, ResponseItem, RolloutItem, SessionMeta, ThreadId};
use arbor_roles::Capabilities;
use arbor_rollout::log::{LogError, SessionLog};
use arbor_tools::LiveProcesses;
use tokio_util::sync::CancellationToken;

/// Who an agent is. Never changes after spawn (behaviour §2 "beyond": a revived agent keeps
/// its own model, effort, role and sandbox). Its rollout header is the identity the store and
/// the rollout share; the rest is what this process derives from it.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The rollout header: id, path, parent, depth, nickname, role, model, effort, sandbox, cwd.
    pub meta: SessionMeta,
    pub caps: Capabilities,
    /// The rollout file (written from the session log): what revival replays.
    pub rollout_path: PathBuf,
    /// Role instructions given to the model with every request.
    pub instructions: Arc<str>,
    /// Internal agents (the guardian) are outside `list_agents`, wait targets and the caps.
    pub internal: bool,
    /// The git worktree it works in (isolation `worktree`); `cwd` is inside it.
    pub worktree: Option<Arc<crate::worktrees::worktree::AgentWorktree>>,
}

impl Identity {
    /// Who is asking, as a model request names the agent.
    pub fn for_model(&self) -> arbor_model::AgentIdentity {
        arbor_model::AgentIdentity {
            thread_id: self.id(),
            path: self.path().clone(),
            nickname: self.meta.nickname.clone(),
            role: self.meta.role.clone(),
        }
    }

    /// The agent's thread id.
    pub fn id(&self) -> ThreadId {
        self.meta.thread_id
    }

    /// The agent's path.
    pub fn path(&self) -> &AgentPath {
        &self.meta.path
    }

    /// The parent's thread id (`None` for the root).
    pub fn parent(&self) -> Option<ThreadId> {
        self.meta.parent_id
    }

    /// The agent's working directory.
    pub fn cwd(&self) -> &Path {
        Path::new(&self.meta.cwd)
    }
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

/// What an agent's own turns work on. Written by its turn task, set by a revival and dropped
/// by an eviction (both while no turn runs), read for forks, reviews and views.
#[derive(Debug, Default)]
pub struct Runtime {
    pub history: History,
    pub turns: Vec<TurnSpan>,
    /// Number of the last turn started (turns count from 1).
    pub turn_no: u64,
    /// The model's error when the last turn ended on one (the guardian's reviews classify it).
    pub last_model_error: Option<arbor_model::ModelError>,
    /// The last response's reported size (input and output tokens) and the history's length
    /// right after it: what the next request's size is measured from (`compaction.rs`).
    pub measure: Option<(u64, usize)>,
    /// The agent's tokens so far, in this window and every one before it.
    pub usage: arbor_protocol::Usage,
}

/// A turn the session granted: stopped through its token, with the reason the session gives.
#[derive(Debug)]
pub struct TurnControl {
    pub token: CancellationToken,
    reason: OnceLock<String>,
}

impl TurnControl {
    /// A control whose token is a child of `parent` (the agent's: closing it stops the turn).
    pub fn new(parent: &CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            token: parent.child_token(),
            reason: OnceLock::new(),
        })
    }

    /// Stops the turn with `reason` (the first reason given counts).
    pub fn cancel(&self, reason: &str) {
        let _ = self.reason.set(reason.to_string());
        self.token.cancel();
    }

    /// Why the turn was stopped (`interrupted` when nobody said).
    pub fn reason(&self) -> String {
        self.reason
            .get()
            .cloned()
            .unwrap_or_else(|| "interrupted".to_string())
    }
}

/// What the session task sends an agent's task. Boxed, so that the channel every agent has
/// (whose first block holds 32 messages) stays small when thousands of agents wait.
#[derive(Debug)]
pub enum AgentMsg {
    /// Run a turn: the input and mail it starts with.
    Go(Box<Grant>),
    /// Mail handed to the running turn (or, after its final answer, to the next one).
    Mail(Box<Mail>),
}

/// A turn granted to an agent.
#[derive(Debug)]
pub struct Grant {
    pub control: Arc<TurnControl>,
    pub input: Vec<ResponseItem>,
    pub mails: Vec<Mail>,
}

/// An agent known to this process.
#[derive(Debug)]
pub struct Agent {
    pub identity: Identity,
    /// Cancelled when the agent is closed or the session stops; a child of the parent's.
    pub token: CancellationToken,
    /// The agent's own runtime data. A lock of its own because it is not the session's state:
    /// only the agent's turn writes it while a turn runs, and the session task only while none
    /// does; never held across an `.await`.
    runtime: Mutex<Runtime>,
    /// The session log, where everything the agent records goes.
    log: SessionLog,
    /// The lsn of the last line this agent recorded: its rollout holds everything once the
    /// log's projections have come that far.
    last_recorded: AtomicU64,
    /// Subprocesses this agent has running (an agent with one is never evicted).
    pub live: LiveProcesses,
    /// The tools it is offered: its capabilities never change, so they are looked up once
    /// (`tools::specs_for`) and every request shares them.
    pub(crate) specs: OnceLock<Arc<Vec<arbor_protocol::ToolSpec>>>,
}

impl Agent {
    /// A new agent with an empty runtime.
    pub fn new(identity: Identity, token: CancellationToken, log: SessionLog) -> Arc<Self> {
        Arc::new(Self {
            identity,
            token,
            runtime: Mutex::new(Runtime::default()),
            log,
            last_recorded: AtomicU64::new(0),
            live: LiveProcesses::new(),
            specs: OnceLock::new(),
        })
    }

    /// The agent's path.
    pub fn path(&self) -> &AgentPath {
        self.identity.path()
    }

    /// The agent's id.
    pub fn id(&self) -> ThreadId {
        self.identity.id()
    }

    /// Locks the agent's runtime. Never held across an `.await`.
    pub fn runtime(&self) -> MutexGuard<'_, Runtime> {
        self.runtime.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records items of this agent: lines of the session log, visible to the session at once,
    /// durable with the log's next sync. Returns the log's lsn of the last one.
    pub fn record(&self, items: impl IntoIterator<Item = RolloutItem>) -> Result<u64, LogError> {
        let lsn = self.log.append(self.identity.id(), items)?;
        self.recorded(lsn);
        Ok(lsn)
    }

    /// A line of this agent's was appended at `lsn` by someone else (its spawn).
    pub fn recorded(&self, lsn: u64) {
        self.last_recorded.fetch_max(lsn, Ordering::AcqRel);
    }

    /// The lsn of the last line of this agent's.
    pub fn last_recorded(&self) -> u64 {
        self.last_recorded.load(Ordering::Acquire)
    }
}
