//! The `anthropic` provider: the Anthropic Messages API, `POST {base_url}/messages`, streamed,
//! with the key in `x-api-key` and `anthropic-version: 2023-06-01`.
//!
//! The body is written field by field in the order the API reads a prompt (tools, system,
//! then messages), so two agents of one role send the same bytes up to their first message.
//! Prompt caching marks that stable prefix (the last tool, the system prompt) and the history
//! (`messages.rs`). A role's reasoning effort turns on extended thinking with a token budget;
//! thinking blocks are kept (with their signatures) and sent back as the API requires.
//! Each content block is reported as soon as its `content_block_stop` arrives
//! (`decoder.rs`).

mod decoder;
mod messages;

use serde::Serialize;
use serde_json::Value;

pub(crate) use decoder::AnthropicDecoder;
pub use messages::MAX_CACHE_BREAKPOINTS;

use crate::http::HttpClient;
use crate::{BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse};

/// `max_tokens` when nothing configures `max_output_tokens` (the API requires one): what every
/// current Claude model can write.
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;
/// Room for the answer above the thinking budget when `max_tokens` is the default.
pub const ANSWER_TOKENS: u32 = 4_096;
/// The smallest thinking budget the API takes.
pub const MIN_THINKING_BUDGET: u32 = 1_024;

/// The provider for the Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    http: HttpClient,
}

impl AnthropicProvider {
    pub(crate) fn new(http: HttpClient) -> Self {
        Self { http }
    }
}

impl ModelClient for AnthropicProvider {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = request_body(request)?;
            self.http
                .stream_encoded("/messages", body, events, AnthropicDecoder::default)
                .await
        })
    }
}

/// The thinking budget a reasoning effort asks for; `None` for no thinking.
pub fn thinking_budget(effort: Option<&str>) -> Option<u32> {
    match effort? {
        "minimal" => Some(MIN_THINKING_BUDGET),
        "low" => Some(2_048),
        "medium" => Some(8_192),
        "high" => Some(16_384),
        "xhigh" => Some(24_576),
        // `none`, and whatever a server of another kind took.
        _ => None,
    }
}

/// `max_tokens` and the thinking budget of `request`: the configured output limit (else the
/// default, with room for the budget), and a budget below it of at least the API's minimum.
fn limits(request: &ModelRequest) -> (u32, Option<u32>) {
    let wanted = thinking_budget(request.reasoning_effort.as_deref());
    let max_tokens = match (request.max_output_tokens, wanted) {
        (Some(limit), _) => limit,
        (None, Some(budget)) => budget + ANSWER_TOKENS,
        (None, None) => DEFAULT_MAX_TOKENS,
    };
    let budget = wanted
        .map(|budget| budget.min(max_tokens.saturating_sub(MIN_THINKING_BUDGET)))
        .filter(|budget| *budget >= MIN_THINKING_BUDGET);
    (max_tokens, budget)
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<messages::Block<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingParam>,
    messages: Vec<messages::Message<'a>>,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<messages::CacheControl>,
}

#[derive(Serialize)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
    disable_parallel_tool_use: bool,
}

#[derive(Serialize)]
struct ThinkingParam {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

/// The encoded body of a streamed Messages request.
pub fn request_body(request: &ModelRequest) -> Result<Vec<u8>, ModelError> {
    let (max_tokens, budget) = limits(request);
    let history = messages::translate(&request.input);
    let mut tools: Vec<Tool<'_>> = request
        .tools
        .iter()
        .map(|tool| Tool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.parameters,
            cache_control: None,
        })
        .collect();
    // The stable prefix: tools, then the system prompt, each cached up to its end.
    if let Some(last) = tools.last_mut() {
        last.cache_control = Some(messages::CacheControl::EPHEMERAL);
    }
    let system = if request.instructions.is_empty() {
        Vec::new()
    } else {
        vec![messages::Block::cached_text(&request.instructions)]
    };
    let body = Body {
        model: &request.model,
        max_tokens,
        stream: true,
        tool_choice: (!tools.is_empty()).then_some(ToolChoice {
            kind: "auto",
            disable_parallel_tool_use: !request.parallel_tool_calls,
        }),
        tools,
        system,
        thinking: budget
            .filter(|_| history.thinking_allowed)
            .map(|budget_tokens| ThinkingParam {
                kind: "enabled",
                budget_tokens,
            }),
        messages: history.messages,
    };
    serde_json::to_vec(&body)
        .map_err(|error| ModelError::Config(format!("cannot encode the request: {error}")))
}

#[cfg(test)]
mod tests;
