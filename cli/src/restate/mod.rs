//! The commands that run against the Restate engine (see docs/engines.md): `exec`, `resume`,
//! `followup`, `tree`, `agents`, `mail`, `approvals`, `approve`, `deny` and `log` with
//! `--engine restate` (`send`, `interrupt` and `close` go through the engine seam,
//! `engine.rs`); `export --to-local`; `worker` and `engine up`.

mod approvals;
mod engine;
mod exec;
mod export;
mod log;
mod outside;
mod read;
mod stream;
mod up;
mod worker;

pub use approvals::{answer, approvals};
pub use engine::Restate;
pub use exec::exec;
pub use export::export;
pub use log::log;
pub use outside::{followup, mail, resume};
pub use read::{agents, tree};
pub use up::up;
pub use worker::worker;

use crate::error::CliError;

/// A failure talking to Restate, as the command line reports it.
fn failed(error: arbor_restate::RestateError) -> CliError {
    CliError::failed(error.to_string())
}

/// A failure of a call on `session`: an unknown session is a usage error naming the server.
fn call_failed(url: &str, session: &str) -> impl Fn(arbor_restate::RestateError) -> CliError {
    let (url, session) = (url.to_string(), session.to_string());
    move |error| match error {
        arbor_restate::RestateError::Status { status: 404, .. } => {
            let local = session.starts_with('-') || arbor_protocol::is_handle(&session);
            let why = if local {
                ": with --engine restate, SESSION is the Restate session's id (handles and \
                 --last name local sessions)"
            } else {
                ""
            };
            CliError::usage(format!("unknown session {session} on {url}{why}"))
        }
        other => failed(other),
    }
}
