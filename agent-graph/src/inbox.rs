//! The writer thread's inbox. Urgent writes travel on a crossbeam channel that wakes the
//! writer at once. Writes that may wait (lazy projections, deferred mail) wait in a side list
//! and wake the writer only when they bring its deadline forward, so a burst of status updates
//! costs the writer no wake-ups of its own.
//!
//! Order: every send holds the inbox lock, and an urgent send first moves the waiting writes
//! onto the channel ahead of itself; the writer takes the side list under the same lock, only
//! after emptying the channel. So writes reach a transaction in the order they were submitted.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};

use crate::writer::Job;

/// What travels on the channel.
pub(crate) enum Msg {
    /// A write to commit now.
    Job(Box<dyn Job>),
    /// A write that waited in the side list; the urgent job that moved it follows.
    Waited(Box<dyn Job>),
    /// Waiting writes want a commit by this instant.
    Due(Instant),
    /// Finish what came before, then stop.
    Stop,
}

/// The sending side, shared by every handle of one store.
pub(crate) struct Inbox {
    tx: Sender<Msg>,
    side: Mutex<Side>,
}

#[derive(Default)]
struct Side {
    waiting: Vec<Box<dyn Job>>,
    /// The earliest deadline the writer has been told about for `waiting`.
    due: Option<Instant>,
    /// No more writes are taken.
    closed: bool,
}

/// What [`Inbox::drain`] found besides jobs.
pub(crate) struct Drained {
    /// A stop request was among the messages.
    pub stop: bool,
    /// The group is full and more is queued: commit again right away.
    pub more: bool,
}

impl Inbox {
    /// A new inbox and the writer's end of its channel.
    pub fn new() -> (Self, Receiver<Msg>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let inbox = Self {
            tx,
            side: Mutex::new(Side::default()),
        };
        (inbox, rx)
    }

    fn side(&self) -> MutexGuard<'_, Side> {
        // The side list stays consistent whatever panicked: every change is a single step.
        self.side.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a write to commit now. A write refused after [`Inbox::stop`] is dropped, which
    /// answers its ticket with `Closed`.
    pub fn send(&self, job: Box<dyn Job>) {
        let mut side = self.side();
        if side.closed {
            return;
        }
        self.flush(&mut side);
        let _ = self.tx.send(Msg::Job(job));
    }

    /// Queues a write that may wait up to `window` for company.
    pub fn send_within(&self, job: Box<dyn Job>, window: Duration) {
        let mut side = self.side();
        if side.closed {
            return;
        }
        side.waiting.push(job);
        let due = Instant::now() + window;
        if side.due.is_none_or(|known| due < known) {
            side.due = Some(due);
            let _ = self.tx.send(Msg::Due(due));
        }
    }

    /// Refuses further writes and asks the writer to stop after the ones already queued.
    pub fn stop(&self) {
        let mut side = self.side();
        if side.closed {
            return;
        }
        side.closed = true;
        self.flush(&mut side);
        let _ = self.tx.send(Msg::Stop);
    }

    /// Moves the waiting writes onto the channel, ahead of what comes next.
    fn flush(&self, side: &mut Side) {
        side.due = None;
        for job in side.waiting.drain(..) {
            let _ = self.tx.send(Msg::Waited(job));
        }
    }

    /// The writer's side: takes every queued message (up to `max` jobs in `group`), then the
    /// waiting writes, in submission order.
    pub fn drain(&self, rx: &Receiver<Msg>, group: &mut Vec<Box<dyn Job>>, max: usize) -> Drained {
        let mut side = self.side();
        let mut stop = false;
        while group.len() < max {
            match rx.try_recv() {
                Ok(Msg::Job(job) | Msg::Waited(job)) => group.push(job),
                Ok(Msg::Due(_)) => {}
                Ok(Msg::Stop) => stop = true,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                    // Everything on the channel is older than the side list: take it too.
                    group.append(&mut side.waiting);
                    side.due = None;
                    return Drained { stop, more: false };
                }
            }
        }
        Drained { stop, more: true }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crate::Store;

    /// Writes that may wait never overtake a later urgent write, nor the other way round:
    /// the writer runs every write in the order it was submitted.
    #[test]
    fn writes_run_in_submission_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tickets = Vec::new();
        for step in 0..40_u32 {
            let seen = Arc::clone(&order);
            let op = move |_: &rusqlite::Connection| {
                seen.lock().expect("order").push(step);
                Ok(())
            };
            tickets.push(match step % 4 {
                0 => store.submit("urgent", op),
                1 => store.submit_lazy("lazy", op),
                2 => store.submit_within("deferred", Duration::from_millis(1), op),
                _ => store.submit_within("later", Duration::from_secs(3600), op),
            });
        }
        for ticket in tickets {
            ticket.wait().expect("write");
        }
        let order = order.lock().expect("order").clone();
        assert_eq!(order, (0..40).collect::<Vec<_>>());
    }

    /// A write that may wait still commits on its own once its window has passed, and one
    /// with a long window commits with the next urgent write.
    #[test]
    fn waiting_writes_commit_alone_or_with_company() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let alone = store.submit_within("deferred", Duration::from_millis(1), |_| Ok(1));
        assert_eq!(alone.wait().expect("deferred"), 1);
        let commits = store.commits();
        let patient = store.submit_within("later", Duration::from_secs(3600), |_| Ok(2));
        let urgent = store.submit("urgent", |_| Ok(3));
        assert_eq!(urgent.wait().expect("urgent"), 3);
        assert_eq!(patient.wait().expect("later"), 2);
        assert_eq!(store.commits(), commits + 1, "one commit carried both");
    }

    /// Closing commits what waits, however long its window, and refuses later writes.
    #[test]
    fn close_commits_waiting_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let waiting = store.submit_within("later", Duration::from_secs(3600), |_| Ok(5));
        store.close();
        assert_eq!(waiting.wait().expect("committed at close"), 5);
        let late = store.submit_within("late", Duration::from_millis(1), |_| Ok(6));
        assert!(matches!(late.wait(), Err(crate::StoreError::Closed { .. })));
    }
}
