//! The HTTP providers' configuration and the transport they share: one `POST` per attempt, status classification, error bodies, retries.
//!
//! The API key goes into one header marked sensitive and nowhere else (`Authorization: Bearer`,
//! or `x-api-key` for the Messages API): `Debug` prints `[redacted]`, and every text that came
//! from the server is scrubbed of the key before it can reach an error, a log line or an event.

use std::fmt;
use std::sync::Once;
use std::time::Duration;

use arbor_protocol::text::truncate_middle;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::kind::{DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL};
use crate::retry::{Answer, Failure, RetryPolicy, retry_after, with_retries};
use crate::stream::{Decoder, read_stream};
use crate::transport_error::describe;
use crate::{ModelError, ModelEvents, ModelResponse, ProviderKind};

/// The version of the Messages API the `anthropic` provider speaks (`anthropic-version`).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// How long to wait for response headers, and for each read of the stream after them.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest wait for a TCP and TLS connection, whatever `request_timeout` says.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an error body is read.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The longest server message put into an error, in bytes (middle-truncated past this).
pub const MAX_ERROR_MESSAGE_BYTES: usize = 2 * 1024;

/// How to reach an HTTP model server.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpProviderConfig {
    /// The API root, such as `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` (`x-api-key: <key>` to the Messages API) when
    /// set. Never printed.
    pub api_key: Option<String>,
    /// The variable the key came from: named in errors about the key.
    pub api_key_env: String,
    /// The longest wait for response headers and for each read of the stream.
    pub request_timeout: Duration,
    /// Sent with every request (config `[headers]`). Values are not printed.
    pub extra_headers: Vec<(String, String)>,
    pub retry: RetryPolicy,
}

impl HttpProviderConfig {
    /// Defaults for a server at `base_url`, without a key.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            api_key_env: DEFAULT_API_KEY_ENV.to_string(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            extra_headers: Vec::new(),
            retry: RetryPolicy::default(),
        }
    }
}

impl Default for HttpProviderConfig {
    fn default() -> Self {
        Self::new(DEFAULT_BASE_URL)
    }
}

impl fmt::Debug for HttpProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<String> = self
            .extra_headers
            .iter()
            .map(|(name, _)| format!("{name}: [redacted]"))
            .collect();
        f.debug_struct("HttpProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("api_key_env", &self.api_key_env)
            .field("request_timeout", &self.request_timeout)
            .field("extra_headers", &headers)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Reads the API key from the environment variable `var`; a missing or empty variable is a
/// configuration error that says what to do.
pub fn api_key_from_env(var: &str) -> Result<String, ModelError> {
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_string()),
        Ok(_) => Err(ModelError::Config(format!(
            "{var} is empty; export the key or set api_key_env"
        ))),
        Err(_) => Err(ModelError::Config(format!(
            "{var} is not set; export it or set api_key_env"
        ))),
    }
}

