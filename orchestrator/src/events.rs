//! The event bus: every event goes to each subscriber in the order it was emitted, stamped
//! with the session log's position, so that what prints it can wait until the facts behind it
//! are durable.

use std::sync::Mutex;

use arbor_protocol::{Event, EventLine, Timestamp};
use arbor_rollout::log::SessionLog;
use tokio::sync::mpsc;

/// Fans events out to subscribers. Emission order is causal order: an event is emitted by the
/// code that caused it, after whatever caused it was emitted and recorded in the log.
#[derive(Debug)]
pub struct EventBus {
    log: SessionLog,
    /// Who listens. A lock of its own: emitting is not a change of the session's state, and
    /// any task emits.
    subscribers: Mutex<Vec<mpsc::UnboundedSender<EventLine>>>,
}

impl EventBus {
    pub fn new(log: SessionLog) -> Self {
        Self {
            log,
            subscribers: Mutex::new(Vec::new()),
        }
    }

    /// A new receiver of every event emitted from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<EventLine> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().push(tx);
        rx
    }

    /// Sends an event, stamped now and with the log's last append, to every live subscriber.
    pub fn emit(&self, event: Event) {
        let mut subscribers = self.lock();
        if subscribers.is_empty() {
            return;
        }
        let line = EventLine {
            event,
            ts: Timestamp::now(),
            lsn: self.log.appended(),
        };
        subscribers.retain(|tx| tx.send(line.clone()).is_ok());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::UnboundedSender<EventLine>>> {
        self.subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
