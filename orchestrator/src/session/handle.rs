//! The handle on the session task: what turns, tools and the facade send it ([`Msg`]), and the
//! requests they wait on. Sending never blocks; a request waits only for its own answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arbor_protocol::{AgentStatus, Mail, ResponseItem, ThreadId, Timestamp};
use arbor_roles::{Capabilities, Role};
use tokio::sync::{mpsc, oneshot};

use crate::agent::Agent;
use crate::error::OrchestratorError;
use crate::worktrees::worktree::AgentWorktree;
use arbor_tree::{AgentSnapshot, Answer, Input, Registration, Scope, Ticket};

/// A new agent to make: everything but what the session decides (its nickname, its slot).
#[derive(Debug)]
pub struct SpawnSpec {
    pub id: ThreadId,
    pub path: arbor_protocol::AgentPath,
    pub parent: Option<Arc<Agent>>,
    pub role: Role,
    pub model: String,
    /// The provider that serves `model`, by name (`None`: the session's default).
    pub provider: Option<String>,
    pub effort: Option<String>,
    pub caps: Capabilities,
    /// Draw a nickname from the role's pool (spawned children), or none (root, guardian).
    pub nickname: bool,
    pub cwd: std::path::PathBuf,
    pub internal: bool,
    /// What it is told with every request: its role's instructions and the project's
    /// (`ProjectDocs::for_new_agent`, read before the spawn reaches the session task).
    pub instructions: Arc<str>,
    /// The header's stamp (a new session's root has one chosen with its log); now otherwise.
    pub stamp: Option<Timestamp>,
    /// History the agent starts with (a fork of its parent's), recorded with its header.
    pub history: Vec<ResponseItem>,
    /// Its parent's task for it, recorded (as the parent's `mail_sent`) in the same write as
    /// its header, so no crash leaves an agent without its task.
    pub task: Option<Mail>,
    /// Its git worktree (made by the spawner), recorded right after its header.
    pub worktree: Option<Arc<AgentWorktree>>,
}

/// A stored agent of a resumed session.
#[derive(Debug)]
pub struct Restored {
    pub agent: Arc<Agent>,
    pub role: Role,
    pub registration: Registration,
}

/// A spawned agent.
#[derive(Debug, Clone)]
pub struct Spawned {
    pub agent: Arc<Agent>,
    pub nickname: Option<String>,
}

/// What the session task receives.
#[derive(Debug)]
pub enum Msg {
    /// An input for the session's state.
    Input(Input),
    /// An input whose answer comes back on `reply`.
    Ask {
        input: Input,
        ticket: Ticket,
        reply: oneshot::Sender<Answer>,
    },
    /// Make an agent: its lines, its handle, its registration, its task's mail.
    Spawn {
        spec: Box<SpawnSpec>,
        reply: oneshot::Sender<Result<Spawned, OrchestratorError>>,
    },
    /// Close `target` on behalf of `closer` (an agent; `None`: from outside the tree, whose
    /// close line is already in the log). The answer is the target's status before.
    Close {
        target: ThreadId,
        closer: Option<ThreadId>,
        reply: Option<oneshot::Sender<Result<AgentStatus, OrchestratorError>>>,
    },
    /// The stored agents of a resumed session, parents first, each with the role it runs as
    /// now: one message for the whole tree. Their handles are in the registry already.
    Restore(Vec<Restored>),
    /// Everything is stopped: the session task ends.
    Shutdown,
}

/// A cloneable handle on the session task.
#[derive(Debug, Clone)]
pub struct SessionHandle {
    tx: mpsc::UnboundedSender<Msg>,
    tickets: Arc<AtomicU64>,
}

