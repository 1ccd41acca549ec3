//! The commands that run against the Restate engine: `exec --engine restate`, `tree` and
//! `agents`, `interrupt` and `close` with `--engine restate`, `worker` and `engine up` (see
//! docs/engines.md).

mod exec;
mod read;
mod up;
mod worker;

pub use exec::exec;
pub use read::{Act, act, agents, tree};
pub use up::up;
pub use worker::worker;

use crate::error::CliError;

/// A failure talking to Restate, as the command line reports it.
fn failed(error: arbor_restate::RestateError) -> CliError {
    CliError::failed(error.to_string())
}
