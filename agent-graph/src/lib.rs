//! The SQLite store: spawn edges, thread index, durable mail, the approval log and its
//! overrides.
//!
//! One file, `$ARBOR_HOME/state.sqlite`, is the only place arbor speaks SQL.
//!
//! # Durability
//!
//! - WAL journal, `synchronous = FULL`, `foreign_keys = ON`, a 5 s busy timeout on every
//!   connection. A write is acknowledged (its [`Ticket`] resolves) only after the transaction
//!   holding it has committed and the WAL has been synced, so an acknowledged write survives a
//!   process kill and, as far as the disk honours `fsync`, a power loss.
//! - One writer thread per [`Store`] owns the only read-write connection. It takes every job
//!   already queued, runs them in one `IMMEDIATE` transaction with one savepoint each (a
//!   failing job is rolled back alone), commits once and then answers: group commit, one sync
//!   for the whole group. A mail enqueue made while the writer has nothing ordered queued
//!   commits on the caller's thread through the same connection, in a synced transaction of
//!   its own (`inline`). Other processes may write the same file; SQLite's lock serialises
//!   them.
//! - Reads run on separate read-only connections, each inside a read transaction, so a read
//!   sees one committed snapshot and never waits for the writer. Read methods block: async
//!   callers use `tokio::task::spawn_blocking`.
//! - The schema is versioned by `PRAGMA user_version` (numbered migrations, each in its own
//!   transaction) and marked with [`APPLICATION_ID`]. A file that is not an arbor store, or
//!   comes from a newer arbor, is refused and left untouched.
//! - Everything here but the mail queue and the approval log is a projection of the rollouts
//!   and can be rebuilt from them; mail is durable here until the recipient's rollout records
//!   it.
//!
//! Timestamps are stored as integer milliseconds since the Unix epoch (UTC).

mod approvals;
mod edges;
mod error;
mod inbox;
mod inline;
mod mail;
mod overrides;
mod schema;
mod store;
mod threads;
mod tree;
mod walk;
mod walvfs;
mod writer;

pub use approvals::{ApprovalDecision, ApprovalOutcome, ApprovalRecord, DecidedBy};
pub use edges::{AgentGraphStore, EdgeStatus};
pub use error::StoreError;
pub use mail::QueuedMail;
pub use overrides::{AnswerOutcome, ApprovalOverride, HumanAnswer, Opened, OverrideKey};
pub use schema::{APPLICATION_ID, BUSY_TIMEOUT, SCHEMA_VERSION};
pub use store::{STATE_FILE_NAME, Store};
pub use threads::{MIN_SESSION_PREFIX, ThreadRecord};
pub use tree::SessionTree;
pub use writer::Ticket;
