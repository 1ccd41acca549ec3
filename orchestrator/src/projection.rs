//! The projections of a live session: a thread that takes the session log's synced lines, in
//! order, appends them to the agents' rollouts and applies them to the session's state in the
//! store, committing once per batch. The store keeps its one writer here. Both projections
//! lag the log by at most the batch in hand; neither ever holds a line the log has not synced.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use arbor_agent_graph::{SessionState, Store};
use arbor_rollout::RolloutProjector;
use arbor_rollout::log::Synced;
use tokio::sync::watch;

use crate::error::OrchestratorError;

/// The projection thread's progress: every append up to `lsn` is in the rollouts and the
/// store; `failed` holds why the projection stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub lsn: u64,
    pub failed: Option<String>,
}

/// A handle on the projection thread.
#[derive(Debug)]
pub struct Projection {
    progress: watch::Sender<Progress>,
    /// The same progress, for threads outside the runtime. A lock (with its condvar) because
    /// blocking threads wait on it; it mirrors the projection thread's progress, not the
    /// session's state.
    blocking: Arc<(Mutex<Progress>, std::sync::Condvar)>,
    /// The projection thread, joined once at shutdown (a lock only to take it out).
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Projection {
    /// Starts projecting the lines `synced` delivers onto `state` (already up to the log's
    /// start) and the rollouts under `home`.
    pub fn start(
        home: &Path,
        store: Store,
        state: SessionState,
        synced: crossbeam_channel::Receiver<Synced>,
    ) -> std::io::Result<Arc<Self>> {
        let mut rollouts = RolloutProjector::new(home);
        for row in state.threads.values() {
            rollouts.register(row.record.id(), Path::new(&row.record.rollout_path));
        }
        let projection = Arc::new(Self {
            progress: watch::Sender::new(Progress::default()),
            blocking: Arc::new((Mutex::new(Progress::default()), std::sync::Condvar::new())),
            thread: Mutex::new(None),
        });
        let progress = projection.progress.clone();
        let blocking = Arc::clone(&projection.blocking);
        let report = move |edit: &dyn Fn(&mut Progress)| {
            progress.send_modify(edit);
            let (lock, changed) = &*blocking;
            edit(&mut lock.lock().unwrap_or_else(PoisonError::into_inner));
            changed.notify_all();
        };
        let handle = std::thread::Builder::new()
            .name("arbor-projection".into())
            .spawn(move || run(store, state, rollouts, synced, report))?;
        *projection
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(handle);
        Ok(projection)
    }

    /// Waits until every append up to `lsn` is in the rollouts and the store.
    pub async fn projected(&self, lsn: u64) -> Result<(), OrchestratorError> {
        let mut progress = self.progress.subscribe();
        loop {
            {
                let now = progress.borrow_and_update();
                if now.lsn >= lsn {
                    return Ok(());
                }
                if let Some(failed) = &now.failed {
                    return Err(OrchestratorError::Projection(failed.clone()));
                }
            }
            if progress.changed().await.is_err() {
                return Err(OrchestratorError::Projection(
                    "the session's projections have stopped".to_string(),
                ));
            }
        }
    }

    /// Blocks until every append up to `lsn` is projected (for threads outside the runtime).
    pub fn wait_projected(&self, lsn: u64) -> Result<(), OrchestratorError> {
        let (lock, changed) = &*self.blocking;
        let mut now = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if now.lsn >= lsn {
                return Ok(());
            }
            if let Some(failed) = &now.failed {
                return Err(OrchestratorError::Projection(failed.clone()));
            }
            now = changed.wait(now).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Resolves once the projection has failed, with why.
    pub async fn failed(&self) -> String {
        let mut progress = self.progress.subscribe();
        loop {
            if let Some(failed) = &progress.borrow_and_update().failed {
                return failed.clone();
            }
            if progress.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Why the projection stopped, if it did.
    pub fn failure(&self) -> Option<String> {
        self.progress.borrow().failed.clone()
    }

    /// Waits for the thread to end (it ends once the log's writer has stopped and every synced
    /// line is projected).
    pub fn join(&self) {
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

fn run(
    store: Store,
    mut state: SessionState,
    mut rollouts: RolloutProjector,
    synced: crossbeam_channel::Receiver<Synced>,
    report: impl Fn(&dyn Fn(&mut Progress)),
) {
    while let Ok(first) = synced.recv() {
        // Batches that queued up meanwhile go in the same commit.
        let mut batches = vec![first];
        batches.extend(synced.try_iter());
        let lsn = batches.last().map_or(0, |batch| batch.lsn);
        let result = project(&store, &mut state, &mut rollouts, &batches);
        match result {
            Ok(()) => report(&|now: &mut Progress| now.lsn = now.lsn.max(lsn)),
            Err(failed) => {
                tracing::error!(error = %failed, "session projection stopped");
                report(&|now: &mut Progress| now.failed = Some(failed.clone()));
                // Nothing more is projected; open brings the files up to the log again.
                for _ in synced.iter() {}
                return;
            }
        }
    }
}

fn project(
    store: &Store,
    state: &mut SessionState,
    rollouts: &mut RolloutProjector,
    batches: &[Synced],
) -> Result<(), String> {
    for batch in batches {
        rollouts
            .project(&batch.lines)
            .map_err(|err| err.to_string())?;
        let mut end = state.applied.offset;
        for synced in &batch.lines {
            // The offsets of lines inside a batch follow from their lengths.
            end += synced.bytes().len() as u64;
            state.apply(&synced.line, end);
        }
        state.applied.offset = batch.end;
    }
    match store.commit(state) {
        Ok(()) => Ok(()),
        // Another process holds the store's write lock: the rows go with the next commit.
        Err(err) if err.is_busy() => Ok(()),
        Err(err) if err.is_full() => Err(format!(
            "cannot write the store {}: no space left on device",
            store.path().display()
        )),
        Err(err) => Err(err.to_string()),
    }
}
