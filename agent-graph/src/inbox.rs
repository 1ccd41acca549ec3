//! The writer thread's inbox. Urgent writes travel on a crossbeam channel that wakes the
//! writer at once. Writes that may wait (deferred mail, lazy projections) wait in side lists
//! and wake the writer only when they bring its deadline forward, so a burst of status updates
//! costs the writer no wake-ups of its own.
//!
//! Order: every send holds the inbox lock, and an urgent send first moves the waiting writes
//! onto the channel ahead of itself; the writer takes the side lists under the same lock, only
//! after emptying the channel. So writes reach a transaction in the order they were submitted,
//! with one exception: an *independent* urgent write (a mail enqueue, which touches no status
//! and no other mail's row) moves only the deferred writes (result mail) ahead of itself, and
//! leaves the projections (statuses, consumed marks) waiting. The writer commits those right
//! after it (see `writer`), so the write its caller waits on carries only what must come
//! before it. Projections keep their order among themselves.
//!
//! The inbox also counts the *ordered* writes (every write but a projection) from submission
//! until their answer: an independent write may be committed on its caller's thread (see
//! `inline`) only while that count is zero, so it never overtakes one of them.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use rusqlite::Connection;

use crate::writer::{Job, LAZY_WINDOW};

/// What travels on the channel.
pub(crate) enum Msg {
    /// A write to commit now.
    Job(Box<dyn Job>),
    /// A write to commit now that waiting projections need not precede.
    Independent(Box<dyn Job>),
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
    /// Ordered writes submitted and not yet answered.
    ordered: Arc<AtomicUsize>,
}

/// An ordered write on its way: leaves the count just before it is answered (its commit, or
/// its failure, is settled by then), or when it is dropped unanswered.
struct Counted {
    job: Box<dyn Job>,
    _in_flight: InFlight,
}

struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Job for Counted {
    fn run(&mut self, conn: &Connection) -> bool {
        self.job.run(conn)
    }

    fn finish(self: Box<Self>, path: &Path, commit: Option<&str>) {
        let Counted { job, _in_flight } = *self;
        drop(_in_flight);
        job.finish(path, commit);
    }
}

#[derive(Default)]
struct Side {
    /// Writes that may wait, in submission order; `true` marks a projection.
    waiting: Vec<(bool, Box<dyn Job>)>,
    /// When the oldest waiting projection arrived.
    lazy_since: Option<Instant>,
    /// The earliest deadline the writer has been told about for the side list.
    due: Option<Instant>,
    /// No more writes are taken.
    closed: bool,
}

impl Side {
    /// Takes the waiting writes, in order: all of them, or (`projections` false) all but the
    /// projections.
    fn take(&mut self, projections: bool, mut put: impl FnMut(Box<dyn Job>)) {
        for (_, job) in self
            .waiting
            .extract_if(.., |(lazy, _)| projections || !*lazy)
        {
            put(job);
        }
        if self.waiting.is_empty() {
            self.lazy_since = None;
        }
    }
}

/// What [`Inbox::drain`] found besides jobs.
pub(crate) struct Drained {
    /// A stop request was among the messages.
    pub stop: bool,
    /// The group is full and more is queued: commit again right away.
    pub more: bool,
    /// Projections were left waiting; they want a commit by this instant.
    pub lazy_due: Option<Instant>,
}

impl Inbox {
    /// A new inbox and the writer's end of its channel.
    pub fn new() -> (Self, Receiver<Msg>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let inbox = Self {
            tx,
            side: Mutex::new(Side::default()),
            ordered: Arc::new(AtomicUsize::new(0)),
        };
        (inbox, rx)
    }

    /// True when no ordered write is queued or being committed, and writes are still taken.
    pub fn quiet(&self) -> bool {
        self.ordered.load(Ordering::Acquire) == 0 && !self.side().closed
    }

    /// Wraps an ordered write so that it is counted until answered.
    fn counted(&self, job: Box<dyn Job>) -> Box<dyn Job> {
        self.ordered.fetch_add(1, Ordering::AcqRel);
        Box::new(Counted {
            job,
            _in_flight: InFlight(Arc::clone(&self.ordered)),
        })
    }

