//! The SQLite store: spawn edges, thread index, mail queue, the approval log and its
//! overrides, each a projection of the session logs.
//!
//! One file, `$ARBOR_HOME/state.sqlite`, is the only place arbor speaks SQL.
//!
//! # Durability
//!
//! - The store is a projection: every row comes from a line of a session's log (the log is
//!   the one file arbor syncs), and [`SessionState`] is how lines change rows. A session's
//!   rows and how far into its log they have come are written together by [`Store::commit`],
//!   so the store may lag a log but never leads it, and opening a session brings it up to the
//!   log again. WAL journal, `synchronous = NORMAL` (commits do not wait for the disk; a crash
//!   may lose the last ones, which the log still has), `foreign_keys = ON`, a 5 s busy timeout.
//! - One write connection, used by one thread at a time. Other processes may write the same
//!   file; SQLite's lock serialises them.
//! - Reads run on separate read-only connections, each inside a read transaction, so a read
//!   sees one committed snapshot and never waits for the writer. Read methods block: async
//!   callers use `tokio::task::spawn_blocking`.
//! - The schema is versioned by `PRAGMA user_version` (numbered migrations, each in its own
//!   transaction) and marked with [`APPLICATION_ID`]. A file that is not an arbor store, or
//!   comes from a newer arbor, is refused and left untouched.
//!
//! Timestamps are stored as integer milliseconds since the Unix epoch (UTC); paths relative to
//! `$ARBOR_HOME`.

mod approvals;
mod connection;
mod edges;
mod error;
mod mail;
mod migrations;
mod overrides;
mod persist;
mod query;
mod readonly;
mod retention;
mod schema;
pub mod state;
mod store;
mod threads;
mod tree;
mod walk;
mod worktrees;

pub use approvals::{ApprovalOutcome, ApprovalRecord, DecidedBy};
pub use connection::BUSY_TIMEOUT;
pub use edges::{AgentGraphStore, EdgeStatus};
pub use error::StoreError;
pub use mail::QueuedMail;
pub use migrations::SCHEMA_VERSION;
pub use overrides::{AnswerOutcome, ApprovalOverride, OverrideKey, answer_outcome};
pub use schema::APPLICATION_ID;
pub use state::{AgentRow, LogPosition, MailRow, SessionState};
pub use store::{STATE_FILE_NAME, Store};
pub use threads::{LAST_SESSION, MIN_SESSION_PREFIX, ThreadRecord};
pub use tree::SessionTree;
pub use worktrees::WorktreeRecord;
