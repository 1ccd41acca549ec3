//! Script templates: `{{path}}`-style placeholders, checked at load and filled per request.

use arbor_protocol::ResponseItem;
use serde_json::{Map, Value};

use crate::ModelRequest;

/// Every placeholder a script may use, as written between the braces.
const PLACEHOLDERS: &[(&str, Var)] = &[
    ("path", Var::Path),
    ("task_name", Var::TaskName),
    ("nickname", Var::Nickname),
    ("role", Var::Role),
    ("input", Var::Input),
    ("last_output", Var::LastOutput),
];

/// What the reason for an unknown placeholder lists as the allowed set.
const EXPECTED: &str =
    "expected {{path}}, {{task_name}}, {{nickname}}, {{role}}, {{input}} or {{last_output}}";

/// One value a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Var {
    Path,
    TaskName,
    Nickname,
    Role,
    Input,
    LastOutput,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(Var),
}

/// A string with placeholders, parsed once at load.
///
/// A placeholder is `{{NAME}}` where NAME is an identifier, optionally padded with spaces; an
/// identifier that is not a known placeholder is an error. Any other `{{` is literal text, so
/// JSON and code in a script need no escaping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template(Vec<Piece>);

impl Template {
    /// Parses `text`; the error is the reason, without a location.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            let placeholder = after.find("}}").and_then(|close| {
                let name = after[..close].trim_matches(' ');
                is_identifier(name).then_some((name, close))
            });
            match placeholder {
                Some((name, close)) => {
                    let var = PLACEHOLDERS
                        .iter()
                        .find(|(known, _)| *known == name)
                        .map(|(_, var)| *var)
                        .ok_or_else(|| format!("unknown placeholder {{{{{name}}}}}; {EXPECTED}"))?;
                    literal.push_str(&rest[..open]);
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Var(var));
                    rest = &after[close + 2..];
                }
                None => {
                    // Not a placeholder: keep one `{` and look again from the next character.
                    literal.push_str(&rest[..=open]);
                    rest = &rest[open + 1..];
                }
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Self(pieces))
    }

    /// Fills the placeholders from `context`.
    pub(crate) fn render(&self, context: &Context) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Var(var) => out.push_str(context.value(*var)),
            }
        }
        out
    }
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `args` of a call with every string parsed as a template; other values kept as they are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgTemplate {
    Literal(Value),
    Text(Template),
    List(Vec<ArgTemplate>),
    Object(Vec<(String, ArgTemplate)>),
}

impl ArgTemplate {
    /// Fills every string from `context`, giving back plain JSON.
    pub(crate) fn render(&self, context: &Context) -> Value {
        match self {
            Self::Literal(value) => value.clone(),
            Self::Text(template) => Value::String(template.render(context)),
            Self::List(items) => Value::Array(items.iter().map(|i| i.render(context)).collect()),
            Self::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(key, value)| (key.clone(), value.render(context)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

/// The values placeholders take for one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Context {
    pub(crate) path: String,
    pub(crate) task_name: String,
    pub(crate) nickname: String,
    pub(crate) role: String,
    pub(crate) input: String,
    pub(crate) last_output: String,
}

impl Context {
    /// Reads the identity and the newest input and tool output of `request`.
    pub(crate) fn of(request: &ModelRequest) -> Self {
        let agent = &request.agent;
        Self {
            path: agent.path.to_string(),
            task_name: agent.path.name().to_string(),
            nickname: agent.nickname.clone().unwrap_or_default(),
            role: agent.role.clone(),
            input: newest_input(&request.input),
            last_output: newest_output(&request.input),
        }
    }

    fn value(&self, var: Var) -> &str {
        match var {
            Var::Path => &self.path,
            Var::TaskName => &self.task_name,
            Var::Nickname => &self.nickname,
            Var::Role => &self.role,
            Var::Input => &self.input,
            Var::LastOutput => &self.last_output,
        }
    }
}

/// The newest user message; for a mail (the `Mail::model_text` form), only its payload.
fn newest_input(input: &[ResponseItem]) -> String {
    input
        .iter()
        .rev()
        .find_map(|item| match item {
            ResponseItem::Message { role, content } if role == "user" => Some(content.as_str()),
            _ => None,
        })
        .map(|content| mail_payload(content).unwrap_or(content).to_string())
        .unwrap_or_default()
}

/// The payload of a message in mail form: `Message Type: …` lines, then `Payload:` and the text.
fn mail_payload(content: &str) -> Option<&str> {
    let headers = content.strip_prefix("Message Type: ")?;
    const MARK: &str = "\nPayload:\n";
    if let Some(at) = headers.find(MARK) {
        return Some(&headers[at + MARK.len()..]);
    }
    // An empty payload may end the text right after the marker line.
    headers.ends_with("\nPayload:").then_some("")
}

/// The output of the newest tool result.
fn newest_output(input: &[ResponseItem]) -> String {
    input
        .iter()
        .rev()
        .find_map(|item| match item {
            ResponseItem::FunctionCallOutput { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context {
            path: "/root/w".into(),
            task_name: "w".into(),
            nickname: "Ada".into(),
            role: "worker".into(),
            input: "task".into(),
            last_output: "out".into(),
        }
    }

    fn check(text: &str, expect: &str) {
        let template = Template::parse(text).expect(text);
        assert_eq!(template.render(&context()), expect, "{text}");
    }

    #[test]
    fn placeholders_are_filled_and_other_braces_kept() {
        check("plain", "plain");
        check("", "");
        check("{{path}} {{task_name}}", "/root/w w");
        check("{{ nickname }}/{{role}}", "Ada/worker");
        check("<{{input}}|{{last_output}}>", "<task|out>");
        check("{{{input}}}", "{task}");
        check(r#"{"a": {"b": 1}}"#, r#"{"a": {"b": 1}}"#);
        check("{{}} {{ }} {{a b}} {{", "{{}} {{ }} {{a b}} {{");
        check("{{input", "{{input");
        check("é{{input}}é", "étaské");
    }

    #[test]
    fn unknown_placeholders_are_refused() {
        let err = Template::parse("x {{inputs}} y").expect_err("unknown");
        assert_eq!(
            err,
            "unknown placeholder {{inputs}}; expected {{path}}, {{task_name}}, {{nickname}}, \
             {{role}}, {{input}} or {{last_output}}"
        );
        assert!(Template::parse("{{ Path }}").is_err());
    }

    #[test]
    fn mail_payload_is_cut_after_the_marker() {
        assert_eq!(
            mail_payload(
                "Message Type: MESSAGE\nTask name: /root/w\nSender: /root\nPayload:\na\nb"
            ),
            Some("a\nb")
        );
        assert_eq!(mail_payload("Message Type: MESSAGE\nPayload:\n"), Some(""));
        assert_eq!(mail_payload("Message Type: MESSAGE\nPayload:"), Some(""));
        assert_eq!(mail_payload("hello\nPayload:\nx"), None);
        assert_eq!(mail_payload("Message Type: MESSAGE\nno marker"), None);
    }
}
