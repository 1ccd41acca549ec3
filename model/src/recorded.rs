//! Decoding a recorded response body exactly as a provider reads one off the network, for
//! benchmarks and fixture checks.

use crate::anthropic::AnthropicDecoder;
use crate::chat::ChatDecoder;
use crate::responses::ResponsesDecoder;
use crate::retry::Failure;
use crate::sse::SseParser;
use crate::stream::{Decoder, Progress, deliver, invalid};
use crate::{ModelError, ModelResponse, ProviderKind};

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
        ProviderKind::OpenAi => decode_with(ResponsesDecoder::default(), chunks),
        ProviderKind::Chat => decode_with(ChatDecoder::default(), chunks),
        ProviderKind::Anthropic => decode_with(AnthropicDecoder::default(), chunks),
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
