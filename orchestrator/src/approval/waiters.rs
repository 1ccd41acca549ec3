//! Requests a requester waits on (a human may answer them from elsewhere) and orphans (pending
//! requests nobody waits for any more).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use super::request::Settled;

/// Requests a requester waits on (a human may answer them) and orphans (pending requests
/// nobody waits for any more: cut short, or from before a restart).
#[derive(Debug, Default)]
///
/// Locks of their own, not the session's state: a requester's gate and the answers from
/// elsewhere meet here without waiting for the session task.
pub struct Watched {
    waiters: Mutex<HashMap<String, oneshot::Sender<Settled>>>,
    orphans: Mutex<HashSet<String>>,
}

impl Watched {
    /// Waits for a human's answer to `id` given elsewhere; resolves with the decision.
    pub fn wait_for(self: &Arc<Self>, id: &str) -> (oneshot::Receiver<Settled>, WaitGuard) {
        let (tx, rx) = oneshot::channel();
        self.lock_waiters().insert(id.to_string(), tx);
        let guard = WaitGuard {
            watched: Arc::clone(self),
            id: id.to_string(),
            settled: false,
        };
        (rx, guard)
    }

    /// Marks `id` an orphan when the returned guard drops unsettled (its requester's turn was
    /// cut short while the request was pending).
    pub fn guard(self: &Arc<Self>, id: &str) -> WaitGuard {
        WaitGuard {
            watched: Arc::clone(self),
            id: id.to_string(),
            settled: false,
        }
    }

    /// Watches a pending request nobody waits for.
    pub fn add_orphan(&self, id: &str) {
        self.lock_orphans().insert(id.to_string());
    }

    /// Whether `id` is a pending request nobody waits for.
    pub fn is_orphan(&self, id: &str) -> bool {
        self.lock_orphans().contains(id)
    }

    pub(super) fn lock_waiters(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Settled>>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn lock_orphans(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.orphans.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Stops waiting for a request when its waiter is done; a waiter dropped before its request
/// was decided (its turn was cut short) leaves the request watched as an orphan.
#[derive(Debug)]
pub struct WaitGuard {
    watched: Arc<Watched>,
    id: String,
    settled: bool,
}

impl WaitGuard {
    /// The waiter is about to decide the request itself.
    pub fn settle(mut self) {
        self.settled = true;
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.watched.lock_waiters().remove(&self.id);
        if !self.settled {
            self.watched.add_orphan(&self.id);
        }
    }
}
