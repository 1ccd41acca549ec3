//! Work tools (behaviour §7, §8): `exec_command`, `apply_patch`, the command policy
//! ([`Policy`]) and the Landlock sandbox ([`SandboxLauncher`], a [`Launcher`]).

pub mod beneath;
mod error;
mod exec;
pub mod gitrepo;
mod patch;
mod policy;
mod sandbox;

pub use error::ToolError;
pub use exec::{
    CORE_VARIABLES, Contained, DEFAULT_DRAIN_GRACE_MS, DEFAULT_EXEC_TIMEOUT_MS,
    DEFAULT_MAX_OUTPUT_BYTES, ExecArgs, ExecConfig, ExecOutcome, ExecRequest, Inherit, Launcher,
    LiveProcesses, MAX_EXEC_TIMEOUT_MS, PlainLauncher, SECRET_MARKERS, SECRET_SUFFIXES,
    SESSION_VARIABLES, SandboxPermissions, ShellEnvironment, WithEnv, exec_tool_spec,
    exec_tool_spec_with, looks_secret, run_exec, secret_value,
};
pub use patch::{
    ApplyPatchArgs, ChangeKind, FileChange, FileOp, Hunk, HunkLine, Patch, PatchSummary,
    apply_patch, apply_patch_confined, apply_patch_tool_spec, parse_patch, patch_paths,
};
pub use policy::{
    Decision, Evaluation, GIT_HARDENING_ENV, PatternToken, Policy, Rule, RuleMatch, TRUST_TABLE,
    canonical, git_config_risk, is_known_read_only, trust_workspace, trusted_workspaces,
    workspace_trusted,
};
pub use sandbox::{
    PROTECTED_ENTRIES, SANDBOX_ENV, SandboxLauncher, SandboxStatus, sandbox_status, temp_roots,
};
