//! The flags of the commands that run against or serve the Restate engine.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::Provider;

/// `--engine` and `--restate-url`, for the commands that can run against Restate.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Where the tree lives: this machine's files (`local`) or a Restate server.
    #[arg(long, value_enum, default_value = "local")]
    pub engine: EngineKind,
    /// The Restate server's ingress URL with `--engine restate` (default: $ARBOR_RESTATE_URL,
    /// else http://127.0.0.1:8080).
    #[arg(long, value_name = "URL")]
    pub restate_url: Option<String>,
}

impl EngineArgs {
    /// The ingress URL to use.
    pub fn url(&self) -> String {
        self.restate_url
            .clone()
            .or_else(|| {
                std::env::var("ARBOR_RESTATE_URL")
                    .ok()
                    .filter(|url| !url.is_empty())
            })
            .unwrap_or_else(|| "http://127.0.0.1:8080".to_string())
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EngineKind {
    Local,
    Restate,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The engine to serve (only `restate`).
    #[arg(long, value_enum)]
    pub engine: EngineKind,
    /// The address to listen on; several workers may share one (SO_REUSEPORT).
    #[arg(long, value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// Append one JSON line per journaled step this worker runs (for tests and audits).
    #[arg(long, value_name = "FILE")]
    pub step_log: Option<PathBuf>,
    /// Serve sessions without a script with this HTTP model provider (its key is read from
    /// this worker's environment; the rest from the home's config.toml, as `arbor exec`).
    #[arg(long, value_enum)]
    pub provider: Option<Provider>,
    /// The model name the provider is checked with (each session names its own).
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible API.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct EngineCommandArgs {
    #[command(subcommand)]
    pub command: EngineCommand,
}

#[derive(Debug, Subcommand)]
pub enum EngineCommand {
    /// Start a local Restate server and one worker, register the worker, print the URLs and
    /// how to add workers; runs until interrupted.
    Up(UpArgs),
}

#[derive(Debug, Args)]
pub struct UpArgs {
    /// The Restate server executable (default: $ARBOR_RESTATE_SERVER, else `restate-server`
    /// on PATH).
    #[arg(long, value_name = "FILE")]
    pub restate_server: Option<PathBuf>,
    /// The server's data directory (default: restate/ in the arbor home).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value_t = 8080)]
    pub ingress_port: u16,
    #[arg(long, default_value_t = 9070)]
    pub admin_port: u16,
    #[arg(long, default_value_t = 5122)]
    pub node_port: u16,
    /// Where the first worker listens.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
    pub worker: std::net::SocketAddr,
}
