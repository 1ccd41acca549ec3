//! `config.toml`: the home one (`$ARBOR_HOME/config.toml`) and the workspace one
//! (`<workspace>/.arbor/config.toml`). Precedence: flags > workspace > home > defaults.

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
}

/// Settings of one model (`[models.<name>]`). Naming any model here makes the named ones the
/// models agents may use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    pub max_output_tokens: Option<u32>,
}

/// One `config.toml`, every key optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
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
    #[serde(default)]
    pub roles: BTreeMap<String, RoleSettings>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelSettings>,
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
            max_output_tokens
        );
        self.headers.extend(other.headers);
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
        }
        for (model, settings) in other.models {
            let entry = self.models.entry(model).or_default();
            if settings.max_output_tokens.is_some() {
                entry.max_output_tokens = settings.max_output_tokens;
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

/// The merged configuration for a session in `workspace`.
pub fn load(home: &Path, workspace: &Path) -> Result<FileConfig, CliError> {
    let home_config = read(&home.join("config.toml"))?;
    let workspace_config = read(&workspace_file(workspace))?;
    Ok(home_config.overlay(workspace_config))
}

fn workspace_file(workspace: &Path) -> PathBuf {
    workspace.join(".arbor").join("config.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_overrides_home_key_by_key() {
        let home = tempfile_dir();
        let work = tempfile_dir();
        std::fs::write(home.join("config.toml"), "model = \"a\"\nprovider = \"chat\"\nmax_output_tokens = 100\n[roles.worker]\nmodel = \"w\"\nreasoning_effort = \"low\"\n[models.a]\nmax_output_tokens = 50\n[models.b]\n").expect("write");
        std::fs::create_dir_all(work.join(".arbor")).expect("mkdir");
        std::fs::write(
            work.join(".arbor/config.toml"),
            "model = \"b\"\n[roles.worker]\nmodel = \"w2\"\nmax_output_tokens = 7\n[models.b]\nmax_output_tokens = 60\n",
        )
        .expect("write");
        let merged = load(&home, &work).expect("load");
        assert_eq!(merged.model.as_deref(), Some("b"));
        assert_eq!(merged.provider.as_deref(), Some("chat"));
        assert_eq!(merged.roles["worker"].model.as_deref(), Some("w2"));
        assert_eq!(
            merged.roles["worker"].reasoning_effort.as_deref(),
            Some("low")
        );
        assert_eq!(merged.roles["worker"].max_output_tokens, Some(7));
        assert_eq!(merged.max_output_tokens, Some(100));
        let limits: Vec<(&str, Option<u32>)> = merged
            .models
            .iter()
            .map(|(name, m)| (name.as_str(), m.max_output_tokens))
            .collect();
        assert_eq!(limits, [("a", Some(50)), ("b", Some(60))]);
    }

    #[test]
    fn unknown_keys_name_the_file_and_key() {
        let home = tempfile_dir();
        std::fs::write(home.join("config.toml"), "modle = \"x\"\n").expect("write");
        let err = load(&home, &home).expect_err("unknown key");
        assert_eq!(err.code, 2);
        assert!(
            err.message.contains("config.toml") && err.message.contains("modle"),
            "{}",
            err.message
        );
    }

    #[test]
    fn the_examples_in_the_models_doc_parse() {
        let doc = include_str!("../../docs/models.md");
        let (_, section) = doc.split_once("## `config.toml`").expect("config section");
        let blocks: Vec<&str> = section
            .split("```toml\n")
            .skip(1)
            .filter_map(|block| block.split_once("```").map(|(toml, _)| toml))
            .collect();
        assert!(blocks.len() >= 2, "{blocks:?}");
        for block in blocks {
            let parsed: Result<FileConfig, _> = toml::from_str(block);
            assert!(parsed.is_ok(), "{block}: {parsed:?}");
        }
    }

    fn tempfile_dir() -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("arbor-config-{}", arbor_protocol::ThreadId::new()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    }
}
