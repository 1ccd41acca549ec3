//! Tool-call arguments that are not one JSON object: how they are described to the model, and
//! the form they take in the histories arbor sends back.
//!
//! A model may stop mid-call (an output limit, a stray end token) and leave arguments such as
//! `{"cmd": "sed -i s/a/`. Servers that parse the arguments of every call in a history
//! (llama.cpp answers `500 Failed to parse tool call arguments as JSON` to each later request)
//! would refuse the agent's history for good if those went back verbatim. So on the wire such
//! a call carries `{"invalid_json": "<the text the model wrote>"}` instead: a JSON object
//! every server accepts, which still shows the model what it wrote. The rollout keeps the
//! model's own text; only requests use the wrapped form.

use std::borrow::Cow;

use serde_json::Value;

/// The key under which arguments that are not a JSON object are sent back.
pub const INVALID_JSON_KEY: &str = "invalid_json";

/// What is wrong with `arguments`, or `None` when they are one JSON object (blank arguments
/// count as `{}`).
pub fn problem(arguments: &str) -> Option<String> {
    if arguments.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => None,
        Ok(other) => Some(format!("they are a JSON {}, not an object", kind(&other))),
        Err(err) if err.is_eof() => Some(format!("the JSON text ends early ({err})")),
        Err(err) => Some(format!("they are not valid JSON ({err})")),
    }
}

/// `arguments` as they go back to a server: unchanged when they are one JSON object,
/// otherwise `{"invalid_json": "<arguments>"}`.
pub fn for_history(arguments: &str) -> Cow<'_, str> {
    if arguments.trim().is_empty() {
        return Cow::Borrowed("{}");
    }
    if problem(arguments).is_none() {
        return Cow::Borrowed(arguments);
    }
    let mut wrapped = serde_json::Map::new();
    wrapped.insert(
        INVALID_JSON_KEY.to_string(),
        Value::String(arguments.to_string()),
    );
    Cow::Owned(Value::Object(wrapped).to_string())
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_pass_and_everything_else_is_described() {
        assert_eq!(problem("{\"cmd\": \"ls\"}"), None);
        assert_eq!(problem("  "), None);
        assert_eq!(
            problem("{\"cmd\": \"sed -i s/fetch_data/").as_deref(),
            Some("the JSON text ends early (EOF while parsing a string at line 1 column 29)")
        );
        assert_eq!(
            problem("[1]").as_deref(),
            Some("they are a JSON array, not an object")
        );
        assert_eq!(
            problem("{\"a\": 1}}").as_deref(),
            Some("they are not valid JSON (trailing characters at line 1 column 9)")
        );
    }

    #[test]
    fn only_bad_arguments_are_wrapped() {
        assert_eq!(for_history("{\"a\":1}"), "{\"a\":1}");
        assert_eq!(for_history(""), "{}");
        let cut = "{\"cmd\": \"sed -i s/fetch_data/";
        let wrapped = for_history(cut);
        let value: Value = serde_json::from_str(&wrapped).expect("json");
        assert_eq!(value, serde_json::json!({"invalid_json": cut}));
        assert_eq!(for_history("\"text\""), r#"{"invalid_json":"\"text\""}"#);
    }
}
