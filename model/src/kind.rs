//! Which wire protocol an HTTP provider speaks, and what follows from it: its defaults (base
//! URL, key variable), how the key is sent, and which reasoning items its API can take back.

use std::fmt;
use std::str::FromStr;

use arbor_protocol::ResponseItem;

use crate::ModelError;

/// Where the `openai` provider goes unless told otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The environment variable that holds the API key unless `api_key_env` names another.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// `openai`: the Responses API, `POST {base_url}/responses`.
    OpenAi,
    /// `chat`: Chat Completions, `POST {base_url}/chat/completions`, which most
    /// OpenAI-compatible servers speak.
    Chat,
    /// `anthropic`: the Anthropic Messages API, `POST {base_url}/messages`.
    Anthropic,
}

impl ProviderKind {
    /// Every kind, in the order errors list them.
    pub const ALL: [Self; 3] = [Self::OpenAi, Self::Chat, Self::Anthropic];

    /// The name used on the command line and in config.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Chat => "chat",
            Self::Anthropic => "anthropic",
        }
    }

    /// Where this kind's provider goes unless told otherwise.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi | Self::Chat => DEFAULT_BASE_URL,
            Self::Anthropic => "https://api.anthropic.com/v1",
        }
    }

    /// The environment variable that holds the key unless `api_key_env` names another.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Self::OpenAi | Self::Chat => DEFAULT_API_KEY_ENV,
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// Whether requests fail without a key (a local chat server needs none).
    pub fn needs_key(self) -> bool {
        match self {
            Self::OpenAi | Self::Anthropic => true,
            Self::Chat => false,
        }
    }

    /// Whether model names of this kind may hold a `/` (`Qwen/Qwen3-8B` on vLLM,
    /// `openai/gpt-5` on OpenRouter); for the others a `/` always separates a provider.
    pub fn slashed_models(self) -> bool {
        matches!(self, Self::Chat)
    }

    /// Whether this kind's API can take `item` back in a history. Messages, calls and
    /// outputs always go (each API in its own shape); a reasoning item goes only to the API
    /// that made it: encrypted Responses reasoning to `openai`, a thinking block to
    /// `anthropic`, none to `chat`.
    pub fn takes(self, item: &ResponseItem) -> bool {
        let ResponseItem::Reasoning {
            encrypted_content,
            thinking,
            ..
        } = item
        else {
            return true;
        };
        match self {
            Self::OpenAi => encrypted_content.is_some() && thinking.is_none(),
            Self::Anthropic => thinking.is_some(),
            Self::Chat => false,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProviderKind {
    type Err = ModelError;

    /// `openai` (also `responses`), `chat` or `anthropic`.
    fn from_str(text: &str) -> Result<Self, ModelError> {
        match text {
            "openai" | "responses" => Ok(Self::OpenAi),
            "chat" => Ok(Self::Chat),
            "anthropic" => Ok(Self::Anthropic),
            other => Err(ModelError::Config(format!(
                "unknown provider kind `{other}`, expected openai, chat or anthropic"
            ))),
        }
    }
}
