//! Retries: which failures are worth another attempt, how long to wait (exponential backoff
//! with jitter, or what the server asked for), and the loop that reports each wait as a
//! `ModelEvent::Retrying` before it sleeps.
//!
//! A server that gives the same error answer (same status and body, or the same error inside
//! the stream) to a retry of the same request is taken at its word: a deterministic failure,
//! such as llama.cpp's `500 Failed to parse tool call arguments as JSON`, is tried twice in
//! all, not `max_attempts` times. Rate limits, and answers that say when to come back
//! (`Retry-After`), are passing by nature and keep their full retries.

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use arbor_protocol::Timestamp;

use crate::{ModelError, ModelEvent, ModelEvents, ModelResponse};

/// The longest `Retry-After` honoured. A server that asks for more gets the usual backoff
/// instead, like the official SDKs do: waiting minutes in silence helps nobody.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// The wait before the second attempt; it doubles for each attempt after that.
    pub base_delay: Duration,
    /// The longest backoff wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt `attempt` (1-based): the server's wish when it gave one
    /// (up to [`MAX_RETRY_AFTER`]), else `base_delay * 2^(attempt-1)` capped at `max_delay`,
    /// scaled by a random factor in [0.5, 1) so that agents hitting the same limit spread out.
    pub fn delay(&self, attempt: u32, server_asked: Option<Duration>) -> Duration {
        if let Some(wait) = server_asked.filter(|wait| *wait <= MAX_RETRY_AFTER) {
            return wait;
        }
        let doubling = 2_u32.saturating_pow(attempt.saturating_sub(1).min(30));
        let full = self.base_delay.saturating_mul(doubling).min(self.max_delay);
        let random = RandomState::new().hash_one(attempt);
        // 53 random bits as a fraction in [0, 1).
        let fraction = (random >> 11) as f64 / (1_u64 << 53) as f64;
        full.mul_f64(0.5 + fraction / 2.0)
    }
}

/// Why one attempt failed, and whether another may succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Worth another attempt: 429, 5xx, a broken connection, a stream that ended early.
    Retry {
        reason: String,
        /// What the server asked for (`Retry-After`, or "try again in" in an error message).
        after: Option<Duration>,
        /// Rate limiting: running out of attempts ends in `ModelError::RateLimited`.
        rate_limited: bool,
        /// The server's error answer, when it gave one that a repeat would show to be
        /// deterministic.
        answer: Option<Answer>,
    },
    /// Retrying will not help.
    Fatal(ModelError),
}

/// An error answer of the server, compared with the next attempt's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The HTTP status; `None` for an error reported inside a stream.
    pub(crate) status: Option<u16>,
    /// The whole body (or the stream's error code and message): what must repeat.
    pub(crate) body: String,
    /// The server's message, for the error.
    pub(crate) message: String,
}

impl Answer {
    /// The error a repeated answer ends the request with.
    fn into_error(self) -> ModelError {
        let message = format!(
            "{} (the same answer to a retry; not retried again)",
            self.message
        );
        match self.status {
            Some(status) => ModelError::Http { status, message },
            None => ModelError::Failed(message),
        }
    }
}

impl Failure {
    /// A retryable failure without a server-given delay.
    pub(crate) fn retry(reason: impl Into<String>) -> Self {
        Self::Retry {
            reason: reason.into(),
            after: None,
            rate_limited: false,
            answer: None,
        }
    }

