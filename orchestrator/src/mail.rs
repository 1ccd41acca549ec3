//! Sending and delivering mail: persist (sender's rollout, then the store, synced), publish,
//! then hand the mail to the recipient's mailbox, waking it when the mail asks for a turn.

use std::sync::Arc;

use arbor_mailbox::Arrival;
use arbor_protocol::text::truncate_middle;
use arbor_protocol::{Event, Mail, MailKind, RolloutItem};

use crate::agent::Agent;
use crate::config::MAIL_MAX_BYTES;
use crate::runtime::Inner;

/// The text a model sees for an empty message.
pub const EMPTY_MESSAGE: &str = "Empty message can't be sent to an agent";

/// Sends one mail from `author` to `recipient`. Returns once the mail is in the author's
/// rollout and committed (and synced) in the store; only then is anyone told.
pub async fn send(
    inner: &Arc<Inner>,
    author: &Agent,
    recipient: &Arc<Agent>,
    kind: MailKind,
    content: &str,
) -> Result<Mail, String> {
    let mail = Mail::new(
        author.path().clone(),
        recipient.path().clone(),
        kind,
        truncate_middle(content, MAIL_MAX_BYTES),
    );
    author
        .record(&[RolloutItem::MailSent(mail.clone())])
        .map_err(|err| format!("mail not sent: {err}"))?;
    inner
        .store
        .enqueue_mail(inner.session_id, recipient.id(), &mail)
        .await
        .map_err(|err| format!("mail not sent: {err}"))?;
    inner.events.emit(Event::MailSent {
        id: mail.id,
        kind: mail.kind,
        author: mail.author.clone(),
        recipient: mail.recipient.clone(),
        trigger_turn: mail.trigger_turn,
    });
    deliver(inner, recipient, mail.clone());
    Ok(mail)
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

/// Whether content is empty after trimming.
pub fn is_empty_message(content: &str) -> bool {
    content.trim().is_empty()
}
