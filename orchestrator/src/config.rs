//! Run configuration: every limit of the runtime, with its default, in one place.

use std::path::PathBuf;
use std::time::Duration;

use arbor_protocol::{ApprovalPolicy, ApprovalsReviewer, SandboxMode};

/// Default deepest spawn depth (the root is 0).
/// The reserved name of the internal guardian under the root.
pub const GUARDIAN_NAME: &str = "guardian";

pub const DEFAULT_MAX_DEPTH: u32 = 1;
/// Default number of child turns running at once.
pub const DEFAULT_MAX_RUNNING: usize = 6;
/// Default number of loaded child runtimes.
pub const DEFAULT_MAX_RESIDENT: usize = 16;
/// Default number of model responses one turn may make.
pub const DEFAULT_MAX_TURN_RESPONSES: usize = 200;
/// `wait_agent` timeouts, in milliseconds.
pub const WAIT_DEFAULT_MS: u64 = 30_000;
pub const WAIT_MIN_MS: u64 = 1_000;
pub const WAIT_MAX_MS: u64 = 3_600_000;
/// Largest tool output the model sees, in bytes (middle-truncated past this).
pub const TOOL_OUTPUT_MAX_BYTES: usize = 16 * 1024;
/// Largest mail content, in bytes (middle-truncated past this).
pub const MAIL_MAX_BYTES: usize = 64 * 1024;
/// How long the guardian may take over one review attempt (behaviour §7).
pub const REVIEW_DEADLINE: Duration =
    Duration::from_secs(arbor_guardian::DEFAULT_REVIEW_DEADLINE_SECS);

/// A per-role model override from `config.toml` (`[roles.<name>]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleModel {
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    /// The output limit of this role's agents, over the model's and the global one.
    pub max_output_tokens: Option<u32>,
    /// The context window of this role's agents, in tokens, over every other.
    pub model_context_window: Option<u64>,
}

/// Settings of one configured model (`[models.<name>]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSettings {
    /// The output limit of agents on this model, over the global one.
    pub max_output_tokens: Option<u32>,
    /// This model's context window, in tokens, over the global one.
    pub context_window: Option<u64>,
}

/// Default share of the context window a request may fill before the history is compacted.
pub const DEFAULT_COMPACT_AT: f64 = 0.8;

/// How one process runs a session.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// `ARBOR_HOME`: the store, the rollouts, roles and config.
    pub home: PathBuf,
    /// The workspace the root agent works in.
    pub cwd: PathBuf,
    /// Model name for agents that do not name their own.
    pub model: String,
    pub reasoning_effort: Option<String>,
    pub approval_policy: ApprovalPolicy,
    /// Who answers approval requests.
    pub reviewer: ApprovalsReviewer,
    /// Longest wait for a human's answer to an approval request; `None` waits as long as it
    /// takes. After it the outcome is `no_approver`.
    pub approval_wait: Option<Duration>,
    /// A terminal answers approval requests: they are handed out by
    /// `Orchestrator::take_approval_prompts`.
    pub approval_terminal: bool,
    /// The deadline of one guardian review attempt.
    pub review_deadline: Duration,
    pub sandbox: SandboxMode,
    /// Commands in a sandbox may open TCP connections.
    pub allow_network: bool,
    pub max_depth: u32,
    pub max_running: usize,
    pub max_resident: usize,
    pub max_turn_responses: usize,
    pub wait_default_ms: u64,
    pub wait_min_ms: u64,
    pub wait_max_ms: u64,
    /// Wake an idle parent once when all its children finished and results wait (behaviour §4).
    pub wake_once: bool,
    /// Whether a process drives the root: wake-once applies to `/root` only then (`exec`,
    /// `resume PROMPT`), not under `arbor followup`.
    pub root_driven: bool,
    /// Per-role model and effort, applied when an agent of that role is spawned.
    pub role_models: std::collections::BTreeMap<String, RoleModel>,
    /// Tokens (input + output) the whole tree may use; once reached no new turn starts.
    pub budget_tokens: Option<u64>,
    /// How the environment of every `exec_command` is built from this process's (secrets and
    /// the provider's key variable left out).
    pub shell_environment: std::sync::Arc<arbor_tools::ShellEnvironment>,
    /// The most tokens one model response may have, unless a role or model says otherwise.
    pub max_output_tokens: Option<u32>,
    /// The configured models by name. When any are, they are the models agents may use: a
    /// `spawn_agent` naming another is refused.
    pub models: std::collections::BTreeMap<String, ModelSettings>,
    /// Where children that can change files work unless `spawn_agent` or their role says
    /// otherwise (`worker_isolation`; `shared` by default).
    pub worker_isolation: arbor_protocol::Isolation,
    /// Merge a worktree child's clean changes when its turn completes, unless its role says
    /// otherwise.
    pub auto_merge: bool,
    /// The MCP servers of `[mcp_servers]`: started when an agent first needs them.
    pub mcp_servers: Vec<arbor_mcp::ServerConfig>,
    /// Join the `AGENTS.md` files from the repository root down to each agent's cwd into its
    /// instructions (`--no-project-docs` turns it off).
    pub project_docs: bool,
    /// The context window of every model, in tokens, unless a role or model says otherwise
    /// (`model_context_window`); without any, a known model name's window.
    pub model_context_window: Option<u64>,
    /// The share of the context window (0 < x <= 1) a request may fill: one that would pass
    /// it compacts the history first.
    pub compact_at: f64,
}

