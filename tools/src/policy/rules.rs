//! Rules files: TOML text to validated prefix [`Rule`]s, with errors naming file, rule and field.
//!
//! ```toml
//! [[rule]]
//! pattern = ["git", ["push", "fetch"]]   # a token prefix; a list is a set of alternatives
//! decision = "prompt"                     # allow | prompt | forbidden
//! justification = "talks to the remote"   # optional
//! match = ["git push origin main"]        # optional examples that must match
//! not_match = ["git status"]              # optional examples that must not match
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::shell::basename;
use crate::ToolError;

/// What a matching rule asks for. Ordered from the mildest to the strictest, so the strictest
/// of several matches is their maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run without asking.
    Allow,
    /// Ask for approval first.
    Prompt,
    /// Never run.
    Forbidden,
}

impl Decision {
    /// The name used in rules files.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Prompt => "prompt",
            Decision::Forbidden => "forbidden",
        }
    }

    /// Parses the name used in rules files.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Decision::Allow),
            "prompt" => Some(Decision::Prompt),
            "forbidden" => Some(Decision::Forbidden),
            _ => None,
        }
    }
}

/// One element of a pattern: a word, or a set of alternative words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PatternToken {
    Word(String),
    AnyOf(Vec<String>),
}

impl PatternToken {
    /// Whether `word` is this element. The first element also matches a command given by path
    /// (`/usr/bin/git` matches `git`).
    fn matches(&self, word: &str, first: bool) -> bool {
        let is = |w: &String| w == word || (first && word.contains('/') && w == basename(word));
        match self {
            PatternToken::Word(w) => is(w),
            PatternToken::AnyOf(ws) => ws.iter().any(is),
        }
    }
}

/// A prefix rule from a rules file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// A token prefix; never empty.
    pub pattern: Vec<PatternToken>,
    pub decision: Decision,
    pub justification: Option<String>,
    /// The file the rule comes from.
    pub source: PathBuf,
    /// The rule's position in its file, from 1.
    pub index: usize,
}

impl Rule {
    /// A rule made in code (tests, built-in defaults); its source is `built-in`.
    pub fn new(pattern: Vec<PatternToken>, decision: Decision) -> Self {
        Self {
            pattern,
            decision,
            justification: None,
            source: PathBuf::from("built-in"),
            index: 0,
        }
    }

    /// Whether the words of one plain command start with the pattern.
    pub fn matches_prefix(&self, words: &[String]) -> bool {
        self.matches_at(words, 0)
    }

    /// Whether the pattern occurs anywhere in `words` (how a string that is not plain, or a
    /// command run through a wrapper such as `env` or `xargs`, is judged).
    pub fn matches_anywhere(&self, words: &[String]) -> bool {
        (0..words.len()).any(|at| self.matches_at(words, at))
    }

    fn matches_at(&self, words: &[String], at: usize) -> bool {
        let Some(words) = words.get(at..) else {
            return false;
        };
        words.len() >= self.pattern.len()
            && self
                .pattern
                .iter()
                .zip(words)
                .enumerate()
                .all(|(i, (token, word))| token.matches(word, i == 0))
    }
}

/// The keys a rule may have.
const RULE_FIELDS: &[&str] = &["pattern", "decision", "justification", "match", "not_match"];

/// Parses a rules file and checks each rule against its examples with `matches`, which says
/// whether a rule matches an example command the way the policy would.
pub(crate) fn parse_rules_file(
    path: &Path,
    text: &str,
    matches: impl Fn(&Rule, &str) -> bool,
) -> Result<Vec<Rule>, ToolError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| ToolError::RulesSyntax {
        path: path.to_path_buf(),
        message: e.message().trim_end().to_string(),
    })?;
    let file_error = |message: String| ToolError::RulesFile {
        path: path.to_path_buf(),
        message,
    };
    if let Some(key) = table.keys().find(|k| k.as_str() != "rule") {
        return Err(file_error(format!(
            "unknown field `{key}`, expected `rule`"
        )));
    }
    let entries = match table.remove("rule") {
        None => return Ok(Vec::new()),
        Some(toml::Value::Array(entries)) => entries,
        Some(_) => return Err(file_error("field `rule`: expected [[rule]] tables".into())),
    };
    let mut rules = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let index = i + 1;
        let fail = |message: String| ToolError::Rule {
            path: path.to_path_buf(),
            index,
            message,
        };
        let toml::Value::Table(fields) = entry else {
            return Err(fail("expected a table".into()));
        };
        let (rule, examples) = parse_rule(path, index, fields).map_err(fail)?;
        for example in &examples.must_match {
            if !matches(&rule, example) {
                return Err(fail(format!(
                    "example \"{example}\" should match but does not"
                )));
            }
        }
        for example in &examples.must_not_match {
            if matches(&rule, example) {
                return Err(fail(format!(
                    "example \"{example}\" should not match but does"
                )));
            }
        }
        rules.push(rule);
    }
    Ok(rules)
}

