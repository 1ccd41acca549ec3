//! `arbor mcp list [--json]`: every configured server is started (all at once), asked for its
//! tools and stopped again; the listing shows what agents would be offered and why anything is
//! left out. Exit 0 even when a server does not start (that is what the listing reports); a
//! configuration that does not parse is exit 2.

use std::io::Write;
use std::path::Path;

use arbor_mcp::{McpHub, Transport};
use arbor_protocol::text::visible;
use serde_json::{Value, json};

use crate::args::McpListArgs;
use crate::error::CliError;
use crate::output::out;

pub async fn list(home: &Path, args: &McpListArgs) -> Result<u8, CliError> {
    let workspace = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|err| CliError::usage(format!("cannot read the current directory: {err}")))?,
    };
    let workspace = workspace
        .canonicalize()
        .map_err(|err| CliError::usage(format!("--cwd {}: {err}", workspace.display())))?;
    let file = crate::config::load(home, &workspace)?;
    let servers = arbor_mcp::servers_from_raw(&file.mcp_servers)
        .map_err(|message| CliError::usage(format!("config: {message}")))?;
    // Every server is started (that is what the listing is for), and its tools cached.
    let cache = arbor_mcp::ToolCache::in_home(home);
    let hub = McpHub::new(
        servers,
        arbor_mcp::ServerDirs::new(workspace, home),
        Some(cache),
        None,
    );
    let listings = hub.listings(|_| true).await;
    hub.stop().await;
    let entries: Vec<Value> = hub
        .configs()
        .zip(&listings)
        .map(|(config, (_, listing))| {
            let (transport, reached) = match &config.transport {
                Transport::Stdio { .. } => ("stdio", json!({"command": config.describe()})),
                Transport::Http { url, .. } => ("http", json!({"url": url})),
            };
            let tools: Vec<Value> = listing
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.qualified,
                        "tool": tool.name,
                        "read_only": tool.read_only,
                        "description": tool.spec.description,
                    })
                })
                .collect();
            let mut entry = json!({
                "name": config.name,
                "transport": transport,
                "started": listing.error.is_none(),
                "error": listing.error,
                "tools": tools,
                "notices": listing.notices,
            });
            if let (Some(entry), Some(reached)) = (entry.as_object_mut(), reached.as_object()) {
                entry.extend(reached.clone());
            }
            entry
        })
        .collect();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let text = serde_json::to_string_pretty(&entries).unwrap_or_default();
        out(writeln!(stdout, "{text}"))?;
        return Ok(0);
    }
    if entries.is_empty() {
        out(writeln!(
            stdout,
            "no MCP servers configured: add [mcp_servers.NAME] to config.toml (see docs/mcp.md)"
        ))?;
        return Ok(0);
    }
    for entry in &entries {
        let reached = entry["command"].as_str().or(entry["url"].as_str());
        let state = match entry["error"].as_str() {
            Some(error) => format!("did not start: {error}"),
            None => format!(
                "started, {} tools",
                entry["tools"].as_array().map_or(0, Vec::len)
            ),
        };
        let line = format!(
            "{} ({} {}): {state}",
            entry["name"].as_str().unwrap_or_default(),
            entry["transport"].as_str().unwrap_or_default(),
            reached.unwrap_or_default()
        );
        // What a server says of itself (errors, tool names, descriptions) is shown, not obeyed.
        out(writeln!(stdout, "{}", visible(&line)))?;
        for tool in entry["tools"].as_array().into_iter().flatten() {
            let description = tool["description"].as_str().unwrap_or_default();
            let first_line = description.lines().next().unwrap_or_default();
            let line = format!(
                "  {:<40} {:<10} {}",
                tool["name"].as_str().unwrap_or_default(),
                if tool["read_only"] == true {
                    "read-only"
                } else {
                    ""
                },
                arbor_protocol::text::truncate_middle(first_line, 100)
            );
            out(writeln!(stdout, "{}", visible(&line)))?;
        }
        for notice in entry["notices"].as_array().into_iter().flatten() {
            out(writeln!(
                stdout,
                "  notice: {}",
                visible(notice.as_str().unwrap_or_default())
            ))?;
        }
    }
    Ok(0)
}
