//! Whether a model server answers, for `arbor doctor`: one `GET {base_url}/models` (which the
//! OpenAI API, the OpenAI-compatible servers and the Messages API answer) with the provider's
//! own headers and key, read as a list of model ids.

use std::time::Duration;

use serde_json::Value;

use crate::http::{HttpClient, HttpProviderConfig, error_message};
use crate::{ModelError, ProviderKind};

/// How long a probe waits for the server.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server said to the probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// It answered 2xx; the model ids it listed (none when its body is not such a list).
    Models(Vec<String>),
    /// It refused the key (401 or 403), with its message.
    KeyRefused { status: u16, message: String },
    /// Any other status, with its message.
    Status { status: u16, message: String },
}

/// Asks the server `config` describes for its models. An error is a server that cannot be
/// reached (or a configuration no request can be made with).
pub async fn probe_models(
    kind: ProviderKind,
    config: HttpProviderConfig,
) -> Result<ProbeAnswer, ModelError> {
    let http = HttpClient::new(config, kind)?;
    let (status, body) = http.get("/models", PROBE_TIMEOUT).await?;
    if (200..300).contains(&status) {
        let ids = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|json| json.get("data").and_then(Value::as_array).cloned())
            .into_iter()
            .flatten()
            .filter_map(|model| model.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        return Ok(ProbeAnswer::Models(ids));
    }
    let message = http.redact(&error_message(&body, None));
    Ok(match status {
        401 | 403 => ProbeAnswer::KeyRefused { status, message },
        _ => ProbeAnswer::Status { status, message },
    })
}
