//! Long-lived programs under the same supervisor as `exec_command` (`contain.rs`): arbor's MCP
//! servers. The caller builds the `Command` (program, arguments, environment, pipes); the
//! supervisor adopts everything the program starts, and when the returned [`Contained`] is
//! dropped or killed — or arbor dies — all of it is killed. Nothing it started outlives it.

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;

use super::contain::Supervision;
use super::run::Report;

/// A program running under its supervisor. Dropping it kills the program and everything it
/// started.
#[derive(Debug)]
pub struct Contained {
    /// The supervisor's process; its stdin, stdout and stderr are the program's pipes.
    pub child: tokio::process::Child,
    /// The program's pid (it leads its own process group).
    pub pid: i32,
    control: Option<OwnedFd>,
    report: Report,
}

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Report")
    }
}

impl Contained {
    /// Spawns `command` under a supervisor. Its pipes are whatever `command` says (set them
    /// before); it is put in a process group of its own.
    pub async fn spawn(mut command: std::process::Command) -> std::io::Result<Self> {
        let supervision = Supervision::new()?;
        command.process_group(0);
        supervision.install(&mut command);
        let mut command = tokio::process::Command::from(command);
        // Never SIGKILL the supervisor: it must live to kill what the program started.
        command.kill_on_drop(false);
        let spawned = command.spawn();
        let supervisor = supervision.started();
        let child = spawned?;
        let mut report = Report::new(supervisor.report)?;
        let pid = report.int().await?;
        Ok(Self {
            child,
            pid,
            control: Some(supervisor.control),
            report,
        })
    }

    /// Waits until the program exits; its wait status (as `waitpid` gives it).
    pub async fn exited(&mut self) -> std::io::Result<i32> {
        self.report.ended().await.map(|(status, _)| status)
    }

    /// Kills the program and everything it started, and reaps the supervisor.
    pub async fn kill(&mut self) {
        self.control = None;
        let _ = self.child.wait().await;
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        // Closing the control pipe tells the supervisor to kill everything it holds.
        self.control = None;
    }
}
