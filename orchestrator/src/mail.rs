//! Sending mail: the mail is a line of the session log first, then it is announced, then the
//! session task delivers it (waking the recipient when the mail asks for a turn). Inside the
//! session this happens at once; the log's sync covers it before anything about it leaves the
//! session (behaviour §4, §9).

use arbor_protocol::text::truncate_middle;
use arbor_protocol::{AgentPath, Event, Mail, MailKind, RolloutItem, UserMail};

use crate::agent::Agent;
use crate::config::MAIL_MAX_BYTES;
use crate::ctx::Ctx;
use crate::error::OrchestratorError;
use arbor_tree::Input;

/// The text a model sees for an empty message.
pub const EMPTY_MESSAGE: &str = "Empty message can't be sent to an agent";
/// The text a model sees for a follow-up to the root.
pub const FOLLOWUP_TO_ROOT: &str = "Follow-up tasks can't target the root agent";

/// Sends one mail from `author` to `recipient`: a `mail_sent` line of the author's, then
/// `mail.sent`, then the session delivers it.
pub fn send(
    ctx: &Ctx,
    author: &Agent,
    recipient: &Agent,
    kind: MailKind,
    content: &str,
) -> Result<Mail, OrchestratorError> {
    let mail = compose(author, recipient, kind, content);
    author
        .record([RolloutItem::MailSent(Box::new(mail.clone()))])
        .map_err(|err| OrchestratorError::Refused(format!("mail not sent: {err}")))?;
    announce(ctx, &mail);
    ctx.session.send(Input::Mail {
        recipient: recipient.id(),
        mail: mail.clone(),
    });
    Ok(mail)
}

/// A mail from `author` to `recipient`, its content cut to the size limit; not yet sent.
pub fn compose(author: &Agent, recipient: &Agent, kind: MailKind, content: &str) -> Mail {
    compose_to(author, recipient.path(), kind, content)
}

/// Like [`compose`], to an agent known by its path (one not made yet).
pub fn compose_to(author: &Agent, recipient: &AgentPath, kind: MailKind, content: &str) -> Mail {
    Mail::new(
        author.path().clone(),
        recipient.clone(),
        kind,
        truncate_middle(content, MAIL_MAX_BYTES),
    )
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

/// Reports a mail that is in the log (`mail.sent`).
pub fn announce(ctx: &Ctx, mail: &Mail) {
    ctx.events.emit(Event::MailSent {
        id: mail.id,
        kind: mail.kind,
        author: mail.author.clone(),
        recipient: mail.recipient.clone(),
        trigger_turn: mail.trigger_turn,
        from_user: mail.from_user,
    });
}

/// Mail from the user (author `/root`, from outside the tree) to `recipient`, sent by the
/// process driving the session: a `user_mail` line, then the mailbox; a follow-up wakes (and
/// revives) the recipient.
pub fn send_from_user(
    ctx: &Ctx,
    recipient: &Agent,
    kind: MailKind,
    content: &str,
) -> Result<Mail, OrchestratorError> {
    check_content(content).map_err(OrchestratorError::Refused)?;
    check_recipient(kind, recipient.path()).map_err(OrchestratorError::Refused)?;
    let mail = Mail::from_user(recipient.path().clone(), kind, content.to_string());
    let line = RolloutItem::UserMail(Box::new(UserMail {
        recipient_id: recipient.id(),
        mail: mail.clone(),
    }));
    ctx.log.append(recipient.id(), [line])?;
    announce(ctx, &mail);
    ctx.session.send(Input::Mail {
        recipient: recipient.id(),
        mail: mail.clone(),
    });
    Ok(mail)
}
