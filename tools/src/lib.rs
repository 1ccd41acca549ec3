//! Work tools (behaviour §8): `exec_command` and `apply_patch`. The command policy and the
//! Landlock sandbox plug in later through [`Launcher`].

mod exec;
mod patch;

pub use exec::{
    DEFAULT_DRAIN_GRACE_MS, DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_BYTES, ExecArgs,
    ExecArgsError, ExecConfig, ExecOutcome, ExecRequest, Launcher, LiveProcesses,
    MAX_EXEC_TIMEOUT_MS, PlainLauncher, SandboxPermissions, exec_tool_spec, exec_tool_spec_with,
    run_exec,
};
pub use patch::{
    ApplyPatchArgs, ChangeKind, FileChange, FileOp, Hunk, HunkLine, ParseError, Patch, PatchError,
    PatchSummary, apply_patch, apply_patch_tool_spec, parse_patch,
};