impl RunConfig {
    /// Defaults for a session rooted at `cwd` with its state in `home`.
    pub fn new(home: PathBuf, cwd: PathBuf) -> Self {
        Self {
            home,
            cwd,
            model: "scripted".to_string(),
            reasoning_effort: None,
            approval_policy: ApprovalPolicy::OnRequest,
            reviewer: ApprovalsReviewer::User,
            approval_wait: Some(Duration::ZERO),
            approval_terminal: false,
            review_deadline: REVIEW_DEADLINE,
            sandbox: SandboxMode::WorkspaceWrite,
            allow_network: false,
            max_depth: DEFAULT_MAX_DEPTH,
            max_running: DEFAULT_MAX_RUNNING,
            max_resident: DEFAULT_MAX_RESIDENT,
            max_turn_responses: DEFAULT_MAX_TURN_RESPONSES,
            wait_default_ms: WAIT_DEFAULT_MS,
            wait_min_ms: WAIT_MIN_MS,
            wait_max_ms: WAIT_MAX_MS,
            wake_once: true,
            root_driven: true,
            role_models: std::collections::BTreeMap::new(),
            budget_tokens: None,
            shell_environment: std::sync::Arc::default(),
            max_output_tokens: None,
            models: std::collections::BTreeMap::new(),
            worker_isolation: arbor_protocol::Isolation::Shared,
            auto_merge: false,
            mcp_servers: Vec::new(),
            project_docs: true,
            model_context_window: None,
            compact_at: DEFAULT_COMPACT_AT,
        }
    }

    /// The context window of an agent of `role` on `model`: the role's, else the model's
    /// (`[models.<model>]`), else the global `model_context_window`, else the known window of
    /// the model's name; `None` when nothing says (no automatic compaction).
    pub fn context_window(&self, role: &str, model: &str) -> Option<u64> {
        self.role_models
            .get(role)
            .and_then(|settings| settings.model_context_window)
            .or_else(|| self.models.get(model).and_then(|m| m.context_window))
            .or(self.model_context_window)
            .or_else(|| arbor_model::window::known_context_window(model))
    }

    /// How many tokens a request of an agent of `role` on `model` may have before its history
    /// is compacted; `None` when its window is unknown.
    pub fn compaction_threshold(&self, role: &str, model: &str) -> Option<u64> {
        let window = self.context_window(role, model)?;
        // Truncation is intended: the threshold is a whole number of tokens.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let at = (window as f64 * self.compact_at.clamp(0.01, 1.0)) as u64;
        Some(at.max(1))
    }

