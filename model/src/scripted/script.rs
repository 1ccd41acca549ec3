//! The script's shape and its validation: every check happens here, before any request is served,
//! and every problem is reported with the JSON path where it was found.

use arbor_protocol::{AgentPath, Usage};
use serde_json::{Map, Value};

use super::template::{ArgTemplate, Template};
use crate::AgentIdentity;

/// A validated script: entries in the order they are tried.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Script {
    pub(crate) entries: Vec<Entry>,
}

/// One `agents[i]` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) matcher: Matcher,
    pub(crate) responses: Vec<Response>,
    pub(crate) repeat: bool,
}

/// Which agents an entry fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Matcher {
    /// Exactly this path.
    Exact(AgentPath),
    /// Same number of segments, each matching its pattern; `*` stays within one segment.
    Glob(Vec<String>),
    /// Agents with this role.
    Role(String),
}

/// One model response: its items, how long to wait before answering, and the usage it
/// reports (estimated when the script gives none).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Response {
    pub(crate) delay_ms: u64,
    pub(crate) items: Vec<Item>,
    pub(crate) usage: Option<Usage>,
}

/// One output item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Say(Template),
    Call { name: String, args: ArgTemplate },
}

/// A problem in well-formed JSON: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub(crate) at: String,
    pub(crate) reason: String,
}

type Checked<T> = Result<T, Invalid>;

fn invalid<T>(at: &str, reason: impl Into<String>) -> Checked<T> {
    Err(Invalid {
        at: at.to_string(),
        reason: reason.into(),
    })
}

const ITEM_SHAPE: &str =
    r#"unknown item shape; expected {"say": TEXT} or {"call": NAME, "args": {...}}"#;
const RESPONSE_SHAPE: &str =
    r#"expected an array of items or {"items": [...], "delay_ms": N, "usage": {...}}"#;
const MATCH_FORMS: &str =
    "expected an agent path such as /root/worker_a, a glob such as /root/worker_*, or role:NAME";

impl Script {
    /// Checks a parsed JSON document and builds the script from it.
    pub(crate) fn from_value(value: &Value) -> Checked<Self> {
        let at = "$";
        let Some(object) = value.as_object().filter(|o| o.contains_key("agents")) else {
            return invalid(at, r#"expected an object with "agents""#);
        };
        reject_unknown(object, at, &["agents"])?;
        let at = &field(at, "agents");
        let Some(agents) = object.get("agents").and_then(Value::as_array) else {
            return invalid(at, "expected an array of entries");
        };
        if agents.is_empty() {
            return invalid(at, "expected at least one entry");
        }
        let entries = agents
            .iter()
            .enumerate()
            .map(|(i, entry)| Entry::from_value(entry, &index(at, i)))
            .collect::<Checked<Vec<_>>>()?;
        Ok(Self { entries })
    }

    /// The first entry that fits `agent`.
    pub(crate) fn entry_for(&self, agent: &AgentIdentity) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.matcher.fits(agent))
    }
}

