//! MCP tool calls under the command policy: a call is judged as the one-word pseudo-command
//! `mcp__<server>__<tool>`. A rule matches it when its pattern is that one word, or one word
//! with `*` (any run of characters): `pattern = ["mcp__fs__write_file"]` names one tool,
//! `["mcp__fs__*"]` every tool of the server `fs`. The strictest match wins, as for commands.

use super::rules::{PatternToken, Rule};
use super::{Evaluation, Policy, RuleMatch};

impl Policy {
    /// Judges a call of the MCP tool `tool` (its qualified name).
    pub fn evaluate_mcp(&self, tool: &str) -> Evaluation {
        let matches: Vec<RuleMatch> = self
            .rules()
            .iter()
            .filter(|rule| matches_tool(rule, tool))
            .map(|rule| RuleMatch {
                command: 0,
                rule: rule.clone(),
            })
            .collect();
        let decision = matches.iter().map(|m| m.rule.decision).max();
        Evaluation {
            command: tool.to_string(),
            parsed: true,
            commands: vec![vec![tool.to_string()]],
            matches,
            decision,
        }
    }
}

/// Whether `rule` names the MCP tool `tool`.
pub(super) fn matches_tool(rule: &Rule, tool: &str) -> bool {
    let [token] = rule.pattern.as_slice() else {
        return false;
    };
    match token {
        PatternToken::Word(word) => glob(word, tool),
        PatternToken::AnyOf(words) => words.iter().any(|word| glob(word, tool)),
    }
}

/// `*` matches any run of characters; everything else itself.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let Some((first, rest)) = parts.split_first() else {
        return false;
    };
    let Some(mut left) = name.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Decision;

    #[test]
    fn rules_name_one_tool_or_a_servers_tools() {
        let mut policy = Policy::empty();
        policy
            .add_file(
                Path::new("mcp.toml"),
                "[[rule]]\npattern = [\"mcp__fs__write_file\"]\ndecision = \"allow\"\n\
                 match = [\"mcp__fs__write_file\"]\nnot_match = [\"mcp__fs__write_file_2\"]\n\n\
                 [[rule]]\npattern = [\"mcp__web__*\"]\ndecision = \"forbidden\"\n\
                 match = [\"mcp__web__fetch\"]\n",
            )
            .expect("rules load");
        let decision = |tool: &str| policy.evaluate_mcp(tool).decision;
        assert_eq!(decision("mcp__fs__write_file"), Some(Decision::Allow));
        assert_eq!(decision("mcp__fs__edit_file"), None);
        assert_eq!(decision("mcp__web__fetch"), Some(Decision::Forbidden));
        assert_eq!(decision("mcp__webx__fetch"), None);
    }
}
