//! What the model sees of an MCP tool: the name `mcp__<server>__<tool>` and the server's JSON
//! schema, checked against what the model providers accept. A tool that fails a check is not
//! offered, and the reason becomes a notice; a description that is too long is shortened.

use arbor_protocol::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ServerConfig;

/// Every MCP tool's name starts with this.
pub const TOOL_PREFIX: &str = "mcp__";
/// Separates the server from the tool in a name.
pub const SEPARATOR: &str = "__";
/// The longest function name the providers accept (`^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME_BYTES: usize = 64;
/// Longest description offered; longer ones are cut (some providers refuse more).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Largest input schema offered, serialised; a bigger one costs every request its size.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;

/// One tool as its server lists it (the part arbor uses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedTool {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    /// The server marks it read-only (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// One MCP tool as agents are offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    pub server: String,
    /// The server's own name for it.
    pub name: String,
    /// `mcp__<server>__<tool>`: the name the model calls.
    pub qualified: String,
    pub spec: ToolSpec,
    pub read_only: bool,
}

/// `mcp__<server>__<tool>`.
pub fn qualified(server: &str, tool: &str) -> String {
    format!("{TOOL_PREFIX}{server}{SEPARATOR}{tool}")
}

/// Whether a tool name is an MCP tool's.
pub fn is_mcp(name: &str) -> bool {
    name.starts_with(TOOL_PREFIX)
}

/// The server and tool a qualified name names (server names never contain `__`).
pub fn split(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(TOOL_PREFIX)?;
    let (server, tool) = rest.split_once(SEPARATOR)?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// The tool as offered to agents: `Ok(None)` when the server's filters leave it out, `Err`
/// with a notice when it cannot be offered (its name or its schema would be refused).
pub fn offer(server: &ServerConfig, tool: &ListedTool) -> Result<Option<McpTool>, String> {
    if !server.offers(&tool.name) {
        return Ok(None);
    }
    let name = qualified(&server.name, &tool.name);
    let refuse = |why: String| format!("tool `{}` is not offered: {why}", tool.name);
    if !tool
        .name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(refuse(
            "its name has characters model providers refuse (only letters, digits, `_` and `-`)"
                .into(),
        ));
    }
    if name.len() > MAX_TOOL_NAME_BYTES {
        return Err(refuse(format!(
            "`{name}` is longer than the {MAX_TOOL_NAME_BYTES} bytes model providers accept"
        )));
    }
    check_schema(&tool.input_schema).map_err(|why| refuse(format!("its input schema {why}")))?;
    let description = match tool.description.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => shorten(text),
        _ => format!("Tool `{}` of the MCP server `{}`.", tool.name, server.name),
    };
    Ok(Some(McpTool {
        server: server.name.clone(),
        name: tool.name.clone(),
        qualified: name.clone(),
        spec: ToolSpec {
            name,
            description,
            parameters: tool.input_schema.clone(),
        },
        read_only: tool.read_only,
    }))
}

/// An input schema the providers take: one JSON object schema (`"type": "object"`), with
/// `properties` an object and `required` a list of names, within [`MAX_SCHEMA_BYTES`].
fn check_schema(schema: &Value) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        return Err("is not a JSON object".into());
    };
    match object.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => return Err(format!("has type {other}, not \"object\"")),
        None => return Err("has no `\"type\": \"object\"`".into()),
    }
    if let Some(properties) = object.get("properties")
        && !properties.is_object()
    {
        return Err("has `properties` that is not an object".into());
    }
    if let Some(required) = object.get("required") {
        let names = required
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string));
        if !names {
            return Err("has `required` that is not a list of names".into());
        }
    }
    let size = serde_json::to_string(schema).map_or(usize::MAX, |text| text.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "is {size} bytes, more than the {MAX_SCHEMA_BYTES} arbor offers"
        ));
    }
    Ok(())
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_string();
    }
    let mut short: String = text.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RawServer, ServerConfig};
    use serde_json::json;

    fn server(raw: RawServer) -> ServerConfig {
        let raw = RawServer {
            command: Some("x".into()),
            ..raw
        };
        ServerConfig::from_raw("fs", &raw)
            .expect("valid")
            .expect("enabled")
    }

    fn tool(name: &str, schema: Value) -> ListedTool {
        ListedTool {
            name: name.into(),
            description: Some("reads".into()),
            input_schema: schema,
            read_only: true,
        }
    }

    /// The tool `name` with `schema`: `offered`, `filtered` or the notice.
    fn check(name: &str, schema: Value, expect: &str) {
        let got = match offer(&server(RawServer::default()), &tool(name, schema)) {
            Ok(Some(_)) => "offered".to_string(),
            Ok(None) => "filtered".to_string(),
            Err(notice) => notice,
        };
        assert_eq!(got, expect, "{name}");
    }

    #[test]
    fn names_split_back_into_server_and_tool() {
        assert_eq!(qualified("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(split("mcp__fs__read_file"), Some(("fs", "read_file")));
        assert_eq!(split("mcp__fs__a__b"), Some(("fs", "a__b")));
        assert_eq!(split("mcp__fs"), None);
        assert_eq!(split("exec_command"), None);
    }

    #[test]
    fn schemas_and_names_the_providers_refuse_are_not_offered() {
        let object = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        check("read_file", object.clone(), "offered");
        check("get-sum", json!({"type": "object"}), "offered");
        check(
            "a.b",
            object.clone(),
            "tool `a.b` is not offered: its name has characters model providers refuse (only letters, digits, `_` and `-`)",
        );
        check(
            &"x".repeat(60),
            object,
            &format!(
                "tool `{}` is not offered: `mcp__fs__{}` is longer than the 64 bytes model providers accept",
                "x".repeat(60),
                "x".repeat(60)
            ),
        );
        check(
            "t",
            json!({"type": "array"}),
            "tool `t` is not offered: its input schema has type \"array\", not \"object\"",
        );
        check(
            "t",
            json!({"properties": {}}),
            "tool `t` is not offered: its input schema has no `\"type\": \"object\"`",
        );
        check(
            "t",
            json!({"type": "object", "required": "path"}),
            "tool `t` is not offered: its input schema has `required` that is not a list of names",
        );
        let huge = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
        let notice = offer(&server(RawServer::default()), &tool("t", huge)).expect_err("too big");
        assert!(
            notice.contains("more than the 32768 arbor offers"),
            "{notice}"
        );
    }

    #[test]
    fn filters_leave_tools_out_quietly_and_long_descriptions_are_cut() {
        let filtered = server(RawServer {
            disabled_tools: Some(vec!["w".into()]),
            ..RawServer::default()
        });
        let schema = json!({"type": "object"});
        assert_eq!(offer(&filtered, &tool("w", schema.clone())), Ok(None));
        let mut long = tool("r", schema);
        long.description = Some("d".repeat(5000));
        let offered = offer(&filtered, &long).expect("ok").expect("offered");
        assert_eq!(
            offered.spec.description.chars().count(),
            MAX_DESCRIPTION_CHARS
        );
        assert!(offered.read_only);
        assert_eq!(offered.qualified, "mcp__fs__r");
    }
}
