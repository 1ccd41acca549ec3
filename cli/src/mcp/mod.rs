//! `arbor mcp list` (the configured MCP servers, whether they start, their tools) and
//! `arbor mcp-server` (arbor itself as a stdio MCP server, in `server.rs` and `runs.rs`).

mod list;
mod runs;
mod server;

pub use list::list;
pub use server::serve;