    /// The error to report when no attempt is left.
    pub(crate) fn into_final(self, attempts: u32) -> ModelError {
        match self {
            Self::Fatal(error) => error,
            Self::Retry {
                rate_limited: true, ..
            } => ModelError::RateLimited,
            Self::Retry { reason, .. } if attempts > 1 => {
                ModelError::Transport(format!("{reason} (gave up after {attempts} attempts)"))
            }
            Self::Retry { reason, .. } => ModelError::Transport(reason),
        }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `policy.max_attempts` are used. Before
/// each wait, sends `ModelEvent::Retrying`. Items an attempt reported through `events` before it
/// failed are void: the next attempt starts the response over.
pub(crate) async fn with_retries<F, Fut>(
    policy: &RetryPolicy,
    events: &ModelEvents,
    mut attempt: F,
) -> Result<ModelResponse, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<ModelResponse, Failure>>,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut number = 1;
    let mut previous: Option<Answer> = None;
    loop {
        let failure = match attempt().await {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        if let Failure::Retry {
            answer: Some(answer),
            ..
        } = &failure
            && previous.as_ref() == Some(answer)
        {
            return Err(answer.clone().into_error());
        }
        let (reason, after) = match &failure {
            Failure::Retry {
                reason,
                after,
                answer,
                ..
            } if number < max_attempts => {
                previous = answer.clone();
                (reason, *after)
            }
            Failure::Retry { .. } | Failure::Fatal(_) => {
                return Err(failure.into_final(number));
            }
        };
        let wait = policy.delay(number, after);
        let retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        notify(
            events,
            ModelEvent::Retrying {
                reason: format!("{reason} (attempt {number} of {max_attempts})"),
                retry_in_ms,
            },
        );
        tokio::time::sleep(wait).await;
        number += 1;
    }
}

/// A dropped receiver only means nobody is watching.
fn notify(events: &ModelEvents, event: ModelEvent) {
    let _ = events.send(event);
}

/// Error codes that name a problem with the request or the account, not a passing one.
const FATAL_CODES: &[&str] = &[
    "context_length_exceeded",
    "insufficient_quota",
    "model_not_found",
    "unsupported_parameter",
    "unsupported_value",
    "content_filter",
];

/// An error the server reported inside a stream (a `response.failed`, an `error` event, an
/// `error` chunk): rate limits and server errors are retried, request problems are not.
pub(crate) fn stream_error(code: Option<&str>, message: &str) -> Failure {
    let answer = |reason: String| Failure::Retry {
        reason: reason.clone(),
        after: None,
        rate_limited: false,
        answer: Some(Answer {
            status: None,
            body: format!("{code:?} {message}"),
            message: reason,
        }),
    };
    match code {
        Some("rate_limit_exceeded") => Failure::Retry {
            reason: format!("rate limited: {message}"),
            after: try_again_in(message),
            rate_limited: true,
            answer: None,
        },
        Some(code) if FATAL_CODES.contains(&code) || code.starts_with("invalid_") => {
            Failure::Fatal(ModelError::Failed(format!("{code}: {message}")))
        }
        Some(code) => answer(format!("the server reported {code}: {message}")),
        None => answer(format!("the server reported an error: {message}")),
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else `Retry-After` as
/// seconds (fractions allowed) or as an HTTP date.
pub(crate) fn retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
) -> Option<Duration> {
    if let Some(millis) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        return Some(Duration::from_secs_f64(millis / 1000.0));
    }
    let value = retry_after?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = http_date(value)?;
    let millis = at
        .as_millis()
        .saturating_sub(Timestamp::now().as_millis())
        .max(0);
    Some(Duration::from_millis(u64::try_from(millis).unwrap_or(0)))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date form servers send.
pub(crate) fn http_date(text: &str) -> Option<Timestamp> {
    let mut parts = text.split_ascii_whitespace();
    let _weekday = parts.next()?.strip_suffix(',')?;
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u32 = parts.next()?.parse().ok()?;
    let time = parts.next()?;
    if parts.next()? != "GMT" || parts.next().is_some() {
        return None;
    }
    Timestamp::parse(&format!("{year:04}-{month:02}-{day:02}T{time}Z")).ok()
}

/// The wait in an error message such as "Please try again in 1.5s" or "... in 300ms".
pub(crate) fn try_again_in(message: &str) -> Option<Duration> {
    let (_, rest) = message.split_once("try again in ")?;
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value: f64 = rest[..number_len].parse().ok()?;
    let unit = &rest[number_len..];
    let seconds = if unit.starts_with("ms") {
        value / 1000.0
    } else if unit.starts_with('s') {
        value
    } else {
        return None;
    };
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests;
