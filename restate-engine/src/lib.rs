//! arbor's Restate engine: a tree of agents that lives in a Restate server and runs on any
//! number of worker processes. Each agent is an `Agent` virtual object (one running turn at a
//! time), the session is a `Session` object (the spawn graph, inboxes, waits, quiescence and
//! the event list). Model requests and commands are journaled steps, so a worker killed
//! mid-turn is retried by Restate, on any worker, without repeating a completed step. See
//! `docs/engines.md`.

mod agent;
pub mod approval;
mod calls;
pub mod client;
mod error;
mod events;
mod exec;
mod patch;
pub mod rollout;
pub mod server;
mod session;
mod tree;
mod turn;
pub mod wire;
pub mod worker;

pub use agent::Agent;
pub use client::{Ingress, register_deployment};
pub use error::RestateError;
pub use events::Events;
pub use server::{LocalServer, ServerSpec, free_port};
pub use session::{Session, agent_key};
pub use tree::guardian_path;
pub use worker::Worker;
