//! Sending and delivering mail: persist (sender's rollout, then the store, synced), publish,
//! then hand the mail to the recipient's mailbox, waking it when the mail asks for a turn.

use std::sync::Arc;

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
    let mail = compose(author, recipient, kind, content);
    author
        .record(&[RolloutItem::MailSent(mail.clone())])
        .map_err(|err| format!("mail not sent: {err}"))?;
    let (posted, ticket) = outbox::post(inner, author, || {
        inner
            .store
            .enqueue_mail(inner.session_id, recipient.id(), &mail)
    });
    publish(posted, recipient, &mail, ticket).await?;
    Ok(mail)
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
