//! Sending and delivering mail: persist (sender's rollout, then the store, synced), publish,
//! then hand the mail to the recipient's mailbox, waking it when the mail asks for a turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use arbor_agent_graph::Ticket;
use arbor_mailbox::Arrival;
use arbor_protocol::text::truncate_middle;
use arbor_protocol::{AgentPath, Event, Mail, MailKind, RolloutItem};
use arbor_rollout::{JournalEntry, append_journal, journal_path};

use crate::agent::Agent;
use crate::config::MAIL_MAX_BYTES;
use crate::outbox::{self, Posted};
use crate::runtime::Inner;

/// The text a model sees for an empty message.
pub const EMPTY_MESSAGE: &str = "Empty message can't be sent to an agent";
/// The text a model sees for a follow-up to the root.
pub const FOLLOWUP_TO_ROOT: &str = "Follow-up tasks can't target the root agent";

/// Sends one mail from `author` to `recipient`. Returns once the mail is in the author's
/// rollout and committed (and synced) in the store; only then is anyone told.
pub async fn send(
    inner: &Arc<Inner>,
    author: &Arc<Agent>,
    recipient: &Arc<Agent>,
    kind: MailKind,
    content: &str,
) -> Result<Mail, String> {
    // Count in, then let every other ready task run once: agents sending in this same instant
    // count themselves meanwhile, and agents with work to do take a step. Nothing is recorded
    // yet, so an interrupt here sends nothing.
    let sending = inner.senders.enter();
    tokio::task::yield_now().await;
    // A spawn's task always goes to the writer: a parent spawns its children one after another
    // and each new child wants the thread to start, so a sync per spawn held on the thread
    // would hold them all back (the fan-out benchmark measured it).
    let in_place = sending.alone() && kind != MailKind::Spawn;
    let mail = compose(author, recipient, kind, content);
    author
        .record(&[RolloutItem::MailSent(mail.clone())])
        .map_err(|err| format!("mail not sent: {err}"))?;
    let (posted, ticket) = outbox::post(inner, author, || {
        let store = &inner.store;
        if in_place {
            // Likely committed right here: no hand-off to the writer and back.
            store.enqueue_mail(inner.session_id, recipient.id(), &mail)
        } else {
            // Shared with whatever else the writer has, and the thread stays free.
            store.enqueue_mail_shared(inner.session_id, recipient.id(), &mail)
        }
    });
    publish(posted, recipient, &mail, ticket).await?;
    drop(sending);
    Ok(mail)
}

/// What a sender looks at to decide whether it is alone: how many agents are sending mail
/// right now (from just before a mail is recorded until it is committed), and how many steps
/// (model requests) agents have taken. A sender alone commits its mail in place, which holds
/// the session's thread for one sync; when other agents are sending, or stepped while it
/// yielded (they want the thread), its mail goes to the writer instead.
#[derive(Debug, Default)]
pub struct Senders {
    sending: AtomicUsize,
    steps: AtomicU64,
}

/// One sender, counted until dropped.
pub struct Sending<'a> {
    senders: &'a Senders,
    steps: u64,
}

impl Senders {
    pub fn enter(&self) -> Sending<'_> {
        self.sending.fetch_add(1, Ordering::AcqRel);
        Sending {
            senders: self,
            steps: self.steps.load(Ordering::Acquire),
        }
    }

    /// Counts one step of some agent's turn.
    pub fn step(&self) {
        self.steps.fetch_add(1, Ordering::AcqRel);
    }
}

impl Sending<'_> {
    /// True when no other agent is sending, and none took a step since this one entered.
    pub fn alone(&self) -> bool {
        self.senders.sending.load(Ordering::Acquire) == 1
            && self.senders.steps.load(Ordering::Acquire) == self.steps
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.senders.sending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A mail from `author` to `recipient`, its content cut to the size limit; not yet sent.
pub fn compose(author: &Agent, recipient: &Agent, kind: MailKind, content: &str) -> Mail {
    Mail::new(
        author.path().clone(),
        recipient.path().clone(),
        kind,
        truncate_middle(content, MAIL_MAX_BYTES),
    )
}

/// Waits for a mail already in its author's rollout to be committed by `ticket`, then
/// announces it and puts it in the recipient's mailbox, in its author's sending order.
///
/// Cancelling the waiting task (its turn interrupted) does not cancel the commit, so it does
/// not cancel the delivery either (`Posted::answer_later`).
pub async fn publish(
    posted: Posted,
    recipient: &Arc<Agent>,
    mail: &Mail,
    ticket: Ticket<()>,
) -> Result<(), String> {
    let mut pending = Pending(Some((posted, ticket, Arc::clone(recipient), mail.clone())));
    let Some((_, ticket, _, _)) = pending.0.as_mut() else {
        unreachable!("filled above");
    };
    let committed = ticket.await;
    if let Some((posted, _, recipient, mail)) = pending.0.take() {
        posted.answer(committed.is_ok().then_some((recipient, mail)));
    }
    committed.map_err(|err| format!("mail not sent: {err}"))
}

/// A mail whose commit [`publish`] is waiting for.
struct Pending(Option<(Posted, Ticket<()>, Arc<Agent>, Mail)>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some((posted, ticket, recipient, mail)) = self.0.take() {
            posted.answer_later(ticket, recipient, mail);
        }
    }
}

