//! Rollouts: one append-only JSONL file per thread, and a reader that tolerates a torn tail.
//!
//! A rollout lives at `$ARBOR_HOME/sessions/YYYY/MM/DD/rollout-<stamp>-<thread id>.jsonl`
//! ([`rollout_path`]). Its first line is the `session_meta` header; every later line is one
//! [`arbor_protocol::RolloutItem`], stamped when it was appended. [`RolloutWriter`] only ever
//! appends; [`read_rollout`] and [`RolloutReader`] read a file back, skipping a torn last line
//! and item types from newer versions with a notice.

mod error;
mod journal;
mod layout;
mod line;
mod reader;
mod replay;
mod tail;
mod writer;

pub use error::RolloutError;
pub use journal::{
    JournalEntry, JournalRead, append_journal, journal_len, journal_path, read_journal,
};
pub use layout::{
    SESSIONS_DIR, find_rollout, list_rollouts, rollout_file_name, rollout_path, sessions_dir,
};
pub use reader::{Entry, RolloutRead, RolloutReader, read_rollout};
pub use replay::{
    CUT_CALL_OUTPUT, PROCESS_EXIT, Replay, ReplayedTurn, cut_call_outputs, unanswered_calls,
};
pub use tail::{tail_status, tail_turn_open};
pub use writer::{Barrier, Reopened, RolloutWriter, TailRepair, WriterStats};
