//! What the worker's handlers, the command line and the tests send each other: the request and
//! reply bodies of the `Session` and `Agent` handlers, as JSON.

use arbor_protocol::{
    AgentPath, AgentStatus, ApprovalPolicy, ApprovalsReviewer, Event, EventLine, Mail, MailId,
    SandboxMode, Timestamp,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{ApprovalKey, Grant};

/// Settings fixed when a session starts, carried with every wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionConfig {
    /// The scripted model's script (its JSON text; in a wake, the agent's part of it, see
    /// `Tree::script`); `None` is a session whose agents ask the
    /// worker's HTTP model (see `model`), or whose turns end as errored when it has none.
    pub script: Option<String>,
    /// The model name a session without a script asks the worker's HTTP model for.
    #[serde(default)]
    pub model: Option<String>,
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
    /// Who may run what without asking (behaviour §7).
    #[serde(default = "on_request")]
    pub approval_policy: ApprovalPolicy,
    #[serde(default)]
    pub reviewer: ApprovalsReviewer,
    /// How long a request waits for a human: `None` without limit, `Some(0)` when nobody can
    /// be asked.
    #[serde(default)]
    pub approval_wait_ms: Option<u64>,
    /// How long one guardian review may take.
    #[serde(default = "review_deadline")]
    pub review_deadline_ms: u64,
    /// The root user's task (its first prompt), which the guardian is shown; set at start.
    #[serde(default)]
    pub root_task: String,
}

fn on_request() -> ApprovalPolicy {
    ApprovalPolicy::OnRequest
}

fn review_deadline() -> u64 {
    arbor_guardian::DEFAULT_REVIEW_DEADLINE_SECS * 1000
}

impl SessionConfig {
    /// The defaults of the behaviour contract for a session working in `cwd`.
    pub fn new(cwd: impl Into<String>) -> Self {
        Self {
            script: None,
            model: None,
            cwd: cwd.into(),
            sandbox: SandboxMode::WorkspaceWrite,
            max_depth: 1,
            max_turn_responses: 200,
            wait_default_ms: 30_000,
            wait_min_ms: 1_000,
            wait_max_ms: 3_600_000,
            approval_policy: ApprovalPolicy::OnRequest,
            reviewer: ApprovalsReviewer::User,
            approval_wait_ms: None,
            review_deadline_ms: review_deadline(),
            root_task: String::new(),
        }
    }
}

/// Fresh values an operation may need (a thread id, a mail id, the time): made by the caller's
/// journaled step and carried in its request, so the session's handler makes no round trip
/// for them (and a retry sees the same ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fresh {
    pub thread_id: String,
    pub mail_id: String,
    pub now_ms: i64,
}

impl Fresh {
    /// New ids and the time now.
    pub fn now() -> Self {
        Self {
            thread_id: arbor_protocol::ThreadId::new().as_string(),
            mail_id: MailId::new().to_string(),
            now_ms: Timestamp::now().as_millis(),
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
    /// The inputs handed over with the wake (the mail that woke an agent whose inbox held
    /// nothing else): the turn's first request takes them without a call to the session.
    #[serde(default)]
    pub inputs: Vec<Input>,
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
    /// The thread the turn runs for: a turn of a closed agent whose path a new agent took is
    /// told it is closed (and takes nothing of the new agent's).
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn's events since its last call to the session, recorded first.
    #[serde(default)]
    pub events: Vec<Event>,
    /// The time (and ids) of the turn's journaled step before the call.
    #[serde(default)]
    pub fresh: Option<Fresh>,
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

/// One `spawn_agent` call of a `Session/spawn_many` batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpawnRequest {
    pub caller: AgentPath,
    pub task_name: String,
    pub message: String,
    pub agent_type: Option<String>,
    /// The new agent's thread id, its task's mail id and the time, from the caller's step.
    #[serde(default)]
    pub fresh: Option<Fresh>,
}

/// `Session/spawn_many`: the `spawn_agent` calls of one response that follow each other,
/// registered in one call, in order; answered with one reply per call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpawnBatch {
    pub spawns: Vec<SpawnRequest>,
    /// The turn's events since its last call to the session, recorded first.
    #[serde(default)]
    pub events: Vec<Event>,
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
    /// The authors of the caller's untaken mail, in arrival order (the session reads them
    /// from the inbox; a wait for any is over at once when one is a target).
    #[serde(default)]
    pub unread_from: Vec<AgentPath>,
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
    /// The turn's last events, recorded first.
    #[serde(default)]
    pub events: Vec<Event>,
    /// The result mail's id and the time, from the turn's last journaled step.
    #[serde(default)]
    pub fresh: Option<Fresh>,
}

/// `Session/events`: events from number `from` on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventsRequest {
    pub from: u64,
    /// At most this many.
    pub limit: u64,
}

