//! The flags of `arbor mcp`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured MCP servers: how each is reached, whether it starts, its tools.
    List(McpListArgs),
}

#[derive(Debug, Args)]
pub struct McpListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The workspace whose configuration to read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}
