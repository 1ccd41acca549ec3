//! The `exec_command` arguments as the model sends them, their limits and the tool spec.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::ToolError;
use arbor_protocol::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Timeout when the model names none.
pub const DEFAULT_EXEC_TIMEOUT_MS: u64 = 10_000;
/// Largest timeout the model may ask for.
pub const MAX_EXEC_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept of each of stdout and stderr before middle truncation.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 * 1024;
/// How long output is still read after the shell has exited (or was killed) while some other
/// process keeps the pipes open.
pub const DEFAULT_DRAIN_GRACE_MS: u64 = 2_000;

/// Arguments of `exec_command` (behaviour §8). Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    /// The shell command, run with `bash -c`.
    pub cmd: String,
    /// Working directory; a relative one is resolved against the agent's cwd.
    #[serde(default)]
    pub workdir: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why escalation is needed; shown to the approver.
    #[serde(default)]
    pub justification: Option<String>,
}

/// Whether the model asks to run inside its sandbox (the default) or outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPermissions {
    #[default]
    UseDefault,
    /// Run outside the sandbox; needs approval (behaviour §7).
    RequireEscalated,
}

impl SandboxPermissions {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UseDefault => "use_default",
            Self::RequireEscalated => "require_escalated",
        }
    }
}

/// Limits the runtime applies to every `exec_command` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecConfig {
    pub default_timeout_ms: u64,
    pub max_timeout_ms: u64,
    /// Bytes kept of each stream; more is cut in the middle.
    pub max_output_bytes: usize,
    pub drain_grace_ms: u64,
}

impl Default for ExecConfig {
    fn default() -> Self {
        Self {
            default_timeout_ms: DEFAULT_EXEC_TIMEOUT_MS,
            max_timeout_ms: MAX_EXEC_TIMEOUT_MS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            drain_grace_ms: DEFAULT_DRAIN_GRACE_MS,
        }
    }
}

impl ExecArgs {
    /// Parses the model's JSON arguments.
    pub fn parse(json: &str) -> Result<Self, ToolError> {
        Ok(serde_json::from_str(json)?)
    }

    /// Checks the command and the timeout against `config` and returns the timeout to use.
    pub fn timeout(&self, config: &ExecConfig) -> Result<Duration, ToolError> {
        if self.cmd.trim().is_empty() {
            return Err(ToolError::EmptyCommand);
        }
        let ms = self.timeout_ms.unwrap_or(config.default_timeout_ms);
        if ms == 0 {
            return Err(ToolError::TimeoutZero);
        }
        if ms > config.max_timeout_ms {
            return Err(ToolError::TimeoutTooLarge {
                max: config.max_timeout_ms,
            });
        }
        Ok(Duration::from_millis(ms))
    }

    /// The working directory: `workdir` resolved against `cwd`, or `cwd` itself.
    pub fn resolve_workdir(&self, cwd: &Path) -> PathBuf {
        match self.workdir.as_deref() {
            None | Some("") => cwd.to_path_buf(),
            Some(dir) => cwd.join(dir),
        }
    }

    /// The permissions asked for, `use_default` when absent.
    pub fn permissions(&self) -> SandboxPermissions {
        self.sandbox_permissions.unwrap_or_default()
    }
}

/// The `exec_command` tool as offered to the model, with the default limits.
pub fn exec_tool_spec() -> ToolSpec {
    exec_tool_spec_with(&ExecConfig::default())
}

/// The `exec_command` tool with the limits of `config` in its schema.
pub fn exec_tool_spec_with(config: &ExecConfig) -> ToolSpec {
    ToolSpec {
        name: "exec_command".to_string(),
        description: format!(
            "Runs a shell command with `bash -c` and returns JSON text: \
             {{\"exit_code\", \"timed_out\", \"duration_ms\", \"sandbox\", \"stdout\", \"stderr\"}} \
             (plus \"signal\" when the command was killed by a signal and \"error\" when it \
             could not start). A non-zero exit or a timeout is a normal result. Standard input \
             is empty. Each of stdout and stderr keeps at most {} bytes; longer output is cut in \
             the middle. On timeout the command and every process it started are killed. \
             Background processes that keep the output open are killed shortly after the \
             command exits.",
            config.max_output_bytes
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "cmd": {
                    "type": "string",
                    "description": "The shell command to run."
                },
                "workdir": {
                    "type": "string",
                    "description": "Working directory; a relative path is resolved against your working directory, which is the default."
                },
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": config.max_timeout_ms,
                    "description": format!("Milliseconds before the command is killed; default {}.", config.default_timeout_ms)
                },
                "sandbox_permissions": {
                    "type": "string",
                    "enum": ["use_default", "require_escalated"],
                    "description": "`require_escalated` asks to run outside the sandbox, which needs approval; give a justification."
                },
                "justification": {
                    "type": "string",
                    "description": "Why escalation is needed, in one sentence, for the approver."
                }
            },
            "required": ["cmd"],
            "additionalProperties": false
        }),
    }
}