    fn side(&self) -> MutexGuard<'_, Side> {
        // The side list stays consistent whatever panicked: every change is a single step.
        self.side.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a write to commit now, after every write submitted before it. A write refused
    /// after [`Inbox::stop`] is dropped, which answers its ticket with `Closed`.
    pub fn send(&self, job: Box<dyn Job>) {
        self.send_urgent(job, true);
    }

    /// Queues a write to commit now that no waiting projection has to precede: it may commit
    /// before projections submitted earlier.
    pub fn send_independent(&self, job: Box<dyn Job>) {
        self.send_urgent(job, false);
    }

    fn send_urgent(&self, job: Box<dyn Job>, after_projections: bool) {
        let mut side = self.side();
        if side.closed {
            return;
        }
        let job = self.counted(job);
        side.take(after_projections, |job| {
            let _ = self.tx.send(Msg::Waited(job));
        });
        let _ = self.tx.send(if after_projections {
            Msg::Job(job)
        } else {
            Msg::Independent(job)
        });
    }

    /// Queues a write that may wait up to `window` for company.
    pub fn send_within(&self, job: Box<dyn Job>, window: Duration) {
        let mut side = self.side();
        if side.closed {
            return;
        }
        let job = self.counted(job);
        side.waiting.push((false, job));
        self.tell_due(&mut side, Instant::now() + window);
    }

    /// Queues a projection, which may wait up to [`LAZY_WINDOW`] and may commit after mail
    /// writes submitted later.
    pub fn send_lazy(&self, job: Box<dyn Job>) {
        let mut side = self.side();
        if side.closed {
            return;
        }
        side.waiting.push((true, job));
        let since = *side.lazy_since.get_or_insert_with(Instant::now);
        self.tell_due(&mut side, since + LAZY_WINDOW);
    }

    /// Wakes the writer when `due` is earlier than any deadline it knows.
    fn tell_due(&self, side: &mut Side, due: Instant) {
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
        side.take(true, |job| {
            let _ = self.tx.send(Msg::Waited(job));
        });
        let _ = self.tx.send(Msg::Stop);
    }

