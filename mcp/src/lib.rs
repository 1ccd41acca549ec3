//! arbor's MCP client, on the official Rust SDK (`rmcp`): the servers of `[mcp_servers.NAME]`
//! in `config.toml` (stdio child processes or streamable HTTP), started when an agent first
//! needs them and shared by every agent of the session, their tools offered to models as
//! `mcp__<server>__<tool>` with the server's JSON schema (checked against what providers
//! accept), their results rendered as bounded text.
//!
//! - [`config`]: the server table and its checks.
//! - [`naming`]: tool names, schema checks, what a tool looks like to a model.
//! - [`McpHub`] (`hub.rs`): one session's servers; [`Listing`] a server's tools.
//! - `server.rs`: one server's life (start, share, restart once, give up, stop).
//! - `connection.rs`: one live connection: the start, the handshake, the shutdown.
//! - `listing.rs`: a server's tools as a session offers them.
//! - `process.rs`: a stdio server's process tree under arbor's supervisor.
//! - `render.rs`: a call's result as model-visible text.
//! - `cache.rs`: the tool lists servers last gave, so a session offers them without starting
//!   anything; a server starts when one of its tools is first called.
//!
//! **Invariant:** no server process outlives its session, nor arbor: every one runs under
//! the supervisor of `arbor_tools::Contained`, which kills its whole tree when arbor lets go or
//! dies.
//!
//! No I/O happens before a server is needed but the one read of the tool cache; no dependency on the orchestrator: it drives the
//! hub, decides approvals and bounds outputs.

mod cache;
pub mod config;
mod connection;
mod http;
mod hub;
mod listing;
pub mod naming;
mod process;
mod render;
mod server;

pub use cache::{CachedTools, ToolCache};
pub use config::{RawServer, ServerConfig, ServerDirs, Transport, servers_from_raw};
pub use hub::McpHub;
pub use listing::Listing;
pub use naming::{ListedTool, McpTool, is_mcp};
pub use render::render;
pub use server::MAX_STARTS;
