//! What the terminal is asked: one pending request, and the answer it gives.

use arbor_protocol::AgentPath;
use serde_json::Value;
use tokio::sync::oneshot;

/// The diff an approver sees before answering a request that writes files: a merge's unified
/// diff, or the patch itself (its `+` and `-` lines are the change); `None` for a command.
pub fn action_diff(action: &Value) -> Option<&str> {
    action["diff"]
        .as_str()
        .or_else(|| action["patch"].as_str())
        .filter(|diff| !diff.trim().is_empty())
}

/// A human's answer at the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalAnswer {
    ApproveOnce,
    /// Approve this command in this cwd for the rest of the session.
    ApproveForSession,
    Deny,
}

/// One approval request for the terminal. Answer it with [`ApprovalPrompt::answer`]; a prompt
/// whose request was decided meanwhile (another process, the approval wait) is closed.
#[derive(Debug)]
pub struct ApprovalPrompt {
    pub id: String,
    /// The requester.
    pub path: AgentPath,
    /// The exact planned action.
    pub action: Value,
    pub justification: Option<String>,
    /// Asked before this process started: its requester no longer waits, and an approval lets
    /// the identical retry through once.
    pub from_before: bool,
    pub(super) reply: Reply,
}

/// Where a prompt's answer goes.
pub(super) enum Reply {
    Waiter(oneshot::Sender<TerminalAnswer>),
    /// A request from before this process started: `open` says whether it still waits,
    /// `answer` records an answer (the driver turns it into the request's lines).
    Stored {
        open: Box<dyn Fn() -> bool + Send + Sync>,
        answer: Box<dyn FnOnce(bool) + Send>,
    },
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Waiter(_) => "Waiter",
            Self::Stored { .. } => "Stored",
        })
    }
}

impl ApprovalPrompt {
    /// Whether the request still waits for this answer.
    pub fn is_open(&self) -> bool {
        match &self.reply {
            Reply::Waiter(tx) => !tx.is_closed(),
            Reply::Stored { open, .. } => open(),
        }
    }

    /// Answers the request. Err when it was decided meanwhile.
    pub async fn answer(self, answer: TerminalAnswer) -> Result<(), String> {
        match self.reply {
            Reply::Waiter(tx) => tx
                .send(answer)
                .map_err(|_| format!("request {} was already decided", self.id)),
            Reply::Stored {
                open,
                answer: record,
            } => {
                if !open() {
                    return Err(format!("request {} was already decided", self.id));
                }
                record(answer != TerminalAnswer::Deny);
                Ok(())
            }
        }
    }
}