    /// The writer's side: takes every queued message (up to `max` jobs in `group`), then the
    /// waiting writes, in submission order: all of them when `lazy`, else (the group serves an
    /// independent write) all but projections.
    pub fn drain(
        &self,
        rx: &Receiver<Msg>,
        group: &mut Vec<Box<dyn Job>>,
        max: usize,
        lazy: bool,
    ) -> Drained {
        let mut side = self.side();
        let mut stop = false;
        while group.len() < max {
            match rx.try_recv() {
                Ok(Msg::Job(job) | Msg::Independent(job) | Msg::Waited(job)) => group.push(job),
                Ok(Msg::Due(_)) => {}
                Ok(Msg::Stop) => stop = true,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                    // Everything on the channel is older than the side list: take it too.
                    side.take(lazy, |job| group.push(job));
                    side.due = side.lazy_since.map(|since| since + LAZY_WINDOW);
                    return Drained {
                        stop,
                        more: false,
                        lazy_due: side.due,
                    };
                }
            }
        }
        Drained {
            stop,
            more: true,
            lazy_due: None,
        }
    }

    /// The writer's side, right after an urgent commit: when nothing is queued and only
    /// projections wait, takes them. True when it took some.
    pub fn drain_lazy(&self, rx: &Receiver<Msg>, group: &mut Vec<Box<dyn Job>>) -> bool {
        let mut side = self.side();
        let only_projections = side.waiting.iter().all(|(lazy, _)| *lazy);
        if !rx.is_empty() || side.waiting.is_empty() || !only_projections {
            return false;
        }
        side.take(true, |job| group.push(job));
        side.due = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crate::{Store, Ticket};

    type Op = Box<dyn FnOnce(&rusqlite::Connection) -> crate::error::OpResult<()> + Send>;

    /// Submits 40 writes through `submit` (which picks the kind of write by step), each
    /// recording its step when it runs; returns the order they ran in.
    fn run_order(inline: bool, submit: impl Fn(&Store, u32, Op) -> Ticket<()>) -> Vec<u32> {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        if !inline {
            store.queue_every_write();
        }
        let order = Arc::new(Mutex::new(Vec::new()));
        let tickets: Vec<Ticket<()>> = (0..40_u32)
            .map(|step| {
                let seen = Arc::clone(&order);
                let op: Op = Box::new(move |_| {
                    seen.lock().expect("order").push(step);
                    Ok(())
                });
                submit(&store, step, op)
            })
            .collect();
        for ticket in tickets {
            ticket.wait().expect("write");
        }
        order.lock().expect("order").clone()
    }

    /// Writes that may wait never overtake a later urgent write, nor the other way round:
    /// the writer runs every write in the order it was submitted.
    #[test]
    fn writes_run_in_submission_order() {
        let order = run_order(true, |store, step, op| match step % 4 {
            0 => store.submit("urgent", op),
            1 => store.submit_lazy("lazy", op),
            2 => store.submit_within("deferred", Duration::from_millis(1), op),
            _ => store.submit_within("later", Duration::from_secs(3600), op),
        });
        assert_eq!(order, (0..40).collect::<Vec<_>>());
    }

    /// Independent urgent writes keep their order with deferred writes, and projections keep
    /// theirs among themselves; a projection may run after independent writes submitted later,
    /// never before an earlier write. So whether the writer commits the independent writes or
    /// their callers do.
    #[test]
    fn projections_may_follow_later_independent_writes() {
        for inline in [true, false] {
            projections_may_follow_later_independent_writes_when(inline);
        }
    }

    fn projections_may_follow_later_independent_writes_when(inline: bool) {
        let order = run_order(inline, |store, step, op| match step % 3 {
            0 => store.submit_independent("urgent", true, op),
            1 => store.submit_lazy("lazy", op),
            _ => store.submit_within("deferred", Duration::from_millis(1), op),
        });
        let ordered: Vec<u32> = order.iter().copied().filter(|s| s % 3 != 1).collect();
        assert_eq!(ordered, (0..40).filter(|s| s % 3 != 1).collect::<Vec<_>>());
        let lazy: Vec<u32> = order.iter().copied().filter(|s| s % 3 == 1).collect();
        assert_eq!(lazy, (0..40).filter(|s| s % 3 == 1).collect::<Vec<_>>());
        for (at, step) in order.iter().enumerate() {
            assert!(
                (0..*step).all(|s| s % 3 == 1 || order[..at].contains(&s)),
                "step {step} ran before an earlier write: {order:?}"
            );
        }
    }

    /// A projection waiting when an urgent write arrives is committed right after it, without
    /// a sync of its own; its ticket resolves once a sync covers it: the next synced commit,
    /// or the writer's own sync when none follows.
    #[test]
    fn projections_follow_an_urgent_write_and_resolve_once_synced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        store.queue_every_write();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = |name: &'static str| {
            let seen = Arc::clone(&seen);
            move |_: &rusqlite::Connection| {
                seen.lock().expect("seen").push(name);
                Ok(name)
            }
        };
        let commits = store.commits();
        let projection = store.submit_lazy("projection", record("projection"));
        let urgent = store.submit_independent("urgent", true, record("urgent"));
        assert_eq!(urgent.wait().expect("urgent"), "urgent");
        // Nothing else is written: the writer syncs the projection on its own.
        assert_eq!(projection.wait().expect("projection"), "projection");
        assert_eq!(*seen.lock().expect("seen"), ["urgent", "projection"]);
        assert_eq!(
            store.commits(),
            commits + 1,
            "one synced commit, for the urgent write"
        );

        // A projection held unsynced is answered by the next synced commit.
        let projection = store.submit_lazy("projection", record("projection"));
        let first = store.submit_independent("first", true, record("first"));
        assert_eq!(first.wait().expect("first"), "first");
        let second = store.submit("second", record("second"));
        assert_eq!(second.wait().expect("second"), "second");
        assert_eq!(projection.wait().expect("projection"), "projection");

        // A projection still held at close is synced before the writer stops.
        let projection = store.submit_lazy("projection", record("projection"));
        store
            .submit_independent("last", true, record("last"))
            .wait()
            .expect("last");
        store.close();
        assert_eq!(projection.wait().expect("synced at close"), "projection");
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
