//! A script cut into its entries, for an engine that hands each agent only the part it reads.
//! The Restate engine keeps each entry under a key of its own and sends an agent its part with
//! its wake, so no state value and no message carries the whole script (which grows with the
//! tree: a fan-out's script lists every spawn of the root).
//!
//! An agent reads the first entry that fits it, so the model built from its part alone answers
//! it exactly as the model built from the whole script would.

use std::sync::Mutex;

use arbor_protocol::AgentPath;
use serde_json::{Value, json};

use super::ScriptedModel;
use super::script::{Matcher, Script};
use crate::ModelError;

/// A validated script's entries, each as a script of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptParts {
    /// Each entry's `match`, in the script's order.
    pub matches: Vec<String>,
    /// Each entry alone, as a script: `{"agents": [entry]}`.
    pub parts: Vec<String>,
}

impl ScriptParts {
    /// Validates `text` as [`ScriptedModel::from_json`] does (with its errors) and cuts it
    /// into its entries.
    pub fn split(text: &str) -> Result<Self, ModelError> {
        ScriptedModel::from_json(text)?;
        let value: Value =
            serde_json::from_str(text).map_err(|error| ModelError::Script(error.to_string()))?;
        let entries = value
            .get("agents")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let matches = entries
            .iter()
            .map(|entry| {
                entry
                    .get("match")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        let parts = entries
            .into_iter()
            .map(|entry| json!({ "agents": [entry] }).to_string())
            .collect();
        Ok(Self { matches, parts })
    }
}

/// Which part the agent at `path` with `role` reads: the first entry whose `match` (one of
/// `matches`, as [`ScriptParts::split`] gave them) fits it, as the scripted model picks.
/// `None` when no entry fits: that agent reads [`NO_PART`].
pub fn part_for(matches: &[String], path: &AgentPath, role: &str) -> Option<usize> {
    matches.iter().position(|text| {
        Matcher::from_value(&Value::String(text.clone()), "$")
            .is_ok_and(|matcher| matcher.fits_agent(path, role))
    })
}

/// The part of an agent that no entry fits: its every request fails with `no script entry
/// matches <path>`, as with the whole script.
pub const NO_PART: &str = r#"{"agents":[]}"#;

impl ScriptedModel {
    /// A model answering from one part of a script ([`ScriptParts`]), or from [`NO_PART`].
    pub fn from_part(text: &str) -> Result<Self, ModelError> {
        let value: Value =
            serde_json::from_str(text).map_err(|error| ModelError::Script(error.to_string()))?;
        if value
            .get("agents")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            return Ok(Self {
                script: Script {
                    entries: Vec::new(),
                },
                state: Mutex::default(),
            });
        }
        Self::from_json(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelClient;
    use crate::ModelRequest;
    use crate::scripted::tests::request as asked;
    use arbor_protocol::ResponseItem;

    const SCRIPT: &str = r#"{"agents": [
        {"match": "/root", "responses": [[{"say": "root {{input}}"}]]},
        {"match": "role:guardian", "repeat": true, "responses": [[{"say": "allow"}]]},
        {"match": "/root/w*", "responses": [[{"say": "one {{task_name}}"}], [{"say": "two"}]]}
    ]}"#;

    fn request(path: &str, role: &str) -> ModelRequest {
        let go = ResponseItem::Message {
            role: "user".to_string(),
            content: "go".to_string(),
        };
        asked(path, role, vec![go])
    }

    async fn answers(model: &ScriptedModel, request: &ModelRequest, times: usize) -> Vec<String> {
        let (events, _ignored) = tokio::sync::mpsc::unbounded_channel();
        let mut out = Vec::new();
        for _ in 0..times {
            out.push(match model.respond(request, &events).await {
                Ok(response) => format!("{:?}", response.items),
                Err(error) => error.to_string(),
            });
        }
        out
    }

    #[tokio::test]
    async fn an_agent_reads_from_its_part_what_it_reads_from_the_whole_script() {
        let parts = ScriptParts::split(SCRIPT).expect("a valid script");
        assert_eq!(parts.matches, ["/root", "role:guardian", "/root/w*"]);
        for (path, role, part) in [
            ("/root", "default", Some(0)),
            ("/root/guardian", "guardian", Some(1)),
            ("/root/w1", "worker", Some(2)),
            ("/root/w1/x", "worker", None),
            ("/root/other", "default", None),
        ] {
            let at = part_for(
                &parts.matches,
                &AgentPath::parse(path).expect("a path"),
                role,
            );
            assert_eq!(at, part, "{path}");
            let text = at.map_or(NO_PART, |at| parts.parts[at].as_str());
            let alone = ScriptedModel::from_part(text).expect("a part");
            let whole = ScriptedModel::from_json(SCRIPT).expect("a valid script");
            let request = request(path, role);
            assert_eq!(
                answers(&alone, &request, 3).await,
                answers(&whole, &request, 3).await,
                "{path}"
            );
        }
    }

    #[test]
    fn a_bad_script_is_refused_with_the_whole_script_s_error() {
        let bad = r#"{"agents": [{"match": "/root", "responses": [[{"sya": "x"}]]}]}"#;
        assert_eq!(
            ScriptParts::split(bad)
                .expect_err("a bad script")
                .to_string(),
            ScriptedModel::from_json(bad)
                .expect_err("a bad script")
                .to_string()
        );
    }
}