impl SessionHandle {
    /// A handle and the receiver the session task will read.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Msg>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                tx,
                tickets: Arc::new(AtomicU64::new(0)),
            },
            rx,
        )
    }

    fn post(&self, msg: Msg) {
        // The session task outlives every agent task; after it ended nothing listens.
        let _ = self.tx.send(msg);
    }

    /// Sends an input; nothing waits for it.
    pub fn send(&self, input: Input) {
        self.post(Msg::Input(input));
    }

    /// Sends the input `make` builds around a fresh ticket; its answer arrives on the
    /// receiver (closed if the session task ended first).
    pub fn ask_later(
        &self,
        make: impl FnOnce(Ticket) -> Input,
    ) -> (Ticket, oneshot::Receiver<Answer>) {
        let ticket = self.next_ticket();
        let (reply, answer) = oneshot::channel();
        self.post(Msg::Ask {
            input: make(ticket),
            ticket,
            reply,
        });
        (ticket, answer)
    }

    /// Sends the input `make` builds and waits for its answer (`None`: the session ended).
    pub async fn ask(&self, make: impl FnOnce(Ticket) -> Input) -> Option<Answer> {
        self.ask_later(make).1.await.ok()
    }

    /// Makes an agent and waits until it is installed.
    pub async fn spawn(&self, spec: SpawnSpec) -> Result<Spawned, OrchestratorError> {
        let (reply, answer) = oneshot::channel();
        self.post(Msg::Spawn {
            spec: Box::new(spec),
            reply,
        });
        answer.await.unwrap_or(Err(OrchestratorError::Stopped))
    }

    /// Closes `target` on behalf of `closer`; the target's status before.
    pub async fn close(
        &self,
        target: ThreadId,
        closer: Option<ThreadId>,
    ) -> Result<AgentStatus, OrchestratorError> {
        let (reply, answer) = oneshot::channel();
        self.post(Msg::Close {
            target,
            closer,
            reply: Some(reply),
        });
        answer.await.unwrap_or(Err(OrchestratorError::Stopped))
    }

    /// Registers the stored agents of a resumed session, parents first.
    pub fn restore(&self, tree: Vec<Restored>) {
        self.post(Msg::Restore(tree));
    }

    /// A ticket no other request holds.
    pub fn next_ticket(&self) -> Ticket {
        self.tickets.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Ends the session task (once every agent task has stopped).
    pub fn shutdown(&self) {
        self.post(Msg::Shutdown);
    }

    /// Every agent as listings show it.
    pub async fn snapshot(&self) -> Vec<AgentSnapshot> {
        self.snapshot_of(Scope::All).await
    }

    /// The agents of `scope` as listings show them.
    pub async fn snapshot_of(&self, scope: Scope) -> Vec<AgentSnapshot> {
        match self.ask(|ticket| Input::Snapshot { ticket, scope }).await {
            Some(Answer::Snapshot(all)) => all,
            _ => Vec::new(),
        }
    }

    /// One agent as listings show it.
    pub async fn agent(&self, id: ThreadId) -> Option<AgentSnapshot> {
        self.snapshot_of(Scope::One(id)).await.into_iter().next()
    }

    /// Stops the agent's running turn (or takes its queued one back) with `reason`; its
    /// status before.
    pub async fn interrupt(&self, target: ThreadId, reason: &str) -> Option<AgentStatus> {
        let reason = reason.to_string();
        match self
            .ask(|ticket| Input::Interrupt {
                target,
                reason,
                ticket: Some(ticket),
            })
            .await
        {
            Some(Answer::Interrupted(previous)) => Some(previous),
            _ => None,
        }
    }

    /// Waits until `agent` has no turn scheduled, and shows it then.
    pub async fn idle(&self, agent: ThreadId) -> Option<AgentSnapshot> {
        match self.ask(|ticket| Input::Idle { ticket, agent }).await {
            Some(Answer::Idle(snapshot)) => Some(snapshot),
            _ => None,
        }
    }

    /// Waits until no agent has a turn scheduled.
    pub async fn quiescent(&self) {
        let _ = self.ask(|ticket| Input::Quiescent { ticket }).await;
    }
}
