//! The providers a session may use, by name, and how a model reference (`provider/model`, or
//! a bare model name of the default provider) is read against them.

use std::collections::BTreeMap;
use std::fmt;

/// A model at a provider: `provider/model`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// What the catalog knows of one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Its model names may hold a `/` (see `ProviderKind::slashed_models`).
    slashed: bool,
    /// Why it cannot serve requests (a missing key), when it cannot.
    unavailable: Option<String>,
}

/// The providers a session may use, by name, with its default one: what `provider/model`
/// references are resolved and checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    default: String,
    entries: BTreeMap<String, Entry>,
}

impl Catalog {
    /// A catalog of the one provider `name`, the default.
    pub fn single(name: &str) -> Self {
        let mut catalog = Self {
            default: name.to_string(),
            entries: BTreeMap::new(),
        };
        catalog.add(name, false, None);
        catalog
    }

    /// Adds (or replaces) provider `name`; `unavailable` says why it cannot serve requests.
    pub fn add(&mut self, name: &str, slashed: bool, unavailable: Option<String>) {
        self.entries.insert(
            name.to_string(),
            Entry {
                slashed,
                unavailable,
            },
        );
    }

    /// The provider of the root, and of every model named without a provider.
    pub fn default_provider(&self) -> &str {
        &self.default
    }

    /// Makes `name` (a provider of the catalog) the default.
    pub fn set_default(&mut self, name: &str) {
        self.default = name.to_string();
    }

    /// Every provider's name, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.entries.keys().map(String::as_str).collect()
    }

    /// Whether `name` is a provider of the catalog.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// Reads a model reference: `provider/model` when the text before the first `/` names a
    /// provider; otherwise a model of the default provider, which may hold a `/` only when
    /// that provider's names do (a chat server's `Qwen/Qwen3-8B`). The error is the text a
    /// model or a person reads: the unknown provider and the known ones, or why the provider
    /// cannot serve requests.
    pub fn resolve(&self, text: &str) -> Result<ModelRef, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("must not be empty".to_string());
        }
        let reference = match text.split_once('/') {
            Some((provider, model)) if self.contains(provider) => {
                if model.trim().is_empty() {
                    return Err(format!("`{text}` names provider `{provider}` but no model"));
                }
                ModelRef {
                    provider: provider.to_string(),
                    model: model.to_string(),
                }
            }
            Some((provider, _)) if !self.default_slashed() => {
                return Err(format!(
                    "unknown provider `{provider}` in `{text}`, expected one of {} (the providers of config.toml)",
                    self.names().join(", ")
                ));
            }
            _ => ModelRef {
                provider: self.default.clone(),
                model: text.to_string(),
            },
        };
        self.check(&reference.provider)?;
        Ok(reference)
    }

    /// Whether `provider` can serve requests; the error names it and says why not.
    pub fn check(&self, provider: &str) -> Result<(), String> {
        match self.entries.get(provider) {
            None => Err(format!(
                "unknown provider `{provider}`, expected one of {}",
                self.names().join(", ")
            )),
            Some(Entry {
                unavailable: Some(why),
                ..
            }) => Err(format!("provider `{provider}` cannot be used: {why}")),
            Some(_) => Ok(()),
        }
    }

    /// Why provider `name` cannot serve requests (a missing key), when the catalog has it and
    /// it cannot.
    pub fn unavailable(&self, name: &str) -> Option<&str> {
        self.entries
            .get(name)
            .and_then(|entry| entry.unavailable.as_deref())
    }

    fn default_slashed(&self) -> bool {
        self.entries
            .get(&self.default)
            .is_some_and(|entry| entry.slashed)
    }
}
