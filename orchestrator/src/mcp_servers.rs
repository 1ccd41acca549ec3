//! The session's MCP servers: the hub its agents share (servers started on demand, their tool
//! lists, calls), and which gate chains' servers are listed already. Neither is the session's
//! state: the hub keeps its servers' processes and listings, and the set is a cache that only
//! grows (a chain listed once needs nothing more).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use arbor_mcp::McpHub;
use arbor_roles::McpGate;

use crate::config::RunConfig;

/// The session's MCP servers, and which agents' servers are listed already.
#[derive(Debug)]
pub struct McpServers {
    pub hub: Arc<McpHub>,
    /// Gate chains whose servers are listed: their agents' requests need nothing more. A
    /// cache, filled by whichever turn lists them first.
    prepared: Mutex<HashSet<Vec<McpGate>>>,
}

impl McpServers {
    /// The servers of `config`; those whose tools `cached` holds are offered without starting.
    pub fn new(config: &RunConfig, cached: Option<&arbor_mcp::CachedTools>) -> Self {
        Self {
            hub: Arc::new(McpHub::new(
                config.mcp_servers.clone(),
                arbor_mcp::ServerDirs::new(config.cwd.clone(), &config.home),
                Some(arbor_mcp::ToolCache::in_home(&config.home)),
                cached,
            )),
            prepared: Mutex::new(HashSet::new()),
        }
    }

    /// Whether the servers of `chain` are listed.
    pub fn is_prepared(&self, chain: &[McpGate]) -> bool {
        self.prepared().contains(chain)
    }

    /// The servers of `chain` are listed.
    pub fn mark_prepared(&self, chain: &[McpGate]) {
        self.prepared().insert(chain.to_vec());
    }

    fn prepared(&self) -> std::sync::MutexGuard<'_, HashSet<Vec<McpGate>>> {
        self.prepared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The part of a tool-spec cache key that MCP tools add: the agent's gates.
    pub fn spec_key(&self, chain: &[McpGate]) -> Option<String> {
        (!self.hub.is_empty()).then(|| format!("mcp:{chain:?}"))
    }
}
