//! What goes into the session's state ([`Input`], a closed set) and what comes out of it
//! ([`Effect`], [`Answer`]).

use arbor_protocol::{AgentPath, AgentStatus, Event, Mail, MailId, ResponseItem, ThreadId, Usage};

/// Names a request whose answer comes back as [`Effect::Reply`].
pub type Ticket = u64;

/// Where an agent's turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    Idle,
    /// Waiting for a slot under `max_running`.
    Queued,
    /// Holds its slot, waits for its runtime (a residency slot, a revival, its install).
    Loading,
    /// Its task was told to run it.
    Granted,
    /// Its task started it.
    Running,
}

/// Where an agent's runtime is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// Made in this process, not yet installed (waiting for a residency slot).
    New,
    /// Loaded: it has a task.
    Resident,
    /// Being revived from its rollout.
    Reviving,
    /// Not loaded: its history is on disk.
    Evicted,
}

/// An agent the session learns of: spawned now, or registered on resume.
#[derive(Debug, Clone)]
pub struct Registration {
    pub id: ThreadId,
    pub path: AgentPath,
    pub parent: Option<ThreadId>,
    pub internal: bool,
    pub status: AgentStatus,
    /// Made now (it needs installing) or stored (it is revived when a turn is granted).
    pub fresh: bool,
    pub unread: Vec<Mail>,
    pub last_message: Option<String>,
    /// Answered with [`Answer::Registered`] once the agent is installed.
    pub ticket: Option<Ticket>,
}

/// What a revival found in the agent's rollout.
#[derive(Debug, Clone, Default)]
pub struct Revival {
    pub last_message: Option<String>,
    pub usage: Usage,
    /// Mail the rollout shows consumed (never delivered again).
    pub consumed: Vec<MailId>,
}

/// How a turn ended, as its task reports it.
#[derive(Debug, Clone)]
pub struct TurnEnd {
    /// The status it leaves the agent in (unless mail owes it another turn).
    pub status: AgentStatus,
    /// The final answer of a completed turn.
    pub completed: Option<Option<String>>,
    /// The result mail for the parent, already in the log.
    pub result: Option<Mail>,
    /// False when the task never started the turn (it stopped first).
    pub started: bool,
}

/// `wait_agent`'s modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    Any,
    All,
}

/// Why a wait ended before its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitDone {
    Mail(Vec<AgentPath>),
    AllIdle(Vec<(AgentPath, AgentStatus)>),
    NoTargets,
}

/// How a `wait_agent` ended: why (`None`: its deadline passed, or it was cancelled), and the
/// targets waiting for an approval at that moment. An approval waits for the user or the
/// guardian, never for the agent that waits, so it does not end a wait; the reply names who
/// is still held by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitReply {
    pub done: Option<WaitDone>,
    pub awaiting_approval: Vec<AgentPath>,
}

/// Which agents a snapshot holds: a listing copies only the agents it shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    All,
    /// The agent at this path and every agent under it.
    Within(AgentPath),
    One(ThreadId),
}

/// One agent as a listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSnapshot {
    pub id: ThreadId,
    pub path: AgentPath,
    pub parent: Option<ThreadId>,
    pub internal: bool,
    pub status: AgentStatus,
    pub unread: usize,
    pub closed: bool,
    /// It or an ancestor is closed.
    pub behind_closed: bool,
    pub resident: bool,
    pub queue_position: Option<usize>,
    pub last_message: Option<String>,
    pub usage: Usage,
    pub turns_started: u64,
    pub scheduled: bool,
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The agent is installed.
    Registered,
    /// The target's status before an interrupt.
    Interrupted(AgentStatus),
    /// A wait ended.
    Wait(WaitReply),
    /// The agent has no turn scheduled.
    Idle(AgentSnapshot),
    /// No agent has a turn scheduled.
    Quiet,
    Snapshot(Vec<AgentSnapshot>),
    /// The agents whose interrupted turns run again, in creation order.
    Continued(Vec<AgentPath>),
    Synced,
    Report {
        usage: Usage,
        kept: Vec<AgentPath>,
        resident: usize,
    },
}

