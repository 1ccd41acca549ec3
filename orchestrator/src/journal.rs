//! The live side of the session journal: the driving process watches the journal and applies
//! what other `arbor` processes appended (mail, closes, interrupts) within a second.

use std::sync::Arc;
use std::time::Duration;

use arbor_agent_graph::Ticket;
use arbor_rollout::{JournalEntry, journal_len, journal_path, read_journal};

use crate::agent::Agent;
use crate::runtime::Inner;
use crate::tools::manage;

/// How often the driver looks for new journal entries.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Watches the journal of `root`'s session from byte `offset` (entries before it are known).
pub fn watch_from(inner: &Arc<Inner>, root: &Arc<Agent>, mut offset: u64) {
    let path = journal_path(&root.identity.rollout_path, inner.session_id);
    let watcher = Arc::clone(inner);
    let token = inner.root_token.clone();
    inner.tracker.spawn(async move {
        let mut tick = tokio::time::interval(POLL_INTERVAL);
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                _ = tick.tick() => {}
            }
            if journal_len(&path) <= offset {
                continue;
            }
            let at = path.clone();
            let read = tokio::task::spawn_blocking(move || read_journal(&at, offset)).await;
            match read {
                Ok(Ok(read)) => {
                    for notice in &read.notices {
                        tracing::warn!("{notice}");
                    }
                    // Every mail is handed to the writer before any is awaited: one commit
                    // for the lot, and none on the agents' thread.
                    let tickets: Vec<_> = read
                        .entries
                        .iter()
                        .map(|(entry, _)| storing(&watcher, entry))
                        .collect();
                    for ((entry, _), ticket) in read.entries.into_iter().zip(tickets) {
                        if stored(&entry, ticket).await {
                            apply(&watcher, entry).await;
                        }
                    }
                    offset = read.next;
                }
                Ok(Err(err)) => tracing::error!(error = %err, "session journal unreadable"),
                Err(err) => tracing::error!(error = %err, "session journal reader failed"),
            }
        }
    });
}

/// Watches the journal of a new session (it has none yet).
pub fn watch(inner: &Arc<Inner>, root: &Arc<Agent>) {
    let path = journal_path(&root.identity.rollout_path, inner.session_id);
    watch_from(inner, root, journal_len(&path));
}

/// A journaled mail is applied only once its store row is committed, so that consuming it can
/// mark it consumed. The journal entry is the mail's durable record: the driver stores it
/// itself (a mail id is stored once, so this and the sending process's own write agree), and
/// a sender that died, or whose store write failed, between the two neither loses the mail nor
/// holds up the entries after it. `None` when there is nothing to store: not a mail, or a mail
/// this process sent (`send_from_user` stores it itself) or delivered already.
fn storing(inner: &Arc<Inner>, entry: &JournalEntry) -> Option<Ticket<()>> {
    let JournalEntry::Mail { recipient_id, mail } = entry else {
        return None;
    };
    if inner.delivered_here(mail.id) {
        return None;
    }
    Some(
        inner
            .store
            .enqueue_mail_shared(inner.session_id, *recipient_id, mail),
    )
}

/// Whether `entry` may be applied: its mail, if [`storing`] stored one, is committed.
async fn stored(entry: &JournalEntry, ticket: Option<Ticket<()>>) -> bool {
    let Some(ticket) = ticket else {
        return true;
    };
    match ticket.await {
        Ok(()) => true,
        Err(err) => {
            if let JournalEntry::Mail { mail, .. } = entry {
                // Not delivered live; the journal keeps it for `arbor doctor --rebuild`.
                tracing::error!(mail = %mail.id, error = %err, "journaled mail not stored");
            }
            false
        }
    }
}

async fn apply(inner: &Arc<Inner>, entry: JournalEntry) {
    match entry {
        JournalEntry::Mail { recipient_id, mail } => {
            let Some(agent) = inner.registry.get(recipient_id) else {
                return;
            };
            if agent.state().mailbox.contains(mail.id) || !inner.first_delivery(mail.id) {
                return;
            }
            crate::mail::announce(inner, &mail);
            crate::mail::push(inner, &agent, mail);
        }
        JournalEntry::Close { target_id, .. } => {
            if let Some(agent) = inner.registry.get(target_id)
                && !agent.state().closed
                && let Err(err) = manage::close(inner, None, &agent).await
            {
                tracing::error!(path = %agent.path(), error = %err, "close from another process failed");
            }
        }
        JournalEntry::Interrupt { target_id, .. } => {
            if let Some(agent) = inner.registry.get(target_id) {
                manage::interrupt(inner, &agent);
            }
        }
    }
}
