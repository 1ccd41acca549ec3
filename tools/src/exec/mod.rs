//! `exec_command` (behaviour §8): arguments, the launch seam, and the process-group runner.

mod args;
mod capture;
mod contain;
#[cfg(test)]
mod contain_tests;
mod contained;
mod env;
mod group;
mod launcher;
mod run;
#[cfg(test)]
mod tests;

pub use args::{
    DEFAULT_DRAIN_GRACE_MS, DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_BYTES, ExecArgs,
    ExecConfig, MAX_EXEC_TIMEOUT_MS, SandboxPermissions, exec_tool_spec, exec_tool_spec_with,
};
pub use contained::Contained;
pub use env::{
    CORE_VARIABLES, Inherit, SECRET_MARKERS, SECRET_SUFFIXES, SESSION_VARIABLES, ShellEnvironment,
    looks_secret, secret_value,
};
pub use group::LiveProcesses;
pub use launcher::{Launcher, PlainLauncher, WithEnv};
pub use run::{ExecOutcome, ExecRequest, run_exec};