struct Examples {
    must_match: Vec<String>,
    must_not_match: Vec<String>,
}

fn parse_rule(
    path: &Path,
    index: usize,
    mut fields: toml::Table,
) -> Result<(Rule, Examples), String> {
    if let Some(key) = fields.keys().find(|k| !RULE_FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown field `{key}`, expected one of {}",
            RULE_FIELDS.join(", ")
        ));
    }
    let pattern = match fields.remove("pattern") {
        None => return Err("missing field `pattern`".into()),
        Some(value) => parse_pattern(value).map_err(|m| format!("field `pattern`: {m}"))?,
    };
    let decision = match fields.remove("decision") {
        None => return Err("missing field `decision`".into()),
        Some(toml::Value::String(text)) => Decision::parse(&text).ok_or_else(|| {
            format!("field `decision`: expected one of allow, prompt, forbidden, got \"{text}\"")
        })?,
        Some(_) => return Err("field `decision`: expected a string".into()),
    };
    let justification = match fields.remove("justification") {
        None => None,
        Some(toml::Value::String(text)) => Some(text),
        Some(_) => return Err("field `justification`: expected a string".into()),
    };
    let must_match = strings(fields.remove("match")).map_err(|m| format!("field `match`: {m}"))?;
    let must_not_match =
        strings(fields.remove("not_match")).map_err(|m| format!("field `not_match`: {m}"))?;
    let rule = Rule {
        pattern,
        decision,
        justification,
        source: path.to_path_buf(),
        index,
    };
    Ok((
        rule,
        Examples {
            must_match,
            must_not_match,
        },
    ))
}

fn parse_pattern(value: toml::Value) -> Result<Vec<PatternToken>, String> {
    let toml::Value::Array(elements) = value else {
        return Err("expected a list of words".into());
    };
    if elements.is_empty() {
        return Err("must not be empty".into());
    }
    let word = |value: toml::Value| match value {
        toml::Value::String(w) if !w.is_empty() => Ok(w),
        toml::Value::String(_) => Err("words must not be empty".to_string()),
        _ => Err("expected a word or a list of alternative words".to_string()),
    };
    elements
        .into_iter()
        .map(|element| match element {
            toml::Value::Array(alternatives) if alternatives.is_empty() => {
                Err("a list of alternatives must not be empty".to_string())
            }
            toml::Value::Array(alternatives) => alternatives
                .into_iter()
                .map(word)
                .collect::<Result<Vec<_>, _>>()
                .map(PatternToken::AnyOf),
            other => word(other).map(PatternToken::Word),
        })
        .collect()
}

fn strings(value: Option<toml::Value>) -> Result<Vec<String>, String> {
    match value {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                toml::Value::String(s) => Ok(s),
                _ => Err("expected a list of strings".to_string()),
            })
            .collect(),
        Some(_) => Err("expected a list of strings".into()),
    }
}

/// The `*.toml` files of `dir` in sorted order; none when it does not exist.
pub(crate) fn rule_files(dir: &Path) -> Result<Vec<PathBuf>, ToolError> {
    let read_dir_error = |source| ToolError::RulesDir {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_dir_error(e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(read_dir_error)?.path();
        if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// Reads one rules file.
pub(crate) fn read_rules_file(path: &Path) -> Result<String, ToolError> {
    fs::read_to_string(path).map_err(|source| ToolError::RulesRead {
        path: path.to_path_buf(),
        source,
    })
}
