//! The `ModelClient` trait and its providers: the scripted model, the OpenAI Responses API and
//! Chat Completions, with retries and backoff.

pub mod arguments;
pub mod chat;
mod client;
mod error;
pub mod http;
pub mod responses;
pub mod retry;
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
    DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_REQUEST_TIMEOUT, HttpProviderConfig,
    ProviderKind, api_key_from_env, build_provider,
};
pub use retry::RetryPolicy;
pub use scripted::{ScriptedModel, ToolCatalog};
pub use stream::{DecodedStream, decode_stream};