    /// The output limit of an agent of `role` on `model`: the role's (`[roles.<role>]`), else
    /// the model's (`[models.<model>]`), else the global `max_output_tokens`.
    pub fn output_limit(&self, role: &str, model: &str) -> Option<u32> {
        self.role_models
            .get(role)
            .and_then(|settings| settings.max_output_tokens)
            .or_else(|| self.models.get(model).and_then(|m| m.max_output_tokens))
            .or(self.max_output_tokens)
    }

    /// The names of the configured models (empty: any name goes).
    pub fn model_names(&self) -> Vec<&str> {
        self.models.keys().map(String::as_str).collect()
    }

    /// A model reference (`provider/model`, or a model of the default provider) read against
    /// `catalog`, its model a configured one (when any are: `[models]` names models without
    /// their provider). The error is the text a model or a person reads.
    pub fn resolve_model(
        &self,
        catalog: &arbor_model::Catalog,
        text: &str,
    ) -> Result<arbor_model::ModelRef, String> {
        let found = catalog.resolve(text)?;
        arbor_roles::check_model(&found.model, &self.model_names())?;
        Ok(found)
    }

    /// Every model this configuration and `roles` name resolves against `catalog` to a
    /// configured model of a usable provider: the session's, `[roles.<name>]`'s and the role
    /// files'. The error names where the model was named, as a role file's field error does.
    pub fn check_models(
        &self,
        roles: &arbor_roles::RoleSet,
        catalog: &arbor_model::Catalog,
    ) -> Result<(), String> {
        let check = |text: &str| self.resolve_model(catalog, text);
        check(&self.model).map_err(|message| {
            format!("model: {message} (the models configured under [models] in config.toml)")
        })?;
        for (role, settings) in &self.role_models {
            if let Some(model) = &settings.model {
                check(model)
                    .map_err(|message| format!("config: `roles.{role}.model`: {message}"))?;
            }
        }
        for role in roles.all() {
            if let (Some(model), arbor_roles::RoleSource::File(path)) = (&role.model, &role.source)
            {
                check(model).map_err(|message| {
                    format!("role file {}: field `model`: {message}", path.display())
                })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_output_limit_wins() {
        let mut config = RunConfig::new(PathBuf::from("/h"), PathBuf::from("/w"));
        assert_eq!(config.output_limit("worker", "m"), None);
        config.max_output_tokens = Some(1000);
        assert_eq!(config.output_limit("worker", "m"), Some(1000));
        config.models.insert(
            "m".into(),
            ModelSettings {
                max_output_tokens: Some(2000),
                ..ModelSettings::default()
            },
        );
        assert_eq!(config.output_limit("worker", "m"), Some(2000));
        assert_eq!(config.output_limit("worker", "other"), Some(1000));
        config.role_models.insert(
            "worker".into(),
            RoleModel {
                max_output_tokens: Some(300),
                ..RoleModel::default()
            },
        );
        assert_eq!(config.output_limit("worker", "m"), Some(300));
        assert_eq!(config.output_limit("explorer", "m"), Some(2000));
    }

    #[test]
    fn the_most_specific_context_window_wins() {
        let mut config = RunConfig::new(PathBuf::from("/h"), PathBuf::from("/w"));
        assert_eq!(config.context_window("worker", "scripted"), None);
        assert_eq!(config.context_window("worker", "gpt-4o"), Some(128_000));
        config.model_context_window = Some(10_000);
        assert_eq!(config.context_window("worker", "gpt-4o"), Some(10_000));
        assert_eq!(config.compaction_threshold("worker", "gpt-4o"), Some(8_000));
        config.models.insert(
            "m".into(),
            ModelSettings {
                context_window: Some(4_000),
                ..ModelSettings::default()
            },
        );
        assert_eq!(config.context_window("worker", "m"), Some(4_000));
        config.role_models.insert(
            "worker".into(),
            RoleModel {
                model_context_window: Some(1_000),
                ..RoleModel::default()
            },
        );
        assert_eq!(config.context_window("worker", "m"), Some(1_000));
        assert_eq!(config.context_window("explorer", "m"), Some(4_000));
    }
}
