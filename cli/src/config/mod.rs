//! `config.toml`: the home one (`$ARBOR_HOME/config.toml`) and the workspace one
//! (`<workspace>/.arbor/config.toml`). Precedence: flags > workspace > home > defaults.
//!
//! A workspace's file is written by whoever wrote the repository: until the user trusts the
//! workspace (`arbor trust`), the keys that decide where the API key goes or what commands
//! inherit, or which programs it starts (`provider`, `base_url`, `api_key_env`, `headers`,
//! `providers`, `shell_environment`, `mcp_servers`) are ignored there, with a notice naming the
//! file; `trusted_workspace` is only read from the home file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::CliError;

/// Per-role model settings (`[roles.<name>]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSettings {
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub max_output_tokens: Option<u32>,
    /// The context window of this role's agents, in tokens.
    pub model_context_window: Option<u64>,
    /// The models (`provider/model`) this role's requests fall back to, in order.
    pub fallbacks: Option<Vec<String>>,
}

/// One named provider (`[providers.<name>]`, see `docs/models.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai`, `chat` or `anthropic`.
    pub kind: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub request_timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Settings of one model (`[models.<name>]`). Naming any model here makes the named ones the
/// models agents may use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    pub max_output_tokens: Option<u32>,
    /// This model's context window, in tokens.
    pub context_window: Option<u64>,
}

/// One `config.toml`, every key optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub request_timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
    /// The most tokens one model response may have (per role and per model below).
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Named providers (`[providers.NAME]`); a workspace's file may add or change them only
    /// once the workspace is trusted.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// The models (`provider/model`) a request falls back to, in order, when its own fails
    /// after its retries (unless its role lists its own).
    pub fallbacks: Option<Vec<String>>,
    #[serde(default)]
    pub roles: BTreeMap<String, RoleSettings>,
    /// How `exec_command` children get their environment.
    pub shell_environment: Option<ShellEnvironmentConfig>,
    /// Workspaces the user trusted (`arbor trust`); read from the home file only.
    #[serde(default)]
    pub trusted_workspace: Vec<TrustedWorkspace>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelSettings>,
    /// Where children that can change files work unless told otherwise: `shared` (the
    /// default) or `worktree`.
    pub worker_isolation: Option<String>,
    /// Merge a worktree child's clean changes back when its turn completes.
    pub auto_merge: Option<bool>,
    /// MCP servers (`[mcp_servers.NAME]`, see `docs/mcp.md`); a workspace's file may add or
    /// replace servers only once the workspace is trusted.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, arbor_mcp::RawServer>,
    /// The context window of every model, in tokens (over the known window of its name).
    pub model_context_window: Option<u64>,
    /// The share of the context window a request may fill before compaction (0.8).
    pub compact_at: Option<f64>,
    /// Delete sessions idle longer than this (`30d`) at the start of every `exec`.
    pub retention: Option<String>,
}

/// One `[[trusted_workspace]]` of the home file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedWorkspace {
    pub path: String,
}

/// `[shell_environment]`: every key optional (see `docs/sandbox.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellEnvironmentConfig {
    /// `all` (the default), `core` or `none`.
    pub inherit: Option<String>,
    pub ignore_default_excludes: Option<bool>,
    /// Names kept despite the default excludes (secrets by name or value, session variables).
    pub keep: Option<Vec<String>>,
    pub exclude: Option<Vec<String>>,
    pub include_only: Option<Vec<String>>,
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

impl ShellEnvironmentConfig {
    /// `other` over `self`, key by key (`set` merges entry by entry).
    fn overlay(mut self, other: ShellEnvironmentConfig) -> Self {
        if other.inherit.is_some() {
            self.inherit = other.inherit;
        }
        if other.ignore_default_excludes.is_some() {
            self.ignore_default_excludes = other.ignore_default_excludes;
        }
        if other.keep.is_some() {
            self.keep = other.keep;
        }
        if other.exclude.is_some() {
            self.exclude = other.exclude;
        }
        if other.include_only.is_some() {
            self.include_only = other.include_only;
        }
        self.set.extend(other.set);
        self
    }
}

impl FileConfig {
    /// The environment policy of `exec_command`; `never` are the names never passed (the
    /// provider's key variable).
    pub fn shell_environment(
        &self,
        never: Vec<String>,
    ) -> Result<arbor_tools::ShellEnvironment, CliError> {
        let table = self.shell_environment.clone().unwrap_or_default();
        let inherit = match table.inherit.as_deref() {
            None => arbor_tools::Inherit::All,
            Some(text) => arbor_tools::Inherit::parse(text).ok_or_else(|| {
                CliError::usage(format!(
                    "config: shell_environment.inherit must be all, core or none, not `{text}`"
                ))
            })?,
        };
        Ok(arbor_tools::ShellEnvironment {
            inherit,
            ignore_default_excludes: table.ignore_default_excludes.unwrap_or(false),
            keep: table.keep.unwrap_or_default(),
            exclude: table.exclude.unwrap_or_default(),
            include_only: table.include_only.unwrap_or_default(),
            set: table.set,
            never,
        })
    }
}

