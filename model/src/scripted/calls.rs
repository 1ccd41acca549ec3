//! A script's calls checked against the tools they name: a tool arbor does not offer, or an
//! argument its schema does not name, is a mistake found before anything runs, reported with
//! its JSON path. The tools come from the caller (the orchestrator owns their specs); the
//! script's shape is already valid when this runs.

use arbor_protocol::ToolSpec;
use serde_json::Value;

use super::script::{Invalid, field, index, one_of, quote};

/// The tools a script's calls may name.
pub struct ToolCatalog<'a> {
    /// Every built-in tool, with its schema.
    pub specs: &'a [ToolSpec],
    /// Names checked elsewhere, passed as they are: the tools of a configured MCP server,
    /// known only once the server runs.
    pub other: &'a dyn Fn(&str) -> bool,
}

impl std::fmt::Debug for ToolCatalog<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalog")
            .field("specs", &self.specs.len())
            .finish_non_exhaustive()
    }
}

/// Checks every call of a script whose shape is valid.
pub(crate) fn check(script: &Value, tools: &ToolCatalog<'_>) -> Result<(), Invalid> {
    let agents = script["agents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, entry) in agents.iter().enumerate() {
        let at = index(&field("$", "agents"), i);
        let responses = entry["responses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, response) in responses.iter().enumerate() {
            let at = index(&field(&at, "responses"), j);
            let (items, at) = match response {
                Value::Array(items) => (items.as_slice(), at),
                other => (
                    other["items"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default(),
                    field(&at, "items"),
                ),
            };
            for (k, item) in items.iter().enumerate() {
                if let Some(name) = item["call"].as_str() {
                    check_call(name, &item["args"], &index(&at, k), tools)?;
                }
            }
        }
    }
    Ok(())
}

fn check_call(name: &str, args: &Value, at: &str, tools: &ToolCatalog<'_>) -> Result<(), Invalid> {
    let Some(spec) = tools.specs.iter().find(|spec| spec.name == name) else {
        if (tools.other)(name) {
            return Ok(());
        }
        let names: Vec<&str> = tools.specs.iter().map(|spec| spec.name.as_str()).collect();
        return Err(Invalid {
            at: field(at, "call"),
            reason: format!(
                "unknown tool {}; expected {}, or mcp__<server>__<tool> of a configured MCP server",
                quote(name),
                one_of(&names)
            ),
        });
    };
    let known: Vec<&str> = spec.parameters["properties"]
        .as_object()
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let Some(args) = args.as_object() else {
        return Ok(());
    };
    match args.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => Err(Invalid {
            at: field(&field(at, "args"), key),
            reason: match known.is_empty() {
                true => format!("unknown argument {}: {name} takes none", quote(key)),
                false => format!(
                    "unknown argument {} of {name}; expected {}",
                    quote(key),
                    one_of(&known)
                ),
            },
        }),
    }
}
