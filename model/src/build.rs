//! The constructor that picks the HTTP provider of a kind.

use std::sync::Arc;

use crate::anthropic::AnthropicProvider;
use crate::chat::ChatProvider;
use crate::http::{HttpClient, HttpProviderConfig};
use crate::responses::ResponsesProvider;
use crate::{ModelClient, ModelError, ProviderKind};

/// The provider of `kind` for the server `config` describes. Fails on a bad URL or header.
pub fn build_provider(
    kind: ProviderKind,
    config: HttpProviderConfig,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    let http = HttpClient::new(config, kind)?;
    Ok(match kind {
        ProviderKind::OpenAi => Arc::new(ResponsesProvider::new(http)),
        ProviderKind::Chat => Arc::new(ChatProvider::new(http)),
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(http)),
    })
}
