//! The model crate's one error: why a response could not be produced, a script could not be
//! loaded, or an event stream broke its bounds. `Display` is the reason shown in
//! `errored: <reason>` (and, for a script, names the file and the JSON path of the problem).

use std::path::PathBuf;

use crate::sse::MAX_EVENT_BYTES;

/// Why a response could not be produced, or a script loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The scripted model has no answer (no matching entry, script exhausted).
    #[error("{0}")]
    Script(String),
    /// Retries for 429 responses ran out.
    #[error("rate_limited")]
    RateLimited,
    /// The server answered with an error that retrying will not fix.
    #[error("model error (http {status}): {message}")]
    Http { status: u16, message: String },
    /// The connection failed or the stream broke and retries ran out.
    #[error("transport error: {0}")]
    Transport(String),
    /// The server ended the response with a failure that retrying will not fix: the context is
    /// too long, the quota is spent, the answer was cut at the output limit or filtered.
    #[error("model response failed: {0}")]
    Failed(String),
    /// The provider is misconfigured (missing key, bad URL).
    #[error("model configuration: {0}")]
    Config(String),
    /// The script file could not be read.
    #[error("script {}: cannot read the file: {reason}", file.display())]
    ScriptRead { file: PathBuf, reason: String },
    /// The script is not JSON.
    #[error("{}: invalid json at line {line} column {column}: {reason}", origin(.file))]
    ScriptSyntax {
        file: Option<PathBuf>,
        line: usize,
        column: usize,
        reason: String,
    },
    /// The JSON is not a valid script; `at` is a JSON path such as `$.agents[0].match`.
    #[error("{}: {at}: {reason}", origin(.file))]
    ScriptInvalid {
        file: Option<PathBuf>,
        at: String,
        reason: String,
    },
    /// An event stream's line or event broke the format's bounds.
    #[error("event stream line or event longer than {MAX_EVENT_BYTES} bytes")]
    EventTooLarge,
}

impl ModelError {
    /// Whether the failure is the provider's availability rather than the request's: rate
    /// limited past its retries, overloaded, a server error, unreachable. A fallback model
    /// (`Router`) is asked only after such a failure.
    pub fn is_availability(&self) -> bool {
        match self {
            Self::RateLimited | Self::Transport(_) => true,
            Self::Http { status, .. } => *status >= 500,
            Self::Script(_)
            | Self::Failed(_)
            | Self::Config(_)
            | Self::ScriptRead { .. }
            | Self::ScriptSyntax { .. }
            | Self::ScriptInvalid { .. }
            | Self::EventTooLarge => false,
        }
    }
}

fn origin(file: &Option<PathBuf>) -> String {
    match file {
        Some(file) => format!("script {}", file.display()),
        None => "script".to_string(),
    }
}
