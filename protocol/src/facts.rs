//! Session facts: log lines that are not part of one agent's history. A status change, what
//! another process did to the session (mail from the user, a close, an interrupt, a human's
//! answer to an approval request), and the overrides such answers grant.

use serde::{Deserialize, Serialize};

use crate::{AgentStatus, Mail, ThreadId};

/// An agent's status changed (the line's `thread` is the agent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChanged {
    pub status: AgentStatus,
}

/// Mail from the user, from outside the tree (`arbor send`, `arbor followup`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMail {
    pub recipient_id: ThreadId,
    pub mail: Mail,
}

/// The agent a command from outside the tree acts on (`arbor close`, `arbor interrupt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserTarget {
    pub target_id: ThreadId,
}

/// A human's answer to an approval request, given from another process while a driver runs
/// the session: the driver decides the request with it (a request, not yet a decision).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserAnswer {
    pub request_id: String,
    pub approve: bool,
    /// An approval that also lets the same command in the same cwd run without asking for the
    /// rest of the driver's run (`arbor ui`'s "allow for the session").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub for_session: bool,
}

/// A human's approval that lets the identical retry of a request through once (the line's
/// `thread` is the requester).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalOverride {
    pub request_id: String,
    /// The canonical command and the working directory of the request.
    pub command: String,
    pub cwd: String,
    /// The request asked to run outside the sandbox.
    pub escalated: bool,
}

/// An override was used up by request `used_by` (the approved request itself when its waiter
/// ran the action).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverrideUsed {
    pub request_id: String,
    pub used_by: String,
}
