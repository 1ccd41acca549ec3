//! Loading `--script FILE`: the script's shape, then every call against the tools arbor
//! offers (their specs are the orchestrator's) and the MCP servers the configuration names,
//! so a misspelt tool or argument is a usage error before anything runs.

use std::path::Path;

use arbor_model::{ScriptedModel, ToolCatalog};

use crate::config::FileConfig;
use crate::error::CliError;

/// The scripted model of `path`, checked.
pub fn load(path: &Path, file: &FileConfig) -> Result<ScriptedModel, CliError> {
    let specs = arbor_orchestrator::tool_specs("");
    // An MCP tool's name is known once its server runs: a configured server is enough here.
    let configured = |name: &str| {
        arbor_mcp::naming::split(name)
            .is_some_and(|(server, _)| file.mcp_servers.contains_key(server))
    };
    let tools = ToolCatalog {
        specs: &specs,
        other: &configured,
    };
    ScriptedModel::load_checked(path, &tools).map_err(|err| CliError::usage(err.to_string()))
}
