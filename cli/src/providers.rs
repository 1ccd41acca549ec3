//! The providers of a run, from the options and `config.toml`: the named `[providers.NAME]`,
//! the session's default provider (the root's), the implicit provider the top-level keys
//! describe, the fallbacks, and the router that puts them behind one model client.
//!
//! The session's default is the provider the session's model reference names (`--model
//! claude/claude-opus-4-1`), else `--provider` or `provider` (a kind, or a configured name),
//! else `script` with `--script`, else `openai`. A default that no `[providers]` table names is
//! built from the top-level keys (`base_url`, `api_key_env`, `headers`, timeouts), as before
//! providers had names; `--base-url` applies to the default whichever it is.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arbor_model::{
    Catalog, Fallbacks, HttpProviderConfig, ModelClient, ModelError, ModelRef, ProviderKind,
    Router, ScriptedModel, build_provider,
};

use crate::args::{Provider, RunOptions};
use crate::config::{FileConfig, ProviderSettings};
use crate::error::CliError;

/// The name of the scripted model's provider.
const SCRIPT: &str = "script";

/// One provider of the run, not built yet.
#[derive(Debug)]
enum Planned {
    Script,
    Http {
        kind: ProviderKind,
        config: HttpProviderConfig,
    },
}

/// The providers a run may use and how its models resolve against them; no client is built
/// and no key read until [`Plan::build`].
#[derive(Debug)]
pub struct Plan {
    default: String,
    /// The session's model without its provider; `None` when nothing names one.
    model: Option<String>,
    providers: BTreeMap<String, Planned>,
    fallbacks: Fallbacks,
    /// The `[roles.<name>].model` references, with the key that named them.
    role_models: Vec<(String, ModelRef)>,
    /// The top-level `api_key_env`: a key variable whatever provider the run uses.
    key_variable: Option<String>,
}

fn usage(message: String) -> CliError {
    CliError::usage(message)
}

impl Plan {
    /// The providers `run` and `file` describe. Fails on a provider that is not one, a model
    /// or fallback naming an unknown provider, and top-level provider keys that would be
    /// ignored.
    pub fn new(run: &RunOptions, file: &FileConfig) -> Result<Self, CliError> {
        let mut providers = BTreeMap::new();
        for (name, settings) in &file.providers {
            let planned = configured(name, settings)?;
            providers.insert(name.clone(), planned);
        }
        let explicit = run
            .provider
            .map(|provider| flag_name(provider).to_string())
            .or_else(|| file.provider.clone());
        if let Some(name) = &explicit
            && !providers.contains_key(name)
            && name != SCRIPT
            && name.parse::<ProviderKind>().is_err()
        {
            let configured: Vec<&str> = providers.keys().map(String::as_str).collect();
            return Err(usage(format!(
                "config: provider must be openai, chat, anthropic, script or one of [providers] ({}), not `{name}`",
                if configured.is_empty() {
                    "none configured".to_string()
                } else {
                    configured.join(", ")
                }
            )));
        }
        let text = run.model.clone().or_else(|| file.model.clone());
        let named = text
            .as_deref()
            .and_then(|text| text.split_once('/'))
            .map(|(provider, _)| provider.to_string())
            // A configured name; or, when nothing else chose one, a kind's implicit provider
            // (`--model anthropic/claude-sonnet-4-5`). Otherwise the text is a model name
            // with a `/` (a chat server's `openai/gpt-5`).
            .filter(|provider| {
                providers.contains_key(provider)
                    || (explicit.is_none()
                        && (provider == SCRIPT || provider.parse::<ProviderKind>().is_ok()))
            });
        let default = match (&named, &explicit) {
            (Some(named), Some(explicit)) if named != explicit => {
                return Err(usage(format!(
                    "the model `{}` names provider `{named}`, but the session's provider is `{explicit}` (--provider or `provider`): name one of them",
                    text.as_deref().unwrap_or_default()
                )));
            }
            (Some(named), _) => named.clone(),
            (None, Some(explicit)) => explicit.clone(),
            (None, None) if run.script.is_some() => SCRIPT.to_string(),
            (None, None) => ProviderKind::OpenAi.name().to_string(),
        };
        match providers.get_mut(&default) {
            Some(Planned::Http { config, .. }) => {
                let stray = top_level_keys(file);
                if !stray.is_empty() {
                    return Err(usage(format!(
                        "config: {} describe the provider of the top-level keys, but the session's provider `{default}` is configured under [providers.{default}]: set them there",
                        stray.join(", ")
                    )));
                }
                if let Some(url) = &run.base_url {
                    config.base_url = url.clone();
                }
            }
            Some(Planned::Script) => {}
            None => {
                let planned = implicit(&default, run, file)?;
                providers.insert(default.clone(), planned);
            }
        }
        let mut plan = Self {
            default,
            model: None,
            providers,
            fallbacks: Fallbacks::default(),
            role_models: Vec::new(),
            key_variable: file.api_key_env.clone(),
        };
        let catalog = plan.catalog();
        let resolve = |key: &str, text: &str| {
            catalog
                .resolve(text)
                .map_err(|message| usage(format!("config: `{key}`: {message}")))
        };
        if let Some(text) = &text {
            plan.model = Some(resolve("model", text)?.model);
        }
        let chain = |key: &str, list: &[String]| -> Result<Vec<ModelRef>, CliError> {
            list.iter().map(|text| resolve(key, text)).collect()
        };
        if let Some(list) = &file.fallbacks {
            plan.fallbacks.session = chain("fallbacks", list)?;
        }
        for (role, settings) in &file.roles {
            if let Some(list) = &settings.fallbacks {
                let key = format!("roles.{role}.fallbacks");
                plan.fallbacks
                    .roles
                    .insert(role.clone(), chain(&key, list)?);
            }
            if let Some(text) = &settings.model {
                let key = format!("roles.{role}.model");
                plan.role_models.push((key.clone(), resolve(&key, text)?));
            }
        }
        Ok(plan)
    }