/// The transport one provider uses.
pub(crate) struct HttpClient {
    client: reqwest::Client,
    config: HttpProviderConfig,
    base_url: String,
    headers: HeaderMap,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    pub(crate) fn new(config: HttpProviderConfig, kind: ProviderKind) -> Result<Self, ModelError> {
        let base_url = config.base_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base_url).map_err(|error| {
            ModelError::Config(format!("base_url `{base_url}` is not a valid url: {error}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ModelError::Config(format!(
                "base_url `{base_url}` must start with http:// or https://"
            )));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &config.extra_headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ModelError::Config(format!("invalid header name `{name}`")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| ModelError::Config(format!("invalid value for header `{name}`")))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        if let Some(key) = &config.api_key {
            let (name, text) = match kind {
                ProviderKind::Anthropic => (HeaderName::from_static("x-api-key"), key.clone()),
                ProviderKind::OpenAi | ProviderKind::Chat => {
                    (header::AUTHORIZATION, format!("Bearer {key}"))
                }
            };
            let mut value = HeaderValue::from_str(&text).map_err(|_| {
                ModelError::Config(format!(
                    "the key in {} holds characters a header cannot carry",
                    config.api_key_env
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if kind == ProviderKind::Anthropic {
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("arbor/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(config.request_timeout.min(CONNECT_TIMEOUT))
            .build()
            .map_err(|error| {
                ModelError::Config(format!(
                    "cannot build the http client: {}",
                    describe(&error)
                ))
            })?;
        Ok(Self {
            client,
            config,
            base_url,
            headers,
        })
    }

    /// The API root requests go to, without a trailing `/`.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// One `GET {base_url}{path}` within `timeout`, with the provider's headers: the status and
    /// the start of the body (errors and texts scrubbed of the key).
    pub(crate) async fn get(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), ModelError> {
        let url = format!("{}{path}", self.base_url);
        let request = self.client.get(&url).headers(self.headers.clone()).send();
        let response = match tokio::time::timeout(timeout, request).await {
            Err(_) => {
                return Err(ModelError::Failed(format!(
                    "no answer from {url} within {} s",
                    timeout.as_secs_f64()
                )));
            }
            Ok(Err(error)) => return Err(ModelError::Failed(self.redact(&describe(&error)))),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        Ok((status, self.read_bounded(response).await))
    }

    /// Posts `body` to `{base_url}{path}` and reads the event stream with a fresh decoder per
    /// attempt, retrying what is worth retrying.
    pub(crate) async fn stream<D: Decoder>(
        &self,
        path: &str,
        body: &Value,
        events: &ModelEvents,
        decoder: impl Fn() -> D,
    ) -> Result<ModelResponse, ModelError> {
        let body = serde_json::to_vec(body)
            .map_err(|error| ModelError::Config(format!("cannot encode the request: {error}")))?;
        self.stream_encoded(path, body, events, decoder).await
    }

    /// [`HttpClient::stream`] with a body already encoded.
    pub(crate) async fn stream_encoded<D: Decoder>(
        &self,
        path: &str,
        body: Vec<u8>,
        events: &ModelEvents,
        decoder: impl Fn() -> D,
    ) -> Result<ModelResponse, ModelError> {
        let url = format!("{}{path}", self.base_url);
        with_retries(&self.config.retry, events, || {
            self.attempt(&url, body.clone(), events, decoder())
        })
        .await
    }

    async fn attempt<D: Decoder>(
        &self,
        url: &str,
        body: Vec<u8>,
        events: &ModelEvents,
        decoder: D,
    ) -> Result<ModelResponse, Failure> {
        let timeout = self.config.request_timeout;
        let request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = match tokio::time::timeout(timeout, request).await {
            Err(_) => {
                return Err(Failure::retry(format!(
                    "no response from {url} within {} s",
                    timeout.as_secs_f64()
                )));
            }
            Ok(Err(error)) => return Err(Failure::retry(self.redact(&describe(&error)))),
            Ok(Ok(response)) => response,
        };
        if !response.status().is_success() {
            return Err(self.status_failure(response).await);
        }
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if content_type.starts_with("application/json") {
            // A server that ignores `stream: true`, or reports an error with a 200.
            let body = self.read_bounded(response).await;
            return Err(Failure::Fatal(ModelError::Failed(format!(
                "the server answered with json, not an event stream: {}",
                self.redact(&error_message(&body, None))
            ))));
        }
        read_stream(response, decoder, events, timeout)
            .await
            .map_err(|failure| self.redact_failure(failure))
    }

    /// `failure` with the key scrubbed from every server-given text in it.
    fn redact_failure(&self, failure: Failure) -> Failure {
        match failure {
            Failure::Retry {
                reason,
                after,
                rate_limited,
                answer,
            } => Failure::Retry {
                reason: self.redact(&reason),
                after,
                rate_limited,
                answer: answer.map(|answer| Answer {
                    message: self.redact(&answer.message),
                    ..answer
                }),
            },
            Failure::Fatal(ModelError::Failed(message)) => {
                Failure::Fatal(ModelError::Failed(self.redact(&message)))
            }
            Failure::Fatal(other) => Failure::Fatal(other),
        }
    }

    /// Classifies an unsuccessful response: 429, 529, 408, 409 and 5xx are retried (an answer
    /// that repeats only once, unless it said when to come back or is a 429 or 529, which
    /// pass by nature); 401 blames the key; any other
    /// status ends the request with the server's message.
    async fn status_failure(&self, response: reqwest::Response) -> Failure {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string)
        };
        let after = retry_after(
            header("retry-after-ms").as_deref(),
            header("retry-after").as_deref(),
        );
        let reason_phrase = response.status().canonical_reason();
        let body = self.read_bounded(response).await;
        let message = self.redact(&error_message(&body, reason_phrase));
        match status {
            429 => Failure::Retry {
                reason: format!("http 429: {message}"),
                after,
                rate_limited: true,
                answer: None,
            },
            // Overloaded (the Messages API's 529) passes by nature: every retry is kept.
            529 => Failure::Retry {
                reason: format!("http 529: {message}"),
                after,
                rate_limited: false,
                answer: None,
            },
            408 | 409 | 500..=599 => Failure::Retry {
                reason: format!("http {status}: {message}"),
                answer: after.is_none().then(|| Answer {
                    status: Some(status),
                    body: String::from_utf8_lossy(&body).into_owned(),
                    message: message.clone(),
                }),
                after,
                rate_limited: false,
            },
            401 => {
                let env = &self.config.api_key_env;
                let message = if self.config.api_key.is_some() {
                    format!("the api key was rejected; check {env}: {message}")
                } else {
                    format!("no api key was sent; export {env} or set api_key_env: {message}")
                };
                Failure::Fatal(ModelError::Http { status, message })
            }
            _ => Failure::Fatal(ModelError::Http { status, message }),
        }
    }

    /// The start of a body (an error, most likely), up to [`MAX_ERROR_BODY_BYTES`].
    async fn read_bounded(&self, mut response: reqwest::Response) -> Vec<u8> {
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BODY_BYTES {
            match tokio::time::timeout(self.config.request_timeout, response.chunk()).await {
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
        body
    }

    /// `text` without the API key in it.
    pub(crate) fn redact(&self, text: &str) -> String {
        redact(text, self.config.api_key.as_deref())
    }
}

/// `text` with every occurrence of `key` replaced by `[redacted]`.
pub(crate) fn redact(text: &str, key: Option<&str>) -> String {
    match key {
        Some(key) if !key.is_empty() && text.contains(key) => text.replace(key, "[redacted]"),
        _ => text.to_string(),
    }
}

/// The server's explanation in an error body: `error.message` (or `error` as text, or a
/// top-level `message` or `detail`), else the body text, else the status's reason phrase.
pub(crate) fn error_message(body: &[u8], reason_phrase: Option<&str>) -> String {
    let from_json = serde_json::from_slice::<Value>(body).ok().and_then(|json| {
        let text = |value: &Value| value.as_str().map(str::to_string);
        match json.get("error") {
            Some(error @ Value::Object(_)) => error.get("message").and_then(text),
            Some(error) => text(error),
            None => None,
        }
        .or_else(|| json.get("message").and_then(text))
        .or_else(|| json.get("detail").and_then(text))
    });
    let message = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let message = if message.is_empty() {
        reason_phrase.unwrap_or("no error message").to_lowercase()
    } else {
        message
    };
    truncate_middle(&message, MAX_ERROR_MESSAGE_BYTES)
}

/// reqwest is built without a bundled crypto provider (to keep aws-lc out of the build); ring
/// becomes the process default before the first client is built.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests;
