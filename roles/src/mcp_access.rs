//! Which MCP tools (`mcp__<server>__<tool>`) an agent may use. The tools are not known when an
//! agent is spawned (servers start later), so capabilities keep one [`McpGate`] per role on
//! the way down from the root, and a tool is offered only if every gate admits it: a child can
//! never see an MCP tool its parent cannot.
//!
//! A role's gate: when its `tools` allow-list names `mcp__…` patterns (globs, `*` any run),
//! exactly the tools they match; otherwise every tool, except that an agent running read-only
//! (the explorer, the guardian, any role with `sandbox_mode = "read-only"`) gets only the tools
//! their server marks read-only.

/// Every MCP tool name and allow-list pattern starts with this.
pub const MCP_PREFIX: &str = "mcp__";

/// One role's say over MCP tools.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McpGate {
    /// The role's `mcp__…` patterns; `None` when its allow-list names none.
    pub patterns: Option<Vec<String>>,
    /// The agent runs read-only: without patterns, only tools marked read-only pass.
    pub read_only: bool,
}

impl McpGate {
    /// Whether the gate lets the tool `name` through (`read_only`: its server marks it so).
    pub fn admits(&self, name: &str, read_only: bool) -> bool {
        match &self.patterns {
            Some(patterns) => patterns.iter().any(|pattern| glob(pattern, name)),
            None => !self.read_only || read_only,
        }
    }

    /// Whether some tool of `server` could pass (so its listing is worth having).
    pub fn may_admit_server(&self, server: &str) -> bool {
        let Some(patterns) = &self.patterns else {
            return true;
        };
        let prefix = format!("{MCP_PREFIX}{server}__");
        patterns.iter().any(|pattern| {
            let literal = pattern.split('*').next().unwrap_or_default();
            prefix.starts_with(literal) || literal.starts_with(&prefix)
        })
    }
}

/// Checks an `mcp__…` allow-list entry: `mcp__` then letters, digits, `_`, `-` or `*`.
pub(crate) fn check_pattern(pattern: &str) -> Result<(), String> {
    let rest = pattern.strip_prefix(MCP_PREFIX).unwrap_or_default();
    if rest.is_empty() {
        return Err(format!(
            "MCP pattern `{pattern}` names no server (write `mcp__SERVER__TOOL`, `mcp__SERVER__*` or `mcp__*`)"
        ));
    }
    if !rest
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'*'))
    {
        return Err(format!(
            "MCP pattern `{pattern}` may use only letters, digits, `_`, `-` and `*`"
        ));
    }
    Ok(())
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
pub fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("mcp__fs__*", "mcp__fs__read_file"));
        assert!(glob("mcp__*", "mcp__x__y"));
        assert!(glob("mcp__fs__read_file", "mcp__fs__read_file"));
        assert!(!glob("mcp__fs__read_file", "mcp__fs__read_file2"));
        assert!(glob("mcp__*__read*", "mcp__fs__read_file"));
        assert!(!glob("mcp__fs__*", "mcp__fsx__read"));
        assert!(glob("mcp__a*a", "mcp__aa"));
        assert!(!glob("mcp__a*a", "mcp__a"));
    }

    #[test]
    fn gates() {
        let open = McpGate {
            patterns: None,
            read_only: false,
        };
        assert!(open.admits("mcp__fs__write_file", false));
        let read_only = McpGate {
            patterns: None,
            read_only: true,
        };
        assert!(read_only.admits("mcp__fs__read_file", true));
        assert!(!read_only.admits("mcp__fs__write_file", false));
        let listed = McpGate {
            patterns: Some(vec!["mcp__fs__write_file".into()]),
            read_only: true,
        };
        assert!(listed.admits("mcp__fs__write_file", false));
        assert!(!listed.admits("mcp__fs__read_file", true));
        assert!(listed.may_admit_server("fs"));
        assert!(!listed.may_admit_server("web"));
        let any = McpGate {
            patterns: Some(vec!["mcp__*".into()]),
            read_only: false,
        };
        assert!(any.may_admit_server("web"));
    }

    #[test]
    fn patterns_are_checked() {
        assert!(check_pattern("mcp__fs__*").is_ok());
        assert!(check_pattern("mcp__").is_err());
        assert!(check_pattern("mcp__fs.x").is_err());
    }
}