    /// The providers by name, each taken as usable (keys are read by [`Plan::build`]).
    pub fn catalog(&self) -> Catalog {
        let mut catalog = Catalog::single(&self.default);
        for (name, planned) in &self.providers {
            let slashed = match planned {
                Planned::Script => false,
                Planned::Http { kind, .. } => kind.slashed_models(),
            };
            catalog.add(name, slashed, None);
        }
        catalog
    }

    /// The default provider's kind and configuration, its key read, for a check that talks to
    /// it (`arbor doctor`); `None` for the scripted model.
    pub fn default_http(&self) -> Result<Option<(ProviderKind, HttpProviderConfig)>, CliError> {
        match self.providers.get(&self.default) {
            Some(Planned::Http { kind, config }) => {
                let mut config = config.clone();
                config.api_key = key(*kind, &config).map_err(|err| usage(err.to_string()))?;
                Ok(Some((*kind, config)))
            }
            Some(Planned::Script) | None => Ok(None),
        }
    }

    /// The session's model, without its provider.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Every variable a key of the run may be in: never passed to the commands agents run.
    pub fn key_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .providers
            .values()
            .filter_map(|planned| match planned {
                Planned::Http { config, .. } => Some(config.api_key_env.clone()),
                Planned::Script => None,
            })
            .collect();
        names.push(arbor_model::DEFAULT_API_KEY_ENV.to_string());
        names.extend(self.key_variable.clone());
        names.sort();
        names.dedup();
        names
    }

    /// Reads the keys and builds every provider behind one router. The default provider,
    /// the fallbacks and the providers of `[roles]` must be usable (their keys set); any
    /// other provider without its key fails only the requests and spawns that name it.
    pub fn build(
        self,
        run: &RunOptions,
        file: &FileConfig,
    ) -> Result<Arc<dyn ModelClient>, CliError> {
        let mut router = Router::new(&self.default);
        match self.providers.get(&self.default) {
            Some(Planned::Script) if run.script.is_none() => {
                return Err(usage(
                    "--provider script needs --script FILE (see docs/scripted-model.md)"
                        .to_string(),
                ));
            }
            Some(Planned::Http { kind, .. }) if run.script.is_some() => {
                return Err(usage(format!(
                    "--script is for the scripted model; drop it or use --provider script (not {})",
                    kind.name()
                )));
            }
            Some(Planned::Http { kind, .. }) if self.model.is_none() => {
                return Err(usage(format!(
                    "no model name for the {} provider: pass --model NAME or set `model` in config.toml (see docs/models.md)",
                    kind.name()
                )));
            }
            _ => {}
        }
        // The script is checked against the tools arbor offers before anything runs.
        let scripted = match &run.script {
            Some(path)
                if self
                    .providers
                    .values()
                    .any(|p| matches!(p, Planned::Script)) =>
            {
                let model = crate::script::load(path, file)?;
                // Nothing reads the recorded requests here; keeping them costs memory that
                // grows with the square of a long run's history.
                model.set_recording(false);
                Some(Arc::new(model))
            }
            _ => None,
        };
        for (name, planned) in self.providers {
            let (kind, client) = match planned {
                Planned::Script => (None, script(scripted.clone())),
                Planned::Http { kind, mut config } => {
                    let client = key(kind, &config).and_then(|key| {
                        config.api_key = key;
                        build_provider(kind, config)
                    });
                    (Some(kind), client)
                }
            };
            router = router.with_provider(&name, kind, client);
        }
        let catalog = router.catalog();
        catalog.check(&self.default).map_err(|message| {
            // The default provider's own reason (a missing key), as before providers had names.
            usage(
                catalog
                    .unavailable(&self.default)
                    .map_or(message, str::to_string),
            )
        })?;
        let needed = self
            .fallbacks
            .session
            .iter()
            .map(|target| ("fallbacks".to_string(), target))
            .chain(self.fallbacks.roles.iter().flat_map(|(role, list)| {
                list.iter()
                    .map(move |target| (format!("roles.{role}.fallbacks"), target))
            }))
            .chain(
                self.role_models
                    .iter()
                    .map(|(key, target)| (key.clone(), target)),
            );
        for (key, target) in needed {
            catalog
                .check(&target.provider)
                .map_err(|message| usage(format!("config: `{key}`: {message}")))?;
        }
        Ok(Arc::new(router.with_fallbacks(self.fallbacks)))
    }
}

