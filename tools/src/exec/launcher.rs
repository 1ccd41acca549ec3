//! The launch seam: how a command is wrapped before it is spawned (the sandbox plugs in here).

use std::fmt;
use std::io;
use std::process::Command;
use std::sync::Arc;

/// Prepares a command for spawning. **API Boundary:** the Landlock sandbox (behaviour §8) is a
/// `Launcher`; approvals decide which launcher a call gets (an approved escalation gets the
/// plain one).
///
/// `prepare` receives the fully built `bash -c <cmd>` command: program, arguments, working
/// directory and process group are already set, stdio is set afterwards by the runner. A
/// launcher may replace the program (wrap it in a helper), change the environment, or install a
/// `std::os::unix::process::CommandExt::pre_exec` hook that restricts the child between `fork`
/// and `exec`. It must not change the process group: the runner relies on the command leading
/// its own group so that a timeout or a cancel can kill everything it started. An `Err` from
/// `prepare` is reported to the model as a command that could not start.
pub trait Launcher: Send + Sync + fmt::Debug {
    /// Adjusts `cmd` before it is spawned.
    fn prepare(&self, cmd: &mut Command) -> io::Result<()>;

    /// What the model and the user are told about the sandbox the command runs in: `none`
    /// unless a restriction is really enforced.
    fn sandbox_label(&self) -> &str;
}

/// Runs commands as they are, with no sandbox; labelled `none`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainLauncher;

impl Launcher for PlainLauncher {
    fn prepare(&self, _cmd: &mut Command) -> io::Result<()> {
        Ok(())
    }

    fn sandbox_label(&self) -> &str {
        "none"
    }
}

/// Another launcher, with variables set for the command on top of its environment (e.g. the
/// git settings `untrusted` runs read-only git with).
#[derive(Debug, Clone)]
pub struct WithEnv {
    inner: Arc<dyn Launcher>,
    vars: Vec<(String, String)>,
}

impl WithEnv {
    pub fn new(inner: Arc<dyn Launcher>, vars: &[(&str, &str)]) -> Self {
        Self {
            inner,
            vars: vars
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        }
    }
}

impl Launcher for WithEnv {
    fn prepare(&self, cmd: &mut Command) -> io::Result<()> {
        cmd.envs(self.vars.iter().map(|(name, value)| (name, value)));
        self.inner.prepare(cmd)
    }

    fn sandbox_label(&self) -> &str {
        self.inner.sandbox_label()
    }
}
