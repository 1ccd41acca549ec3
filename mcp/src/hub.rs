//! `McpHub`: the configured servers of one session. Nothing starts until an agent needs a
//! server's tools (its first request lists them) or calls one; every agent shares the one
//! connection per server; [`McpHub::stop`] ends them all with their process trees.

use crate::config::ServerDirs;
use std::sync::Arc;

use serde_json::Value;

use crate::cache::{CachedTools, ToolCache};
use crate::config::ServerConfig;
use crate::listing::Listing;
use crate::naming::{self, McpTool};
use crate::server::Server;

/// The MCP servers of one session.
#[derive(Debug, Default)]
pub struct McpHub {
    servers: Vec<Arc<Server>>,
}

impl McpHub {
    /// The servers of `configs`, none started; stdio servers run in `dirs.run` unless their
    /// config names a `cwd`.
    /// With `cache`, the tool lists servers give are cached there; the lists `offered` holds
    /// (a snapshot of the cache) are offered without starting their servers, which start
    /// when one of their tools is called.
    pub fn new(
        configs: Vec<ServerConfig>,
        dirs: ServerDirs,
        cache: Option<ToolCache>,
        offered: Option<&CachedTools>,
    ) -> Self {
        Self {
            servers: configs
                .into_iter()
                .map(|config| {
                    let print = crate::cache::fingerprint(&config);
                    let listed = offered.and_then(|cached| cached.get(&config.name, &print));
                    Arc::new(Server::new(config, dirs.clone(), cache.clone(), listed))
                })
                .collect(),
        }
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The configured servers, in name order.
    pub fn configs(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().map(|server| &server.config)
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers
            .iter()
            .find(|server| server.config.name == name)
    }

    /// The listings of the servers `wanted` names, listed at once (each started if it has not
    /// been), in name order.
    pub async fn listings(&self, wanted: impl Fn(&str) -> bool) -> Vec<(String, Arc<Listing>)> {
        let mut tasks = tokio::task::JoinSet::new();
        for (index, server) in self.servers.iter().enumerate() {
            if wanted(&server.config.name) {
                let server = Arc::clone(server);
                tasks.spawn(async move { (index, server.listing().await) });
            }
        }
        let mut listings = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(found) => listings.push(found),
                Err(err) => tracing::error!(error = %err, "mcp listing task failed"),
            }
        }
        listings.sort_by_key(|(index, _)| *index);
        listings
            .into_iter()
            .map(|(index, listing)| (self.servers[index].config.name.clone(), listing))
            .collect()
    }

    /// The listing of `server`, if it has been listed (nothing is started).
    pub fn listed(&self, server: &str) -> Option<Arc<Listing>> {
        self.server(server).and_then(|server| server.listed())
    }

    /// The tool a model calls by its qualified name, as this session offers it (listing its
    /// server first if no agent has yet; starting it if its tools came from the cache, to
    /// check the tool against what it offers now). The error is for the model.
    pub async fn tool(&self, qualified: &str) -> Result<McpTool, String> {
        let Some((server_name, tool_name)) = naming::split(qualified) else {
            return Err(format!("unknown tool `{qualified}`"));
        };
        let Some(server) = self.server(server_name) else {
            return Err(format!(
                "unknown tool `{qualified}`: no MCP server `{server_name}` is configured"
            ));
        };
        let listing = server.listing().await;
        if let Some(error) = &listing.error {
            return Err(format!(
                "mcp server `{server_name}` is unavailable in this session: {error}"
            ));
        }
        let offered = listing
            .tools
            .iter()
            .find(|tool| tool.name == tool_name)
            .cloned()
            .ok_or_else(|| {
                format!("tool `{qualified}` is not offered: mcp server `{server_name}` has no tool `{tool_name}` in this session")
            })?;
        server.current(&offered).await
    }

    /// Calls `tool` with the model's `arguments` text; the model-visible result (unbounded:
    /// the caller truncates).
    pub async fn call(&self, tool: &McpTool, arguments: &str) -> Result<String, String> {
        let Some(server) = self.server(&tool.server) else {
            return Err(format!("no MCP server `{}` is configured", tool.server));
        };
        let arguments = if arguments.trim().is_empty() {
            None
        } else {
            Some(
                serde_json::from_str::<Value>(arguments)
                    .map_err(|err| format!("invalid arguments for {}: {err}", tool.qualified))?,
            )
        };
        server.call(&tool.name, arguments).await
    }

    /// Names of the servers started in this session and running now.
    pub async fn running(&self) -> Vec<String> {
        let mut names = Vec::new();
        for server in &self.servers {
            if server.running().await {
                names.push(server.config.name.clone());
            }
        }
        names
    }

    /// What the user should hear about since the last call: starts, crashes, tools left out.
    pub fn take_notices(&self) -> Vec<(String, String)> {
        self.servers
            .iter()
            .flat_map(|server| {
                let name = server.config.name.clone();
                server
                    .take_notices()
                    .into_iter()
                    .map(move |notice| (name.clone(), notice))
            })
            .collect()
    }

    /// Stops every server for good, killing their process trees.
    pub async fn stop(&self) {
        let mut tasks = tokio::task::JoinSet::new();
        for server in &self.servers {
            let server = Arc::clone(server);
            tasks.spawn(async move { server.stop().await });
        }
        while tasks.join_next().await.is_some() {}
    }
}
