//! From a streamed response body to a `ModelResponse`: SSE framing, the provider's decoder,
//! early `ModelEvent::ItemDone` reports, idle timeouts, and what counts as a complete stream.

use std::time::Duration;

use arbor_protocol::ResponseItem;

use crate::ProviderKind;
use crate::retry::Failure;
use crate::sse::{SseEvent, SseParser};
use crate::{ModelError, ModelEvent, ModelEvents, ModelResponse, anthropic, chat, responses};

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
                    crate::http::describe(&error)
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

fn invalid(error: crate::ModelError) -> Failure {
    Failure::retry(error.to_string())
}

/// Hands parsed events to the decoder and reports the items they finish.
fn deliver<D: Decoder>(
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

/// What [`decode_stream`] made of a recorded stream.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedStream {
    pub response: ModelResponse,
    /// Server-sent events parsed.
    pub events: usize,
    /// Items reported as done while the stream was read.
    pub items_reported: usize,
}

/// Decodes a recorded response body fed as `chunks`, exactly as the provider of `kind` reads
/// one off the network (minus the network). For benchmarks and fixture checks.
pub fn decode_stream<'a>(
    kind: ProviderKind,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<DecodedStream, ModelError> {
    match kind {
        ProviderKind::OpenAi => decode_with(responses::ResponsesDecoder::default(), chunks),
        ProviderKind::Chat => decode_with(chat::ChatDecoder::default(), chunks),
        ProviderKind::Anthropic => decode_with(anthropic::AnthropicDecoder::default(), chunks),
    }
}

fn decode_with<'a, D: Decoder>(
    mut decoder: D,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<DecodedStream, ModelError> {
    let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut parser = SseParser::new();
    let mut parsed = Vec::new();
    let mut done = Vec::new();
    let mut count = 0;
    let mut items_reported = 0;
    let fail = |failure: Failure| failure.into_final(1);
    let mut complete = false;
    for chunk in chunks {
        parser
            .feed(chunk, &mut parsed)
            .map_err(|e| fail(invalid(e)))?;
        count += parsed.len();
        complete = deliver(&mut decoder, &mut parsed, &mut done, &events).map_err(fail)?
            == Progress::Complete;
        while receiver.try_recv().is_ok() {
            items_reported += 1;
        }
        if complete {
            break;
        }
    }
    if !complete {
        parser.finish(&mut parsed).map_err(|e| fail(invalid(e)))?;
        count += parsed.len();
        deliver(&mut decoder, &mut parsed, &mut done, &events).map_err(fail)?;
        while receiver.try_recv().is_ok() {
            items_reported += 1;
        }
    }
    Ok(DecodedStream {
        response: decoder.finish().map_err(fail)?,
        events: count,
        items_reported,
    })
}
