//! Watching the store for decisions made by other processes (`arbor approve|deny`): requests
//! a requester waits on, and orphans (pending requests nobody waits for any more: cut short,
//! or from before a restart), whose decisions are announced and reach the requester's rollout.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::{ApprovalOutcome, ApprovalRecord};
use arbor_protocol::RolloutItem;
use tokio::sync::oneshot;

use super::broker::{Settled, announce_decision, decided_line};
use crate::journal::POLL_INTERVAL;
use crate::runtime::Inner;

/// Requests this process watches in the store: waiters (a requester waits for a human) and
/// orphans (pending requests nobody waits for any more: cut short, or from before a restart).
#[derive(Debug, Default)]
pub struct Watched {
    waiters: Mutex<HashMap<String, oneshot::Sender<ApprovalRecord>>>,
    orphans: Mutex<HashSet<String>>,
}

impl Watched {
    /// Watches `id` for a decision from another process; resolves with its record.
    pub fn wait_for(self: &Arc<Self>, id: &str) -> (oneshot::Receiver<ApprovalRecord>, WaitGuard) {
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
        self.orphans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string());
    }

    /// Whether `id` is a pending request nobody waits for.
    pub fn is_orphan(&self, id: &str) -> bool {
        self.orphans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(id)
    }

    fn lock_waiters(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<ApprovalRecord>>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock_waiters().keys().cloned().collect();
        ids.extend(
            self.orphans
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned(),
        );
        ids
    }
}

/// Stops watching a request when its waiter is done; a waiter dropped before its request was
/// decided (its turn was cut short) leaves the request watched as an orphan.
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

/// Polls the store for decisions of watched requests until the session stops: a waiter gets
/// its record; an orphan's decision is announced (`approval.decided`).
pub fn watch(inner: &Arc<Inner>) {
    let watcher = Arc::clone(inner);
    let token = inner.root_token.clone();
    inner.tracker.spawn(async move {
        let mut tick = tokio::time::interval(POLL_INTERVAL);
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                _ = tick.tick() => {}
            }
            let ids = watcher.approvals.watched.ids();
            if ids.is_empty() {
                continue;
            }
            let store = watcher.store.clone();
            let session = watcher.session_id;
            let decided = tokio::task::spawn_blocking(move || {
                let pending: HashSet<String> = store
                    .pending_approvals(session)?
                    .into_iter()
                    .map(|record| record.id)
                    .collect();
                let mut decided = Vec::new();
                for id in ids.iter().filter(|id| !pending.contains(*id)) {
                    if let Some(record) = store.approval(id)? {
                        decided.push(record);
                    }
                }
                Ok::<_, arbor_agent_graph::StoreError>(decided)
            })
            .await;
            match decided {
                Ok(Ok(records)) => {
                    for record in records {
                        deliver(&watcher, record);
                    }
                }
                Ok(Err(err)) => tracing::error!(error = %err, "approval log unreadable"),
                Err(err) => tracing::error!(error = %err, "approval watcher failed"),
            }
        }
    });
}

fn deliver(inner: &Inner, record: ApprovalRecord) {
    let watched = &inner.approvals.watched;
    if let Some(waiter) = watched.lock_waiters().remove(&record.id) {
        let _ = waiter.send(record);
        return;
    }
    let was_orphan = watched
        .orphans
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&record.id);
    if was_orphan {
        let settled = Settled::from_record(&record);
        // A resident requester records the decision now; an evicted or not yet revived one
        // catches up when it is revived (`undecided_lines`).
        if let Some(requester) = inner.registry.get(record.requester_id)
            && requester.is_resident()
            && let Err(err) = requester.record(&[decided_line(&record.id, &settled)])
        {
            tracing::error!(path = %requester.path(), error = %err, "approval decision not in the rollout");
        }
        announce_decision(inner, &record.id, &settled);
    }
}

/// The `approval_decided` lines a rollout lacks: requests it records as asked, whose decision
/// another process stored meanwhile (an answer given after a restart). Blocking (store reads).
pub fn undecided_lines(
    store: &arbor_agent_graph::Store,
    read: &arbor_rollout::RolloutRead,
) -> Vec<RolloutItem> {
    let mut asked: Vec<&str> = Vec::new();
    let mut decided: HashSet<&str> = HashSet::new();
    for item in read.items() {
        match item {
            RolloutItem::ApprovalRequested(line) => asked.push(&line.request_id),
            RolloutItem::ApprovalDecided(line) => {
                decided.insert(&line.request_id);
            }
            _ => {}
        }
    }
    asked
        .into_iter()
        .filter(|id| !decided.contains(id))
        .filter_map(|id| store.approval(id).ok().flatten())
        .filter(|record| record.outcome != ApprovalOutcome::Pending)
        .map(|record| decided_line(&record.id, &Settled::from_record(&record)))
        .collect()
}
