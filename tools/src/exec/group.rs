//! Ownership of the processes an agent's commands start: the kill switch of a running command,
//! the supervisors of finished commands that left processes behind, and the live count.
//!
//! Killing means closing a supervisor's control pipe (`contain.rs`): the supervisor then kills
//! the command's group and every process it adopted, `setsid` or not. A command's supervisor is
//! killed when the command times out or its future is dropped (the turn was interrupted); a
//! finished command's supervisor, still holding background processes, is kept here until
//! [`LiveProcesses::kill_all`] (the turn is interrupted, the agent closed, the session stopped)
//! or until the last clone of the [`LiveProcesses`] is dropped.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The processes of one owner's (an agent's) `exec_command` calls. Cloning shares them. The
/// runtime must not evict an agent while its count is above zero.
#[derive(Debug, Clone, Default)]
pub struct LiveProcesses(Arc<Live>);

#[derive(Debug, Default)]
struct Live {
    running: AtomicUsize,
    /// Supervisors of finished commands whose processes may still run.
    lingering: Mutex<Vec<Lingering>>,
}

#[derive(Debug)]
struct Lingering {
    /// Closing it (dropping) kills every process the supervisor holds.
    _control: OwnedFd,
    supervisor: tokio::process::Child,
}

impl LiveProcesses {
    pub fn new() -> Self {
        Self::default()
    }

    /// Commands running, plus finished commands that left processes running (a background
    /// `sleep &` counts until it ends or is killed).
    pub fn count(&self) -> usize {
        self.0.running.load(Ordering::SeqCst) + self.lingering()
    }

    /// Finished commands whose processes still run.
    pub fn lingering(&self) -> usize {
        let mut lingering = self.lock();
        // A supervisor exits once nothing it holds runs any more.
        lingering.retain_mut(|l| matches!(l.supervisor.try_wait(), Ok(None)));
        lingering.len()
    }

    /// Kills every process that finished commands left behind (running commands are killed by
    /// their own call, when it is dropped or times out).
    pub fn kill_all(&self) {
        let taken = std::mem::take(&mut *self.lock());
        drop(taken);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Lingering>> {
        self.0
            .lingering
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn enter(&self) {
        self.0.running.fetch_add(1, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Owns one running command's supervisor. Counts as running while held; dropped while armed
/// (the future was cancelled) it kills everything the command started.
#[derive(Debug)]
pub(crate) struct CommandGuard {
    control: Option<OwnedFd>,
    /// The command's pid, which leads its process group: the last resort should its supervisor
    /// be gone.
    pgid: libc::pid_t,
    live: LiveProcesses,
}

impl CommandGuard {
    pub(crate) fn new(control: OwnedFd, live: LiveProcesses) -> Self {
        live.enter();
        Self {
            control: Some(control),
            pgid: 0,
            live,
        }
    }

    /// The command's pid, as its supervisor reported it.
    pub(crate) fn set_pgid(&mut self, pgid: libc::pid_t) {
        self.pgid = pgid;
    }

    /// Kills the command and everything it started.
    pub(crate) fn kill(&mut self) {
        self.control = None;
    }

    /// The supervisor ended without reporting: kill the command's group directly (what a
    /// supervisor would have done, short of the processes that left the group).
    pub(crate) fn kill_group(&self) {
        // A pgid of 0 or below would address our own group or every process: never send that.
        if self.pgid > 0 {
            // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses the
            // group. ESRCH (the group is already gone) is expected.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
    }

    /// The command is over and its output collected: what it left running is kept with the
    /// owner's processes (or, if it was killed, nothing is).
    pub(crate) fn finish(mut self, supervisor: tokio::process::Child) {
        if let Some(control) = self.control.take() {
            self.live.lock().push(Lingering {
                _control: control,
                supervisor,
            });
        }
    }
}

impl Drop for CommandGuard {
    fn drop(&mut self) {
        // Dropping `control` while armed kills the supervisor's processes.
        self.control = None;
        self.live.leave();
    }
}
