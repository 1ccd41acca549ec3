//! The command policy (behaviour §7, §8): prefix rules judge each plain command of an
//! `exec_command` string, the strictest match wins; a string that is not plain is judged whole.
//! `apply_patch` and MCP tool calls are judged as pseudo-commands (`mcp.rs`).
//!
//! Rules come from `$ARBOR_HOME/rules/*.toml`, then `<workspace>/.arbor/rules/*.toml`, each
//! directory in sorted file-name order (see `docs/sandbox.md` for the format). The policy only
//! judges; what a decision means under an approval policy is the runtime's business.

mod gitcheck;
mod mcp;
mod readonly;
mod resolve;
mod rules;
mod shell;
#[cfg(test)]
mod tests;
mod trust;
#[cfg(test)]
mod wrapper_tests;

use std::path::Path;

use crate::ToolError;
use serde::Serialize;

pub use gitcheck::{GIT_HARDENING_ENV, git_config_risk};
pub use rules::{Decision, PatternToken, Rule};
pub use trust::{TRUST_TABLE, trust_workspace, trusted_workspaces, workspace_trusted};

/// The loaded rules, in load order.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// What loading left out, one sentence each (allow rules of an untrusted workspace).
    notices: Vec<String>,
}

/// How one command string was judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evaluation {
    /// The command string as given.
    pub command: String,
    /// Whether everything it runs could be followed: it parsed as plain words and operators
    /// (nested `sh -c` scripts included), and so did every command line found inside a wrapper,
    /// `eval` or `git`.
    pub parsed: bool,
    /// The plain commands, nested shell scripts replaced by their own commands, then the
    /// commands found inside wrappers, `eval` and `git`, then the rough words of what could not
    /// be followed; when the string did not parse, one entry: its rough words (see
    /// `docs/sandbox.md`).
    pub commands: Vec<Vec<String>>,
    /// Every rule that matched, with the command it matched.
    pub matches: Vec<RuleMatch>,
    /// The strictest decision among the matches; `None` when no rule matched.
    pub decision: Option<Decision>,
}

/// One rule matching one plain command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleMatch {
    /// Index into [`Evaluation::commands`].
    pub command: usize,
    pub rule: Rule,
}

impl Evaluation {
    /// The justification of the first match with the winning decision, if it has one.
    pub fn justification(&self) -> Option<&str> {
        let decision = self.decision?;
        self.matches
            .iter()
            .find(|m| m.rule.decision == decision)
            .and_then(|m| m.rule.justification.as_deref())
    }
}

impl Policy {
    /// A policy with no rules: nothing matches.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A policy of the given rules.
    pub fn new(rules: Vec<Rule>) -> Self {
        Self {
            rules,
            notices: Vec::new(),
        }
    }

    /// Loads `home/rules/*.toml` then `workspace/.arbor/rules/*.toml`. Missing directories are
    /// fine; a bad file (syntax, unknown field, bad value, disagreeing example) fails the load.
    /// Unless the user trusted the workspace (`arbor trust`), its rules may only make the policy
    /// stricter: its `allow` rules are left out, each file saying so in [`Policy::notices`].
    pub fn load(home: &Path, workspace: &Path) -> Result<Self, ToolError> {
        let mut policy = Self::empty();
        for path in rules::rule_files(&home.join("rules"))? {
            let text = rules::read_rules_file(&path)?;
            policy.add_file(&path, &text)?;
        }
        let trusted = trust::workspace_trusted(home, workspace);
        for path in rules::rule_files(&workspace.join(".arbor").join("rules"))? {
            let text = rules::read_rules_file(&path)?;
            let before = policy.rules.len();
            policy.add_file(&path, &text)?;
            if trusted {
                continue;
            }
            let mut kept = policy.rules.split_off(before);
            let total = kept.len();
            kept.retain(|rule| rule.decision != Decision::Allow);
            let ignored = total - kept.len();
            policy.rules.extend(kept);
            if ignored > 0 {
                policy.notices.push(format!(
                    "notice: ignoring {ignored} allow rule{} in {}: the workspace is not \
                     trusted, so its rules may only make the policy stricter (run `arbor trust \
                     {}` to trust it)",
                    if ignored == 1 { "" } else { "s" },
                    path.display(),
                    workspace.display()
                ));
            }
        }
        Ok(policy)
    }

