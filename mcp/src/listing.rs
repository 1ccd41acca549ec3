//! A server's tools as a session offers them: every listed tool that passes the server's
//! filters and the providers' checks, and a notice for each that does not.

use serde_json::Value;

use crate::config::ServerConfig;
use crate::naming::{self, ListedTool, McpTool};

/// A server's tools as this session offers them, with what could not be offered.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub tools: Vec<McpTool>,
    /// One sentence per tool left out (bad schema, bad name) or filter that names nothing.
    pub notices: Vec<String>,
    /// Why the server could not be listed (it did not start).
    pub error: Option<String>,
    /// The tools came from the cache: the server has not been started for them.
    pub cached: bool,
}

/// Offers every listed tool that passes the filters and the checks; the rest become notices.
pub(crate) fn offer_all(config: &ServerConfig, listed: &[ListedTool]) -> Listing {
    let mut listing = Listing::default();
    for tool in listed {
        match naming::offer(config, tool) {
            Ok(Some(tool)) => listing.tools.push(tool),
            Ok(None) => {}
            Err(notice) => listing
                .notices
                .push(format!("mcp server `{}`: {notice}", config.name)),
        }
    }
    for name in config.enabled_tools.iter().flatten() {
        if !listed.iter().any(|tool| &tool.name == name) {
            listing.notices.push(format!(
                "mcp server `{}`: enabled_tools names `{name}`, which the server does not offer",
                config.name
            ));
        }
    }
    listing
}

pub(crate) fn listed_tool(tool: &rmcp::model::Tool) -> ListedTool {
    ListedTool {
        name: tool.name.to_string(),
        description: tool.description.as_ref().map(ToString::to_string),
        input_schema: Value::Object((*tool.input_schema).clone()),
        read_only: tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
    }
}
