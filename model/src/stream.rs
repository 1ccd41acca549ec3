//! From a streamed response body to a `ModelResponse`: SSE framing, the provider's decoder,
//! early `ModelEvent::ItemDone` reports, idle timeouts, and what counts as a complete stream.

use std::time::Duration;

use arbor_protocol::ResponseItem;

use crate::retry::Failure;
use crate::sse::{SseEvent, SseParser};
use crate::{ModelEvent, ModelEvents, ModelResponse};

/// The call ids of one response so far: a call a server repeats (again in a final summary,
/// or twice under one id) is kept, and so run, once.
#[derive(Debug, Default)]
pub(crate) struct CallIds(std::collections::HashSet<String>);

impl CallIds {
    /// False when `item` is a call whose id this response already holds.
    pub(crate) fn first(&mut self, item: &ResponseItem) -> bool {
        match item {
            ResponseItem::FunctionCall { call_id, .. } => self.0.insert(call_id.clone()),
            _ => true,
        }
    }
}

/// Whether the stream has said all it will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    More,
    Complete,
}

/// One provider's reading of its event stream. A decoder lives for one attempt.
pub(crate) trait Decoder {
    /// Handles one event; output items it completes are appended to `done`.
    fn on_event(
        &mut self,
        event: SseEvent,
        done: &mut Vec<ResponseItem>,
    ) -> Result<Progress, Failure>;

    /// The response once the stream has completed or ended; a stream that ended before its
    /// completion is a retryable failure.
    fn finish(self) -> Result<ModelResponse, Failure>;
}

/// Reads `response` to its completion, reporting finished items as they arrive. `idle` bounds
/// the wait for each read.
pub(crate) async fn read_stream<D: Decoder>(
    mut response: reqwest::Response,
    mut decoder: D,
    events: &ModelEvents,
    idle: Duration,
) -> Result<ModelResponse, Failure> {
    let mut parser = SseParser::new();
    let mut parsed = Vec::new();
    let mut done = Vec::new();
    loop {
        let chunk = match tokio::time::timeout(idle, response.chunk()).await {
            Err(_) => {
                return Err(Failure::retry(format!(
                    "the stream was idle for {} s",
                    idle.as_secs_f64()
                )));
            }
            Ok(Err(error)) => {
                return Err(Failure::retry(format!(
                    "the stream broke: {}",
                    crate::transport_error::describe(&error)
                )));
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => chunk,
        };
        parser.feed(&chunk, &mut parsed).map_err(invalid)?;
        if deliver(&mut decoder, &mut parsed, &mut done, events)? == Progress::Complete {
            return decoder.finish();
        }
    }
    parser.finish(&mut parsed).map_err(invalid)?;
    deliver(&mut decoder, &mut parsed, &mut done, events)?;
    decoder.finish()
}

pub(crate) fn invalid(error: crate::ModelError) -> Failure {
    Failure::retry(error.to_string())
}

/// Hands parsed events to the decoder and reports the items they finish.
pub(crate) fn deliver<D: Decoder>(
    decoder: &mut D,
    parsed: &mut Vec<SseEvent>,
    done: &mut Vec<ResponseItem>,
    events: &ModelEvents,
) -> Result<Progress, Failure> {
    let mut progress = Progress::More;
    for event in parsed.drain(..) {
        progress = decoder.on_event(event, done)?;
        for item in done.drain(..) {
            // A dropped receiver only means nobody is watching the stream.
            let _ = events.send(ModelEvent::ItemDone(item));
        }
        if progress == Progress::Complete {
            break;
        }
    }
    parsed.clear();
    Ok(progress)
}