/// The scripted model of `--script`, loaded and checked.
fn script(model: Option<Arc<ScriptedModel>>) -> Result<Arc<dyn ModelClient>, ModelError> {
    let model = model
        .ok_or_else(|| ModelError::Config("the scripted model needs --script FILE".to_string()))?;
    Ok(model)
}

/// The key of a provider: required for the kinds that need one, optional for a chat server.
fn key(kind: ProviderKind, config: &HttpProviderConfig) -> Result<Option<String>, ModelError> {
    if kind.needs_key() {
        return arbor_model::api_key_from_env(&config.api_key_env).map(Some);
    }
    Ok(std::env::var(&config.api_key_env)
        .ok()
        .filter(|key| !key.trim().is_empty()))
}

fn flag_name(provider: Provider) -> &'static str {
    match provider {
        Provider::Openai => ProviderKind::OpenAi.name(),
        Provider::Chat => ProviderKind::Chat.name(),
        Provider::Anthropic => ProviderKind::Anthropic.name(),
        Provider::Script => SCRIPT,
    }
}

/// The top-level keys that describe the implicit provider, when set.
fn top_level_keys(file: &FileConfig) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if file.base_url.is_some() {
        keys.push("base_url");
    }
    if file.api_key_env.is_some() {
        keys.push("api_key_env");
    }
    if !file.headers.is_empty() {
        keys.push("headers");
    }
    keys
}

/// `[providers.<name>]` as a provider.
fn configured(name: &str, settings: &ProviderSettings) -> Result<Planned, CliError> {
    if name.is_empty() || name.contains('/') || name == SCRIPT {
        return Err(usage(format!(
            "config: [providers.{name}]: a provider's name may not be empty, hold a `/` or be `script`"
        )));
    }
    let kind: ProviderKind = settings.kind.parse().map_err(|err: ModelError| {
        usage(format!(
            "config: `providers.{name}.kind`: {}",
            err.to_string().trim_start_matches("model configuration: ")
        ))
    })?;
    let mut config = HttpProviderConfig::new(
        settings
            .base_url
            .clone()
            .unwrap_or_else(|| kind.default_base_url().to_string()),
    );
    config.api_key_env = settings
        .api_key_env
        .clone()
        .unwrap_or_else(|| kind.default_key_env().to_string());
    limits(
        &mut config,
        settings.request_timeout_secs,
        settings.max_retries,
    );
    config.extra_headers = headers(&settings.headers);
    Ok(Planned::Http { kind, config })
}

/// The provider of the top-level keys, named by its kind.
fn implicit(name: &str, run: &RunOptions, file: &FileConfig) -> Result<Planned, CliError> {
    if name == SCRIPT {
        return Ok(Planned::Script);
    }
    let kind: ProviderKind = name
        .parse()
        .map_err(|err: ModelError| usage(err.to_string()))?;
    let base_url = run
        .base_url
        .clone()
        .or_else(|| file.base_url.clone())
        .unwrap_or_else(|| kind.default_base_url().to_string());
    let mut config = HttpProviderConfig::new(base_url);
    config.api_key_env = file
        .api_key_env
        .clone()
        .unwrap_or_else(|| kind.default_key_env().to_string());
    limits(&mut config, file.request_timeout_secs, file.max_retries);
    config.extra_headers = headers(&file.headers);
    Ok(Planned::Http { kind, config })
}

fn limits(config: &mut HttpProviderConfig, timeout_secs: Option<u64>, retries: Option<u32>) {
    if let Some(secs) = timeout_secs {
        config.request_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(retries) = retries {
        config.retry.max_attempts = retries.saturating_add(1);
    }
}

fn headers(table: &BTreeMap<String, String>) -> Vec<(String, String)> {
    table
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

#[cfg(test)]
mod tests;