impl FileConfig {
    /// `other` over `self`, key by key (maps merge entry by entry).
    fn overlay(mut self, other: FileConfig) -> FileConfig {
        macro_rules! take {
            ($($field:ident),*) => { $( if other.$field.is_some() { self.$field = other.$field; } )* };
        }
        take!(
            model,
            reasoning_effort,
            provider,
            base_url,
            api_key_env,
            request_timeout_secs,
            max_retries,
            max_output_tokens,
            worker_isolation,
            auto_merge,
            model_context_window,
            compact_at,
            retention,
            fallbacks
        );
        self.headers.extend(other.headers);
        self.shell_environment = match (self.shell_environment, other.shell_environment) {
            (Some(base), Some(over)) => Some(base.overlay(over)),
            (base, over) => over.or(base),
        };
        for (role, settings) in other.roles {
            let entry = self.roles.entry(role).or_default();
            if settings.model.is_some() {
                entry.model = settings.model;
            }
            if settings.reasoning_effort.is_some() {
                entry.reasoning_effort = settings.reasoning_effort;
            }
            if settings.max_output_tokens.is_some() {
                entry.max_output_tokens = settings.max_output_tokens;
            }
            if settings.model_context_window.is_some() {
                entry.model_context_window = settings.model_context_window;
            }
            if settings.fallbacks.is_some() {
                entry.fallbacks = settings.fallbacks;
            }
        }
        // A provider is one whole table, as a server is.
        self.providers.extend(other.providers);
        // A server is one whole table: the workspace's replaces the home's of the same name.
        self.mcp_servers.extend(other.mcp_servers);
        for (model, settings) in other.models {
            let entry = self.models.entry(model).or_default();
            if settings.max_output_tokens.is_some() {
                entry.max_output_tokens = settings.max_output_tokens;
            }
            if settings.context_window.is_some() {
                entry.context_window = settings.context_window;
            }
        }
        self
    }
}

fn read(path: &Path) -> Result<FileConfig, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(FileConfig::default()),
        Err(err) => {
            return Err(CliError::usage(format!(
                "config file {}: {err}",
                path.display()
            )));
        }
    };
    toml::from_str(&text).map_err(|err| {
        CliError::usage(format!(
            "config file {}: {}",
            path.display(),
            err.to_string().trim_end()
        ))
    })
}

/// The merged configuration for a session in `workspace`. Keys an untrusted workspace may not
/// set are dropped from its file, and the notices that say so (and those of the rules an
/// untrusted workspace may not add) are printed on stderr.
pub fn load(home: &Path, workspace: &Path) -> Result<FileConfig, CliError> {
    let (config, notices) = load_quietly(home, workspace)?;
    for notice in notices {
        eprintln!("{notice}");
    }
    Ok(config)
}

/// [`load`], with the notices returned instead of printed.
pub fn load_quietly(home: &Path, workspace: &Path) -> Result<(FileConfig, Vec<String>), CliError> {
    let home_config = read(&home.join("config.toml"))?;
    let file = workspace_file(workspace);
    let mut workspace_config = read(&file)?;
    let mut notices = Vec::new();
    if !workspace_config.trusted_workspace.is_empty() {
        workspace_config.trusted_workspace.clear();
        notices.push(format!(
            "notice: ignoring trusted_workspace in {}: only {} can trust a workspace",
            file.display(),
            home.join("config.toml").display()
        ));
    }
    if !arbor_tools::workspace_trusted(home, workspace) {
        let ignored = workspace_config.drop_untrusted_keys();
        if !ignored.is_empty() {
            notices.push(format!(
                "notice: ignoring {} in {}: the workspace is not trusted (run `arbor trust {}` \
                 to trust it)",
                ignored.join(", "),
                file.display(),
                workspace.display()
            ));
        }
    }
    // The rules load again when the session opens (and report their errors then).
    if let Ok(policy) = arbor_tools::Policy::load(home, workspace) {
        notices.extend(policy.notices().iter().cloned());
    }
    Ok((home_config.overlay(workspace_config), notices))
}

impl FileConfig {
    /// Removes the keys only a trusted workspace may set; returns their names.
    fn drop_untrusted_keys(&mut self) -> Vec<&'static str> {
        let mut ignored = Vec::new();
        if self.provider.take().is_some() {
            ignored.push("provider");
        }
        if self.base_url.take().is_some() {
            ignored.push("base_url");
        }
        if self.api_key_env.take().is_some() {
            ignored.push("api_key_env");
        }
        if !std::mem::take(&mut self.headers).is_empty() {
            ignored.push("headers");
        }
        // A provider names a URL and a key variable: where the key goes.
        if !std::mem::take(&mut self.providers).is_empty() {
            ignored.push("providers");
        }
        if self.shell_environment.take().is_some() {
            ignored.push("shell_environment");
        }
        // A server is a program arbor starts: a cloned repository does not choose one.
        if !std::mem::take(&mut self.mcp_servers).is_empty() {
            ignored.push("mcp_servers");
        }
        ignored
    }
}

fn workspace_file(workspace: &Path) -> PathBuf {
    workspace.join(".arbor").join("config.toml")
}

#[cfg(test)]
mod tests;