impl Entry {
    fn from_value(value: &Value, at: &str) -> Checked<Self> {
        let Some(object) = value.as_object() else {
            return invalid(at, r#"expected an object with "match" and "responses""#);
        };
        reject_unknown(object, at, &["match", "responses", "repeat"])?;
        let matcher = Matcher::from_value(required(object, at, "match")?, &field(at, "match"))?;
        let responses_at = field(at, "responses");
        let Some(responses) = required(object, at, "responses")?.as_array() else {
            return invalid(&responses_at, "expected an array of responses");
        };
        if responses.is_empty() {
            return invalid(&responses_at, "expected at least one response");
        }
        let responses = responses
            .iter()
            .enumerate()
            .map(|(i, response)| Response::from_value(response, &index(&responses_at, i)))
            .collect::<Checked<Vec<_>>>()?;
        let repeat = match object.get("repeat") {
            None => false,
            Some(Value::Bool(repeat)) => *repeat,
            Some(_) => return invalid(&field(at, "repeat"), "expected a boolean"),
        };
        Ok(Self {
            matcher,
            responses,
            repeat,
        })
    }
}

impl Matcher {
    pub(crate) fn from_value(value: &Value, at: &str) -> Checked<Self> {
        let Some(text) = value.as_str() else {
            return invalid(at, "expected a string");
        };
        if let Some(role) = text.strip_prefix("role:") {
            let role = role.trim();
            if role.is_empty() {
                return invalid(at, r#"expected a role name after "role:""#);
            }
            return Ok(Self::Role(role.to_string()));
        }
        // A glob is checked as the path it would be with every `*` standing for one letter.
        let path = match AgentPath::parse(&text.replace('*', "a")) {
            Ok(path) => path,
            Err(error) => {
                return invalid(
                    at,
                    format!(
                        "{} is not an agent path ({error}); {MATCH_FORMS}",
                        quote(text)
                    ),
                );
            }
        };
        if text.contains('*') {
            Ok(Self::Glob(text.split('/').map(str::to_string).collect()))
        } else {
            Ok(Self::Exact(path))
        }
    }

    /// Whether this matcher fits `agent`.
    pub(crate) fn fits(&self, agent: &AgentIdentity) -> bool {
        self.fits_agent(&agent.path, &agent.role)
    }

    /// Whether this matcher fits the agent at `path` with `role`.
    pub(crate) fn fits_agent(&self, path: &AgentPath, role: &str) -> bool {
        match self {
            Self::Exact(exact) => exact == path,
            Self::Role(wanted) => wanted == role,
            Self::Glob(patterns) => {
                let segments: Vec<&str> = path.as_str().split('/').collect();
                segments.len() == patterns.len()
                    && patterns
                        .iter()
                        .zip(segments)
                        .all(|(pattern, segment)| segment_matches(pattern, segment))
            }
        }
    }
}

/// Matches one path segment against a pattern where `*` stands for any run of characters.
fn segment_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
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
    rest.ends_with(last)
}

impl Response {
    fn from_value(value: &Value, at: &str) -> Checked<Self> {
        match value {
            Value::Array(items) => Ok(Self {
                delay_ms: 0,
                items: items_from(items, at)?,
                usage: None,
            }),
            Value::Object(object) => {
                reject_unknown(object, at, &["items", "delay_ms", "usage"])?;
                let items_at = field(at, "items");
                let Some(items) = required(object, at, "items")?.as_array() else {
                    return invalid(&items_at, "expected an array of items");
                };
                let delay_ms = match object.get("delay_ms") {
                    None => 0,
                    Some(delay) => match delay.as_u64() {
                        Some(delay) => delay,
                        None => {
                            return invalid(
                                &field(at, "delay_ms"),
                                "expected a non-negative integer",
                            );
                        }
                    },
                };
                let usage = match object.get("usage") {
                    None => None,
                    Some(usage) => Some(usage_from(usage, &field(at, "usage"))?),
                };
                Ok(Self {
                    delay_ms,
                    items: items_from(items, &items_at)?,
                    usage,
                })
            }
            _ => invalid(at, RESPONSE_SHAPE),
        }
    }
}

/// `{"input_tokens": N, "output_tokens": N, "cached_input_tokens": N}`: the usage a response
/// reports; `cached_input_tokens` may be left out (0), the other two may not.
fn usage_from(value: &Value, at: &str) -> Checked<Usage> {
    let Some(object) = value.as_object() else {
        return invalid(
            at,
            r#"expected {"input_tokens": N, "output_tokens": N, "cached_input_tokens": N}"#,
        );
    };
    let fields = ["input_tokens", "output_tokens", "cached_input_tokens"];
    reject_unknown(object, at, &fields)?;
    let count = |name: &str, needed: bool| -> Checked<u64> {
        match object.get(name) {
            None if needed => invalid(at, format!("missing field {}", quote(name))),
            None => Ok(0),
            Some(n) => n.as_u64().map_or_else(
                || invalid(&field(at, name), "expected a non-negative integer"),
                Ok,
            ),
        }
    };
    let usage = Usage {
        input_tokens: count("input_tokens", true)?,
        output_tokens: count("output_tokens", true)?,
        cached_input_tokens: count("cached_input_tokens", false)?,
        ..Usage::default()
    };
    if usage.cached_input_tokens > usage.input_tokens {
        return invalid(
            &field(at, "cached_input_tokens"),
            "must not be more than input_tokens",
        );
    }
    Ok(usage)
}

fn items_from(items: &[Value], at: &str) -> Checked<Vec<Item>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| Item::from_value(item, &index(at, i)))
        .collect()
}

