//! The session task, the one owner of the session's state: the `arbor-tree` crate is that
//! state and the decisions taken on it (pure data), `actor.rs` the task that feeds it and carries its effects
//! out, `handle.rs` what the rest of the session sends it, `spawn.rs` and `revive.rs` the two
//! pieces of I/O it runs for new and evicted agents, `nicknames.rs` its nickname pools.

mod actor;
pub mod handle;
mod nicknames;
mod revive;
mod spawn;

use std::sync::Arc;

use arbor_protocol::RolloutLine;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use handle::{Msg, SessionHandle, SpawnSpec};

use crate::ctx::Ctx;

/// Starts the session task over `rx` (the handle's other end) and the lines other processes
/// append to the log.
pub fn start(
    ctx: &Arc<Ctx>,
    rx: mpsc::UnboundedReceiver<Msg>,
    external: mpsc::UnboundedReceiver<RolloutLine>,
) -> JoinHandle<()> {
    let config = arbor_tree::CoreConfig {
        max_running: ctx.config.max_running,
        max_resident: ctx.config.max_resident,
        wake_once: ctx.config.wake_once,
        root_driven: ctx.config.root_driven,
        budget_tokens: ctx.config.budget_tokens,
    };
    // Whether an agent has live processes: its handle knows.
    let probe = Arc::clone(ctx);
    let has_processes = Box::new(move |id| {
        probe
            .registry
            .get(id)
            .is_some_and(|agent| agent.live.count() > 0)
    });
    let actor = actor::Actor::new(
        Arc::clone(ctx),
        arbor_tree::Core::new(config, has_processes),
    );
    tokio::spawn(actor.run(rx, external))
}
