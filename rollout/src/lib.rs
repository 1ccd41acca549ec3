//! The session log and the rollouts written from it.
//!
//! The session log (`log`) is one append-only JSONL file per session, the only file arbor
//! syncs: every fact of the session is a numbered line of it. A rollout lives at
//! `$ARBOR_HOME/sessions/YYYY/MM/DD/rollout-<stamp>-<thread id>.jsonl` ([`rollout_path`]): the
//! lines of one agent, copied byte for byte from the log once synced ([`RolloutProjector`]),
//! the `session_meta` header first. [`read_rollout`] and [`RolloutReader`] read a rollout back,
//! skipping a torn last line and item types from newer versions with a notice; [`Replay`]
//! rebuilds an agent from it, and [`read_last_window`] reads only what a revival replays: the
//! header and the last history window.

mod error;
mod layout;
mod line;
pub mod log;
mod project;
mod reader;
mod replay;
mod window;

pub use error::RolloutError;
pub use layout::{
    SESSIONS_DIR, find_rollout, list_rollouts, rollout_file_name, rollout_path, sessions_dir,
};
pub use project::RolloutProjector;
pub use reader::{Entry, RolloutRead, RolloutReader, read_rollout};
pub use replay::{
    CUT_CALL_OUTPUT, PROCESS_EXIT, Replay, ReplayedTurn, cut_call_outputs, unanswered_calls,
};
pub use window::{last_window_offset, read_last_window};
