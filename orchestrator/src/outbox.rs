//! A sender's outbox: its mails reach their recipients in the order they were handed to the
//! store, whatever order their commits are answered in and their waiting tasks happen to run.
//!
//! An agent sends from two places: its own task (`send_message`, `followup_task`, a spawn's
//! first message) and the background half of its turn ends (the result mail). Each waits for
//! its own commit, and commits answered together wake tasks that the runtime may run on two
//! workers at once. So every mail is numbered as it is handed to the store (under one lock, so
//! the numbers follow the store's order), and a committed mail is delivered only once every
//! mail numbered before it has been delivered or has failed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arbor_agent_graph::Ticket;
use arbor_protocol::Mail;

use crate::agent::Agent;
use crate::mail;
use crate::runtime::Inner;

/// What a sender has handed to the store and not yet delivered (`T`: a mail and its
/// recipient).
pub struct Outbox<T = (Arc<Agent>, Mail)> {
    /// The number the next mail gets.
    next: u64,
    /// The number of the next mail to deliver.
    due: u64,
    /// Mails whose commit is answered but whose turn has not come: `None` for one that failed.
    answered: BTreeMap<u64, Option<T>>,
}

impl<T> Default for Outbox<T> {
    fn default() -> Self {
        Self {
            next: 0,
            due: 0,
            answered: BTreeMap::new(),
        }
    }
}

impl<T> std::fmt::Debug for Outbox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("next", &self.next)
            .field("due", &self.due)
            .field("answered", &self.answered.len())
            .finish()
    }
}

impl<T> Outbox<T> {
    /// The number of the next mail handed to the store.
    fn number(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }

    /// Marks mail `seq` answered (`None`: failed), then hands `deliver` every mail whose turn
    /// has come, in order.
    fn answer(&mut self, seq: u64, committed: Option<T>, mut deliver: impl FnMut(T)) {
        self.answered.insert(seq, committed);
        while let Some(ready) = self.answered.remove(&self.due) {
            self.due += 1;
            if let Some(item) = ready {
                deliver(item);
            }
        }
    }
}

/// A mail handed to the store and not yet answered. Dropped without [`Posted::answer`], it
/// counts as failed, so the mails after it are not held back (`mail::publish` answers even
/// when its task is cancelled; only a runtime shutting down drops one unanswered).
pub struct Posted {
    inner: Arc<Inner>,
    sender: Arc<Agent>,
    seq: u64,
    open: bool,
}

/// Numbers a mail of `sender` and hands it to the store with `submit`, under the outbox lock.
pub fn post<T>(inner: &Arc<Inner>, sender: &Arc<Agent>, submit: impl FnOnce() -> T) -> (Posted, T) {
    let mut outbox = lock(&sender.outbox);
    let seq = outbox.number();
    let submitted = submit();
    drop(outbox);
    let posted = Posted {
        inner: Arc::clone(inner),
        sender: Arc::clone(sender),
        seq,
        open: true,
    };
    (posted, submitted)
}

impl Posted {
    /// Records the mail's commit (`Some`, with its recipient) or failure (`None`), then
    /// announces and delivers every mail now due, in order.
    pub fn answer(mut self, committed: Option<(Arc<Agent>, Mail)>) {
        self.open = false;
        settle(&self.inner, &self.sender, self.seq, committed);
    }

    /// For a mail whose sending task is gone (its turn was interrupted) while the store
    /// commits it: a task of its own waits for the commit and answers. Until then the sender
    /// counts as settling (waits on it do not return) and the tree as busy (not quiescent), so
    /// the mail is delivered before anyone concludes that nothing is left to happen.
    pub fn answer_later(self, ticket: Ticket<()>, recipient: Arc<Agent>, mail: Mail) {
        // Outside a runtime (it is being torn down) nothing can wait: dropped, the mail counts
        // as not delivered here; once committed it is in the store for the next driver.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inner = Arc::clone(&self.inner);
        let sender = Arc::clone(&self.sender);
        sender.state().settling += 1;
        inner.work_started();
        runtime.spawn(async move {
            let committed = ticket.await;
            self.answer(committed.is_ok().then_some((recipient, mail)));
            sender.state().settling -= 1;
            crate::turn_end::settled(&inner, &sender);
        });
    }
}

impl Drop for Posted {
    fn drop(&mut self) {
        if self.open {
            settle(&self.inner, &self.sender, self.seq, None);
        }
    }
}

/// Marks mail `seq` answered, then delivers, under the outbox lock, every mail whose turn has
/// come: so two tasks settling at once still deliver in order.
fn settle(inner: &Arc<Inner>, sender: &Agent, seq: u64, committed: Option<(Arc<Agent>, Mail)>) {
    lock(&sender.outbox).answer(seq, committed, |(recipient, mail)| {
        mail::announce(inner, &mail);
        mail::deliver(inner, &recipient, mail);
    });
}

fn lock(outbox: &Mutex<Outbox>) -> MutexGuard<'_, Outbox> {
    // Every change to an outbox is a single step: it stays consistent whatever panicked.
    outbox.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::Outbox;

    /// Mails answered out of order are delivered in the order they were numbered; a failed
    /// one (or one whose task was cancelled) lets the ones after it go.
    #[test]
    fn mails_leave_in_the_order_they_were_handed_over() {
        let mut outbox: Outbox<&str> = Outbox::default();
        let seqs: Vec<u64> = (0..4).map(|_| outbox.number()).collect();
        let mut out = Vec::new();
        outbox.answer(seqs[2], Some("third"), |m| out.push(m));
        outbox.answer(seqs[1], Some("second"), |m| out.push(m));
        assert!(out.is_empty(), "nothing goes before the first: {out:?}");
        outbox.answer(seqs[0], None, |m| out.push(m));
        assert_eq!(out, ["second", "third"]);
        outbox.answer(seqs[3], Some("fourth"), |m| out.push(m));
        assert_eq!(out, ["second", "third", "fourth"]);
        assert!(outbox.answered.is_empty());
    }
}
