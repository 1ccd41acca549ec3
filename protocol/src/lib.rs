//! Leaf types shared by every arbor crate: thread ids, agent paths, mail, agent statuses,
//! timestamps and the rollout item types. No I/O lives here.

mod error;
mod facts;
mod handle;
mod ids;
mod limits;
mod mail;
mod path;
mod rollout;
mod status;
mod time;

pub use error::ProtocolError;
pub use facts::{ApprovalOverride, OverrideUsed, StatusChanged, UserAnswer, UserMail, UserTarget};
pub use handle::{is_handle, pick_handle};
pub use ids::{MailId, ThreadId};
pub use limits::{MAX_PATH_BYTES, MAX_SEGMENT_BYTES};
pub use mail::{Mail, MailKind};
pub use path::{AgentPath, ROOT_NAME};
pub use rollout::{
    AbortKind, AgentClosed, ApprovalDecided, ApprovalRequested, Compacted, CompactionTrigger,
    MailConsumed, ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem, RolloutLine, SessionMeta,
    TurnAborted, TurnCompleted, TurnStarted, Usage, UsageLine, rollout_relative_path,
};
pub use status::AgentStatus;

mod models;
pub use models::{ModelFallback, ServedBy, Thinking};
pub use time::Timestamp;

mod tool;
pub use tool::ToolSpec;

mod policy;
pub mod text;
pub use policy::{ApprovalPolicy, ApprovalsReviewer, SandboxMode};

mod event;
pub use event::{Event, EventLine};

mod worktree;
pub use worktree::{
    ChangeSummary, Isolation, WorkspaceRepository, WorktreeCreated, WorktreeFact, WorktreeMerged,
};
