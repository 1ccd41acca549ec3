//! The provider-neutral request, response and streaming-event types, and the `ModelClient` seam.

use std::future::Future;
use std::pin::Pin;

use arbor_protocol::{AgentPath, ResponseItem, ThreadId, ToolSpec, Usage};
use tokio::sync::mpsc;

use crate::{Catalog, ModelError};

/// A boxed, sendable future: what `ModelClient` methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is asking: providers that route or template by agent (the scripted model) use this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentIdentity {
    pub thread_id: ThreadId,
    pub path: AgentPath,
    pub nickname: Option<String>,
    pub role: String,
}

/// One model request: everything the agent sends for one response.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub agent: AgentIdentity,
    /// The provider that serves `model`, by its configured name; `None`: the default one.
    /// Only a client over several providers (`Router`) reads it.
    pub provider: Option<String>,
    pub model: String,
    pub reasoning_effort: Option<String>,
    /// System/developer instructions (role instructions included).
    /// Shared: every agent of a role in one directory has the same text.
    pub instructions: std::sync::Arc<str>,
    /// The agent's history, oldest first, ending with the newest input. Shared with the
    /// agent's own copy: a request costs no copy of a long history.
    pub input: std::sync::Arc<Vec<ResponseItem>>,
    /// Every tool the agent is offered, in a stable order (shared: it is the same list for
    /// every request of an agent).
    pub tools: std::sync::Arc<Vec<ToolSpec>>,
    pub parallel_tool_calls: bool,
    /// The most tokens the response may have (`max_output_tokens` in config); `None` leaves
    /// it to the server. A response cut there ends with [`Finish::OutputLimit`].
    pub max_output_tokens: Option<u32>,
}

/// The complete output of one model response.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelResponse {
    /// Output items in the order the model produced them: messages, reasoning, function calls.
    pub items: Vec<ResponseItem>,
    pub usage: Option<Usage>,
    /// How the model stopped.
    pub finish: Finish,
    /// The provider and model that answered, when a client over several says (`Router`).
    pub served_by: Option<arbor_protocol::ServedBy>,
}

/// How a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Finish {
    /// The model said all it meant to.
    #[default]
    Completed,
    /// The output limit cut the response (`finish_reason: length`, or an incomplete Responses
    /// answer for `max_output_tokens`): its last text may stop mid-sentence and its last call
    /// may have incomplete arguments. Complete items before the cut are kept.
    OutputLimit,
}

/// Progress reported while a response streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// An output item is complete: a function call may start running now.
    ItemDone(ResponseItem),
    /// A retryable failure; the provider waits `retry_in_ms` and tries again. The next attempt
    /// starts the response over: items reported before this event are void.
    Retrying { reason: String, retry_in_ms: u64 },
    /// The request goes to a fallback model now: `from` (`provider/model`) failed after its
    /// retries, or is cooling down after such a failure. Like a retry, the response starts
    /// over: items reported before this event are void.
    Fallback(arbor_protocol::ModelFallback),
}

/// Where a provider reports streaming progress. Dropped receivers are fine.
pub type ModelEvents = mpsc::UnboundedSender<ModelEvent>;

/// A model provider. The scripted model and the HTTP providers all sit behind this trait, and
/// the orchestrator only ever talks to it.
pub trait ModelClient: Send + Sync + 'static {
    /// A short provider name for logs (`script`, `openai`, `chat`, `anthropic`).
    fn provider(&self) -> &str;

    /// The providers this client serves, by name: what a `provider/model` reference is
    /// checked against. One provider, [`ModelClient::provider`], unless the client routes.
    fn catalog(&self) -> Catalog {
        Catalog::single(self.provider())
    }

    /// Produces one response. Completed output items may be reported early through `events`;
    /// the returned response always holds every item. Dropping the future cancels the request.
    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
}
