//! Facts about the models that served an agent: which provider and model answered a request
//! (a usage line's `served_by`), a switch to a fallback (`model_fallback`), and the thinking
//! blocks of the Anthropic Messages API that a reasoning item carries back to it.

use serde::{Deserialize, Serialize};

/// Who answered one model request: the provider by its configured name, and the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedBy {
    pub provider: String,
    pub model: String,
}

/// A request went to a fallback: `from` (`provider/model`) failed after its retries, or was
/// still cooling down after such a failure, and `to` was asked instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFallback {
    pub from: String,
    pub to: String,
    /// Why `from` was left: its error, or the failure it is cooling down after.
    pub reason: String,
    /// What the history sent to `to` lacks (reasoning items its API cannot take).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A thinking block of the Anthropic Messages API, kept so that it goes back to that API
/// exactly as it came (the API checks the signature). Other APIs cannot take it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Thinking {
    /// A `thinking` block: its text is the reasoning item's one summary entry.
    Thinking { signature: String },
    /// A `redacted_thinking` block: encrypted reasoning the model may not show.
    RedactedThinking { data: String },
}
