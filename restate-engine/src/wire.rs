//! What the worker's handlers, the command line and the tests send each other: the request and
//! reply bodies of the `Session` and `Agent` handlers, as JSON.

use arbor_protocol::{AgentPath, AgentStatus, EventLine, Mail, SandboxMode};
use serde::{Deserialize, Serialize};

/// Settings fixed when a session starts, carried with every wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionConfig {
    /// The scripted model's script (its JSON text); `None` is a session without a model the
    /// worker can build, whose turns end as errored.
    pub script: Option<String>,
    /// The directory commands run in, as the worker sees it.
    pub cwd: String,
    pub sandbox: SandboxMode,
    pub max_depth: usize,
    /// The most model responses one turn may take.
    pub max_turn_responses: usize,
    /// `wait_agent` limits: default, minimum and maximum timeout.
    pub wait_default_ms: u64,
    pub wait_min_ms: u64,
    pub wait_max_ms: u64,
}

impl SessionConfig {
    /// The defaults of the behaviour contract for a session working in `cwd`.
    pub fn new(cwd: impl Into<String>) -> Self {
        Self {
            script: None,
            cwd: cwd.into(),
            sandbox: SandboxMode::WorkspaceWrite,
            max_depth: 1,
            max_turn_responses: 200,
            wait_default_ms: 30_000,
            wait_min_ms: 1_000,
            wait_max_ms: 3_600_000,
        }
    }
}

/// `Session/start`: the root's prompt and the session's settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartRequest {
    pub prompt: String,
    pub config: SessionConfig,
}

/// Who an agent is, as its turns need it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMeta {
    pub session: String,
    pub thread_id: String,
    pub path: AgentPath,
    pub nickname: Option<String>,
    pub role: String,
    pub instructions: String,
    /// The tool names it is offered, in canonical order.
    pub tools: Vec<String>,
    pub sandbox: SandboxMode,
}

/// `Agent/wake`: run one turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WakeRequest {
    pub meta: AgentMeta,
    pub config: SessionConfig,
}

/// One input a turn takes from its inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Input {
    /// The user's prompt (the root's first input).
    User {
        text: String,
    },
    Mail {
        mail: Mail,
    },
}

/// `Session/drain`: a turn takes its inbox at a model-request boundary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DrainRequest {
    pub path: AgentPath,
    /// The turn's first drain: the session marks the turn started.
    pub turn_start: bool,
}

/// The inbox's content, in arrival order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DrainReply {
    pub inputs: Vec<Input>,
    /// The agent was closed: the turn stops.
    pub closed: bool,
    /// The agent was interrupted: the turn stops, and its inbox stays for the next one.
    #[serde(default)]
    pub interrupted: bool,
}

/// `Session/spawn`: a `spawn_agent` call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpawnRequest {
    pub caller: AgentPath,
    pub task_name: String,
    pub message: String,
    pub agent_type: Option<String>,
}

/// `Session/mail`: `send_message` (queue only) or `followup_task` (wakes the target).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MailRequest {
    pub author: AgentPath,
    pub target: String,
    pub content: String,
    pub followup: bool,
}

/// The tool output a session handler answers with: the text the model reads, `Err` when the
/// call failed (also read verbatim).
pub type ToolReply = Result<String, String>;

/// `Session/wait`: a `wait_agent` call, answered now or later through the awakeable.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitRequest {
    pub caller: AgentPath,
    /// Raw target names as the model gave them; empty means the open direct children.
    pub targets: Vec<String>,
    pub all: bool,
    pub awakeable: String,
}

/// What `Session/wait` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WaitNow {
    /// The wait is over already: the message the model reads.
    Done { message: String },
    /// The session resolves the awakeable (with the message) when the wait is over.
    Registered,
    /// The call is refused: the error the model reads.
    Refused { error: String },
}

/// `Session/close` and `Session/interrupt`: a `close_agent` or `interrupt_agent` call (or
/// `arbor close|interrupt`, as `/root`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CloseRequest {
    pub caller: AgentPath,
    pub target: String,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed { last_message: Option<String> },
    Errored { reason: String },
    Interrupted { reason: String },
}

/// `Session/turn_ended`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnEnded {
    pub path: AgentPath,
    pub outcome: TurnOutcome,
}

/// `Session/events`: events from number `from` on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventsRequest {
    pub from: u64,
    /// At most this many.
    pub limit: u64,
}

/// A page of the session's events.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EventsPage {
    pub events: Vec<EventLine>,
    /// The number of the event after the last one returned.
    pub next: u64,
    /// The tree was quiescent after the root's last turn (with its final answer).
    pub completed: bool,
    pub final_message: Option<String>,
    /// How the root's last turn ended (`None` before it ended).
    pub root_status: Option<AgentStatus>,
}

/// One agent as `arbor agents --json` shows it (cli.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRow {
    pub id: String,
    pub path: AgentPath,
    pub parent_id: Option<String>,
    pub depth: usize,
    pub nickname: Option<String>,
    pub role: String,
    pub model: Option<String>,
    pub status: AgentStatus,
    /// `open`, `closed`, or `None` for the root.
    pub edge: Option<String>,
    pub resident: bool,
    pub unread: usize,
    pub pending_approvals: usize,
}

/// `Agent/history`: an agent's model history and how many responses it has consumed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AgentHistory {
    pub items: Vec<arbor_protocol::ResponseItem>,
    pub responses: usize,
    pub closed: bool,
}
