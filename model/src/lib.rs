//! The `ModelClient` trait and its providers: the scripted model, the OpenAI Responses API,
//! Chat Completions and the Anthropic Messages API, with retries and backoff, and the router
//! that puts named providers and fallbacks behind one client.

pub mod anthropic;
pub mod arguments;
mod build;
pub mod chat;
mod client;
mod error;
pub mod http;
mod kind;
pub mod probe;
mod recorded;
pub mod responses;
pub mod retry;
pub mod router;
pub mod scripted;
pub mod sse;
pub mod stream;
mod transport_error;
pub mod window;

pub use build::build_provider;
pub use client::{
    AgentIdentity, BoxFuture, Finish, ModelClient, ModelEvent, ModelEvents, ModelRequest,
    ModelResponse,
};
pub use error::ModelError;
pub use http::{ANTHROPIC_VERSION, DEFAULT_REQUEST_TIMEOUT, HttpProviderConfig, api_key_from_env};
pub use kind::{DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL, ProviderKind};
pub use probe::{ProbeAnswer, probe_models};
pub use recorded::{DecodedStream, decode_stream};
pub use retry::RetryPolicy;
pub use router::{Catalog, Fallbacks, ModelRef, Router};
pub use scripted::{NO_PART, ScriptParts, ScriptedModel, ToolCatalog, part_for};