/// Puts an already persisted mail into the recipient's mailbox and wakes it if due.
pub fn deliver(inner: &Arc<Inner>, recipient: &Arc<Agent>, mail: Mail) {
    if inner.first_delivery(mail.id) {
        push(inner, recipient, mail);
    }
}

/// Puts a mail into the mailbox without the once-per-process check (the caller reserved its
/// id with `first_delivery`).
pub fn push(inner: &Arc<Inner>, recipient: &Arc<Agent>, mail: Mail) {
    let arrival = {
        let mut state = recipient.state();
        if state.closed {
            return;
        }
        state.mailbox.push(mail)
    };
    match arrival {
        Arrival::Wake => inner.request_turn(recipient),
        Arrival::JoinsTurn | Arrival::Waits => inner.bump(),
    }
}

/// Refuses empty content (after trimming), with the contract's text.
pub fn check_content(content: &str) -> Result<(), String> {
    if content.trim().is_empty() {
        return Err(EMPTY_MESSAGE.to_string());
    }
    Ok(())
}

/// Refuses a follow-up to the root, with the contract's text.
pub fn check_recipient(kind: MailKind, recipient: &AgentPath) -> Result<(), String> {
    if kind == MailKind::Followup && recipient.is_root() {
        return Err(FOLLOWUP_TO_ROOT.to_string());
    }
    Ok(())
}

/// Reports a mail that has just been committed (`mail.sent`).
pub fn announce(inner: &Inner, mail: &Mail) {
    inner.events.emit(Event::MailSent {
        id: mail.id,
        kind: mail.kind,
        author: mail.author.clone(),
        recipient: mail.recipient.clone(),
        trigger_turn: mail.trigger_turn,
    });
}

/// Mail from the user (author `/root`, from outside the tree) to `recipient`: the session
/// journal, then the store (committed), then the mailbox; a follow-up wakes (and revives) it.
pub async fn send_from_user(
    inner: &Arc<Inner>,
    root: &Agent,
    recipient: &Arc<Agent>,
    kind: MailKind,
    content: &str,
) -> Result<Mail, String> {
    check_content(content)?;
    check_recipient(kind, recipient.path())?;
    let mail = Mail::new(
        AgentPath::root(),
        recipient.path().clone(),
        kind,
        content.to_string(),
    );
    // Reserved before it is journaled, so the journal watcher leaves it to this process.
    inner.first_delivery(mail.id);
    let entry = JournalEntry::Mail {
        recipient_id: recipient.id(),
        mail: mail.clone(),
    };
    let path = journal_path(&root.identity.rollout_path, inner.session_id);
    tokio::task::spawn_blocking(move || append_journal(&path, &entry))
        .await
        .map_err(|err| err.to_string())?
        .map_err(|err| err.to_string())?;
    inner
        .store
        .enqueue_mail(inner.session_id, recipient.id(), &mail)
        .await
        .map_err(|err| err.to_string())?;
    announce(inner, &mail);
    push(inner, recipient, mail.clone());
    Ok(mail)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Senders;

    /// Tasks that start sending in the same instant all see each other after the yield, on the
    /// session runtime (one worker): none of them commits alone. Nor does one that sees
    /// another agent step meanwhile.
    #[test]
    fn senders_in_the_same_instant_see_each_other() {
        let runtime = crate::session_runtime().expect("runtime");
        // Everything runs on the worker, where agent tasks run.
        let seen = runtime.block_on(runtime.spawn(async {
            let senders = Arc::new(Senders::default());
            // A sender stays counted until its mail is committed: here, until all have looked.
            let committed = Arc::new(tokio::sync::Barrier::new(8));
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    let senders = Arc::clone(&senders);
                    let committed = Arc::clone(&committed);
                    tokio::spawn(async move {
                        let sending = senders.enter();
                        tokio::task::yield_now().await;
                        let alone = sending.alone();
                        committed.wait().await;
                        alone
                    })
                })
                .collect();
            let mut seen = Vec::new();
            for task in tasks {
                seen.push(task.await.expect("task"));
            }
            // One that comes later, once they are done, is alone...
            let sending = senders.enter();
            tokio::task::yield_now().await;
            seen.push(sending.alone());
            drop(sending);
            // ...unless another agent took a step while it yielded.
            let sending = senders.enter();
            let busy = Arc::clone(&senders);
            tokio::spawn(async move { busy.step() });
            tokio::task::yield_now().await;
            seen.push(sending.alone());
            seen
        }));
        let seen = seen.expect("the test task");
        let mut expected = vec![false; 8];
        expected.extend([true, false]);
        assert_eq!(seen, expected);
    }
}
