//! Process-group ownership: the kill switch for a running command and the live-process count.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many `exec_command` subprocesses of one owner (an agent) are running. Cloning shares the
/// count. The runtime must not evict an agent while its count is above zero.
#[derive(Debug, Clone, Default)]
pub struct LiveProcesses(Arc<AtomicUsize>);

impl LiveProcesses {
    pub fn new() -> Self {
        Self::default()
    }

    /// Commands currently running (spawned and not yet finished, killed or abandoned).
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn enter(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Owns the process group of one running command. Counts it as live while held; when dropped
/// while still armed (the future was cancelled) it kills the whole group.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: libc::pid_t,
    armed: bool,
    live: LiveProcesses,
}

impl GroupGuard {
    /// Takes ownership of the group led by `pgid` (the shell's pid, as it was spawned with
    /// `process_group(0)`).
    pub(crate) fn new(pgid: u32, live: LiveProcesses) -> Self {
        live.enter();
        Self {
            // Pids fit in pid_t; a value that does not is never a real group.
            pgid: libc::pid_t::try_from(pgid).unwrap_or(0),
            armed: true,
            live,
        }
    }

    /// Sends SIGKILL to every process of the group.
    pub(crate) fn kill(&self) {
        kill_group(self.pgid);
    }

    /// The command is over and its output collected: dropping no longer kills anything.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            kill_group(self.pgid);
        }
        self.live.leave();
    }
}

fn kill_group(pgid: libc::pid_t) {
    // A pgid of 0 or below would address our own group or every process: never send that.
    if pgid <= 0 {
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses the group.
    // ESRCH (the group is already gone) is the expected outcome after a normal exit.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