/// `Session/summary`: how far the session is, without its tree or its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How many events the session has numbered (they reach their `Events` chunks one-way).
    pub events: u64,
    /// The last of them, not sent to their chunk yet: lines `events - tail.len()` on.
    #[serde(default)]
    pub tail: Vec<EventLine>,
    /// The tree was quiescent after the root's last turn.
    pub completed: bool,
    pub final_message: Option<String>,
    /// How the root's last turn ended (`None` before it ended).
    pub root_status: Option<AgentStatus>,
    /// No agent has an active or owed turn.
    pub idle: bool,
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
    /// No agent has an active or owed turn, and every event is in the page.
    #[serde(default)]
    pub quiescent: bool,
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
    /// Its turns, in order: which items each added, the mail it took, how it ended.
    #[serde(default)]
    pub turns: Vec<TurnMark>,
    /// Who it is, as its last wake said, and the directory it worked in.
    #[serde(default)]
    pub meta: Option<AgentMeta>,
    #[serde(default)]
    pub cwd: Option<String>,
}

/// One ended turn of an agent, as its `Agent` object keeps it: the history items
/// `start..end` are the turn's, and those in `mails` were mail it took (the item is the mail's
/// model text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMark {
    /// From 1.
    pub number: u64,
    pub start: usize,
    pub end: usize,
    /// The mail taken, each with the index of its history item.
    #[serde(default)]
    pub mails: Vec<(usize, Mail)>,
    /// How it ended; `None` when the agent was closed during it.
    pub outcome: Option<TurnOutcome>,
    pub started_ms: i64,
    pub ended_ms: i64,
}

/// `Session/request_approval`: an `exec_command` that needs approval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub path: AgentPath,
    /// The exact planned action.
    pub action: Value,
    pub justification: Option<String>,
    pub key: ApprovalKey,
    /// The guardian's review request, with reviewer `guardian` (the requester's turn renders
    /// it: it holds the transcript).
    pub review: Option<String>,
    /// The awakeable the requester's turn waits on.
    pub awakeable: String,
}

/// What a turn that waits for a decision is told: whether the command runs, and the text its
/// model reads when it does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    pub allow: bool,
    pub message: Option<String>,
}

/// What `Session/request_approval` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ApprovalReply {
    /// Decided as it was made (policy, an override, nobody to ask).
    Decided { decided: Decided },
    /// Pending: the session resolves the awakeable with the decision.
    Pending { id: String },
}

/// `Session/answer`: `arbor approve` (`approve`) or `arbor deny`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnswerRequest {
    pub id: String,
    pub approve: bool,
}

/// What an answer did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerReply {
    pub id: String,
    /// The requester.
    pub path: AgentPath,
    /// The pending request is decided by the answer.
    pub decided: bool,
    /// The identical retry runs once without asking.
    pub override_granted: bool,
}

/// A timer the session sets for itself (a delayed one-way call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Timer {
    /// The approval wait of a request a human answers has passed.
    Expire { id: String },
    /// The deadline of attempt `attempt` of the guardian's review of request `id` has passed.
    Review { id: String, attempt: u32 },
}

/// One request as `arbor approvals --json` shows it (cli.md; the local engine's keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRow {
    pub id: String,
    pub path: AgentPath,
    pub action: Value,
    pub outcome: String,
    pub decided_by: Option<String>,
    pub risk_level: Option<String>,
    pub rationale: Option<String>,
    pub requested_at: Timestamp,
    pub decided_at: Option<Timestamp>,
    pub justification: Option<String>,
    pub tokens: Option<u64>,
    #[serde(rename = "override")]
    pub grant: Option<Grant>,
}

/// `Session/send`: `arbor send` (queue only) or `arbor followup` (wakes the target), as
/// `/root`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutsideMail {
    pub target: String,
    pub content: String,
    pub followup: bool,
}

/// Mail sent from outside the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentMail {
    pub id: MailId,
    pub recipient: AgentPath,
    /// A run of the root (`exec`, `resume PROMPT`) is in progress and carries it on.
    pub handed: bool,
    /// The number of the first event the mail caused.
    pub from: u64,
}

/// `Session/resume`: a new prompt for the root of a tree whose last run is over.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResumeRequest {
    pub prompt: String,
}

/// What `Session/resume` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResumeReply {
    /// The run started; `from` is the number of its first event.
    Started {
        from: u64,
    },
    /// A run of the root is in progress already.
    Running {
        error: String,
    },
    Refused {
        error: String,
    },
}

/// `Session/inbox`: the mail an agent has not taken yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InboxReply {
    pub path: AgentPath,
    pub mail: Vec<Mail>,
}