impl Item {
    fn from_value(value: &Value, at: &str) -> Checked<Self> {
        let Some(object) = value.as_object() else {
            return invalid(at, ITEM_SHAPE);
        };
        match (object.get("say"), object.get("call")) {
            (Some(say), None) => {
                reject_unknown(object, at, &["say"])?;
                let say_at = field(at, "say");
                let Some(text) = say.as_str() else {
                    return invalid(&say_at, "expected a string");
                };
                Ok(Self::Say(template(text, &say_at)?))
            }
            (None, Some(call)) => {
                reject_unknown(object, at, &["call", "args"])?;
                let name = match call.as_str() {
                    Some(name) if !name.trim().is_empty() => name.to_string(),
                    _ => {
                        return invalid(
                            &field(at, "call"),
                            "expected a tool name (a non-empty string)",
                        );
                    }
                };
                let args_at = field(at, "args");
                let args = match object.get("args") {
                    None => ArgTemplate::Object(Vec::new()),
                    Some(args @ Value::Object(_)) => arg_template(args, &args_at)?,
                    Some(_) => return invalid(&args_at, "expected an object"),
                };
                Ok(Self::Call { name, args })
            }
            _ => invalid(at, ITEM_SHAPE),
        }
    }
}

fn arg_template(value: &Value, at: &str) -> Checked<ArgTemplate> {
    Ok(match value {
        Value::String(text) => ArgTemplate::Text(template(text, at)?),
        Value::Array(items) => ArgTemplate::List(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| arg_template(item, &index(at, i)))
                .collect::<Checked<_>>()?,
        ),
        Value::Object(fields) => ArgTemplate::Object(
            fields
                .iter()
                .map(|(key, value)| Ok((key.clone(), arg_template(value, &field(at, key))?)))
                .collect::<Checked<_>>()?,
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) => ArgTemplate::Literal(value.clone()),
    })
}

fn template(text: &str, at: &str) -> Checked<Template> {
    Template::parse(text).map_err(|reason| Invalid {
        at: at.to_string(),
        reason,
    })
}

fn required<'v>(object: &'v Map<String, Value>, at: &str, name: &str) -> Checked<&'v Value> {
    match object.get(name) {
        Some(value) => Ok(value),
        None => invalid(at, format!("missing field {}", quote(name))),
    }
}

fn reject_unknown(object: &Map<String, Value>, at: &str, known: &[&str]) -> Checked<()> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => invalid(
            at,
            format!("unknown field {}; expected {}", quote(key), one_of(known)),
        ),
    }
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
pub(crate) fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| quote(name)).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => format!("only {last}"),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// A JSON string literal for `text`.
pub(crate) fn quote(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// `at.name`, or `at["name"]` when the name is not a plain identifier.
pub(crate) fn field(at: &str, name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{at}.{name}")
    } else {
        format!("{at}[{}]", quote(name))
    }
}

pub(crate) fn index(at: &str, i: usize) -> String {
    format!("{at}[{i}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_match_with_stars() {
        let cases = [
            ("worker_*", "worker_a", true),
            ("worker_*", "worker_", true),
            ("worker_*", "worke", false),
            ("*", "anything", true),
            ("*_a", "x_a", true),
            ("*_a", "x_b", false),
            ("a*b*b", "abb", true),
            ("a*a", "a", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxcyyb", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ];
        for (pattern, text, expect) in cases {
            assert_eq!(
                segment_matches(pattern, text),
                expect,
                "{pattern} vs {text}"
            );
        }
    }

    #[test]
    fn json_paths_quote_odd_keys() {
        assert_eq!(field("$", "agents"), "$.agents");
        assert_eq!(field("$.a", "two words"), r#"$.a["two words"]"#);
        assert_eq!(field("$.a", "1x"), r#"$.a["1x"]"#);
        assert_eq!(index("$.agents", 3), "$.agents[3]");
    }
}
