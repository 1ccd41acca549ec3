//! The `ModelClient` trait and its providers: the scripted model, the OpenAI Responses API,
//! Chat Completions and the Anthropic Messages API, with retries and backoff, and the router
//! that puts named providers and fallbacks behind one client.

pub mod anthropic;
pub mod arguments;
pub mod chat;
mod client;
mod error;
pub mod http;
mod kind;
pub mod probe;
pub mod responses;
pub mod retry;
pub mod router;
pub mod scripted;
pub mod sse;
pub mod stream;
pub mod window;

pub use client::{
    AgentIdentity, BoxFuture, Finish, ModelClient, ModelEvent, ModelEvents, ModelRequest,
    ModelResponse,
};
pub use error::ModelError;
pub use http::{
    ANTHROPIC_VERSION, DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_REQUEST_TIMEOUT,
    HttpProviderConfig, api_key_from_env, build_provider,
};
pub use kind::ProviderKind;
pub use probe::{ProbeAnswer, probe_models};
pub use retry::RetryPolicy;
pub use router::{Catalog, Fallbacks, ModelRef, Router};
pub use scripted::{ScriptedModel, ToolCatalog};
pub use stream::{DecodedStream, decode_stream};