/// One input of the session's state.
#[derive(Debug, Clone)]
pub enum Input {
    Register(Registration),
    Revived {
        agent: ThreadId,
        result: Result<Revival, String>,
    },
    /// A mail in the log for `recipient`.
    Mail {
        recipient: ThreadId,
        mail: Mail,
    },
    /// Input for the agent's next turn that is not mail (the user's prompt, a review); it
    /// asks for a turn.
    Prompt {
        agent: ThreadId,
        items: Vec<ResponseItem>,
    },
    /// The running turn took these handed mails into its history.
    Consumed {
        agent: ThreadId,
        ids: Vec<MailId>,
    },
    Started {
        agent: ThreadId,
    },
    TurnEnded {
        agent: ThreadId,
        end: TurnEnd,
    },
    Usage {
        agent: ThreadId,
        usage: Usage,
    },
    ApprovalOpened {
        agent: ThreadId,
    },
    ApprovalClosed {
        agent: ThreadId,
    },
    /// Close `target` (its close line is in the log): it and the agents below it stop.
    Close {
        target: ThreadId,
    },
    /// Stop the target's turn with `reason` (or take its queued turn back).
    Interrupt {
        target: ThreadId,
        reason: String,
        ticket: Option<Ticket>,
    },
    /// `wait_agent` of `caller` on `targets` (`None`: its open children).
    Wait {
        ticket: Ticket,
        caller: ThreadId,
        targets: Option<Vec<ThreadId>>,
        mode: WaitMode,
    },
    /// The wait's deadline passed.
    WaitEnded {
        ticket: Ticket,
    },
    /// Answer when `agent` has no turn scheduled.
    Idle {
        ticket: Ticket,
        agent: ThreadId,
    },
    /// Answer when no agent has a turn scheduled.
    Quiescent {
        ticket: Ticket,
    },
    Snapshot {
        ticket: Ticket,
        scope: Scope,
    },
    /// Answered once every input sent before it is handled.
    Sync {
        ticket: Ticket,
    },
    /// The tree's token totals, the agents a spent budget kept, resident agents.
    Report {
        ticket: Ticket,
    },
    /// After a resume: start the turns the last run owed and the wake-once that are due.
    FinishOwed,
    /// After a resume: every open agent the last run left interrupted gets a turn that
    /// continues its task (the root too, unless `skip_root`), then what [`Input::FinishOwed`]
    /// starts; answered with the agents continued.
    Continue {
        ticket: Ticket,
        skip_root: bool,
    },
    /// Every turn stops with `reason`, and no new one starts.
    Stop {
        reason: String,
    },
    /// Every turn but the root's stops with `reason`, and no new one starts.
    StopChildren {
        reason: String,
    },
}

/// What the session task does, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Give a new agent its runtime (its residency slot is held).
    Install {
        agent: ThreadId,
    },
    /// Load an agent from its rollout (its slot is held); answer with `Input::Revived`.
    Revive {
        agent: ThreadId,
    },
    /// Stop an idle agent's task and drop its history.
    Evict {
        agent: ThreadId,
    },
    /// Tell the agent's task to run a turn with this input.
    Go {
        agent: ThreadId,
        input: Vec<ResponseItem>,
        mails: Vec<Mail>,
    },
    /// Mail that joins the agent's running turn.
    Hand {
        agent: ThreadId,
        mails: Vec<Mail>,
    },
    /// Stop the agent's granted or running turn.
    Cancel {
        agent: ThreadId,
        reason: String,
    },
    /// Stop the agent and everything below it for good, and free its path.
    Close {
        agent: ThreadId,
    },
    /// Stop every agent of the session.
    StopAll,
    /// The agent's status changed: a line of the log, then the event.
    Status {
        agent: ThreadId,
        status: AgentStatus,
    },
    Emit(Event),
    /// The tree's token budget is used up.
    BudgetSpent,
    Reply {
        ticket: Ticket,
        answer: Answer,
    },
}

/// A request answered when its condition holds.
#[derive(Debug)]
pub enum Waiter {
    /// `wait_agent`.
    Agents {
        ticket: Ticket,
        caller: ThreadId,
        targets: Vec<ThreadId>,
        mode: WaitMode,
        /// Where the last check of a wait for all found a busy target: the next check looks
        /// there first, so a wait over a thousand children costs one lookup while that one
        /// stays busy.
        busy_at: usize,
    },
    Idle {
        ticket: Ticket,
        agent: ThreadId,
    },
    Quiet {
        ticket: Ticket,
    },
}
