//! The `ModelClient` trait and its providers: the scripted model, the OpenAI Responses API and
//! Chat Completions, with retries and backoff.

mod client;
pub mod scripted;

pub use client::{
    AgentIdentity, BoxFuture, ModelClient, ModelError, ModelEvent, ModelEvents, ModelRequest,
    ModelResponse,
};
pub use scripted::{ScriptError, ScriptedModel};
