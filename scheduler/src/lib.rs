//! Pure scheduling decisions, with no runtime and no I/O: the `max_running` cap with the FIFO
//! of turns over it ([`RunQueue`]), and the `max_resident` cap with its least-recently-used
//! order and the choice of the agent to evict ([`Residency`]). The session task owns one of
//! each and acts on what they decide.

mod residency;
mod run_queue;

pub use residency::{Claim, Residency};
pub use run_queue::RunQueue;