    /// What loading left out, one sentence each.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// Parses the text of one rules file (`path` names it in errors) and appends its rules.
    pub fn add_file(&mut self, path: &Path, text: &str) -> Result<(), ToolError> {
        let rules = rules::parse_rules_file(path, text, |rule, example| {
            !judge(std::slice::from_ref(rule), example)
                .matches
                .is_empty()
                || mcp::matches_tool(rule, example.trim())
        })?;
        self.rules.extend(rules);
        Ok(())
    }

    /// Every rule, in load order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Judges `cmd` (the text `exec_command` runs with `bash -c`): each plain command against
    /// every rule, the strictest match winning; a string that is not plain whole, more strictly.
    pub fn evaluate(&self, cmd: &str) -> Evaluation {
        judge(&self.rules, cmd)
    }
}

impl Policy {
    /// Judges an `apply_patch` that writes `paths`, as one pseudo-command `apply_patch PATH`
    /// per path: a rule `pattern = ["apply_patch", "docs/notes.md"]` names one file,
    /// `["apply_patch"]` every patch. Prefix matching, like any plain command.
    pub fn evaluate_patch(&self, paths: &[String]) -> Evaluation {
        let commands: Vec<Vec<String>> = paths
            .iter()
            .map(|path| vec!["apply_patch".to_string(), path.clone()])
            .collect();
        let mut matches = Vec::new();
        for (index, words) in commands.iter().enumerate() {
            for rule in &self.rules {
                if rule.matches_prefix(words) {
                    matches.push(RuleMatch {
                        command: index,
                        rule: rule.clone(),
                    });
                }
            }
        }
        let decision = matches.iter().map(|m| m.rule.decision).max();
        Evaluation {
            command: format!("apply_patch {}", paths.join(" ")),
            parsed: true,
            commands,
            matches,
            decision,
        }
    }
}

fn judge(rules: &[Rule], cmd: &str) -> Evaluation {
    // (words, matched at every position)
    let mut judged: Vec<(Vec<String>, bool)> = Vec::new();
    let parsed = match shell::parse(cmd) {
        Some(script) => {
            let plain = script.flatten();
            let found = resolve::resolve(&plain);
            for words in plain.into_iter().chain(found.commands) {
                let anywhere = resolve::is_wrapper(&words);
                judged.push((words, anywhere));
            }
            let complete = found.opaque.is_empty();
            judged.extend(found.opaque.into_iter().map(|words| (words, true)));
            complete
        }
        None => {
            judged.push((shell::rough_words(cmd), true));
            false
        }
    };
    let mut matches = Vec::new();
    for (index, (words, anywhere)) in judged.iter().enumerate() {
        for rule in rules {
            let hit = if *anywhere {
                rule.matches_anywhere(words)
            } else {
                rule.matches_prefix(words)
            };
            if hit {
                matches.push(RuleMatch {
                    command: index,
                    rule: rule.clone(),
                });
            }
        }
    }
    let decision = matches.iter().map(|m| m.rule.decision).max();
    Evaluation {
        command: cmd.to_string(),
        parsed,
        commands: judged.into_iter().map(|(words, _)| words).collect(),
        matches,
        decision,
    }
}

/// Whether the string parsed and every one of its plain commands is on the built-in list of
/// known read-only commands (with arguments that keep it read-only).
pub fn is_known_read_only(evaluation: &Evaluation) -> bool {
    evaluation.parsed
        && !evaluation.commands.is_empty()
        && evaluation
            .commands
            .iter()
            .all(|words| readonly::is_read_only_command(words))
}

/// The canonical text of a command, for caching approvals: a plain string re-rendered with
/// single spaces and minimal quoting (`git   status` and `'git' status` are the same command);
/// a string that is not plain, trimmed and otherwise as given.
pub fn canonical(cmd: &str) -> String {
    match shell::parse(cmd) {
        Some(script) => shell::render(&script),
        None => cmd.trim().to_string(),
    }
}
