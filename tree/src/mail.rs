//! Mail arrival and the wakes it causes: a mail wakes an idle agent when it asks for a turn,
//! joins a running turn (handed over at once), or waits; an idle agent whose children are all
//! quiet is woken once with the results that wait for it (behaviour §4); after a resume, the
//! turns the last run owed or left interrupted are started again.

use arbor_mailbox::{Arrival, wake_once_due};
use arbor_protocol::{AgentStatus, Mail, MailId, ResponseItem, ThreadId};

use super::{Answer, Core, Effect, Ticket, Turn};

impl Core {
    /// A mail in the log for `recipient`. Mail to a closed agent, or a mail already here, is
    /// not delivered again.
    pub(crate) fn deliver(&mut self, recipient: ThreadId, mail: Mail) {
        let Some(entry) = self.agents.get_mut(&recipient) else {
            return;
        };
        if entry.closed || entry.mailbox.contains(mail.id) {
            return;
        }
        let arrival = entry.mailbox.push(mail);
        let running = matches!(entry.turn, Turn::Granted | Turn::Running);
        match arrival {
            Arrival::Wake => {
                self.schedule(recipient);
            }
            Arrival::JoinsTurn if running => {
                let mails = entry.mailbox.hand_over();
                self.emit(Effect::Hand {
                    agent: recipient,
                    mails,
                });
            }
            Arrival::JoinsTurn | Arrival::Waits => {}
        }
    }

    /// The running turn of `agent` took these mails into its history.
    pub(crate) fn consumed(&mut self, agent: ThreadId, ids: &[MailId]) {
        if let Some(entry) = self.agents.get_mut(&agent) {
            entry.mailbox.consumed(ids);
        }
    }

    /// Wakes `id` once when it is idle, none of its children (internal agents aside) has a
    /// turn scheduled, and results wait for it.
    pub(crate) fn wake_once(&mut self, id: ThreadId) {
        if !self.config.wake_once {
            return;
        }
        let Some(entry) = self.agents.get(&id) else {
            return;
        };
        if entry.path.is_root() && !self.config.root_driven {
            return;
        }
        if entry.scheduled() || entry.closed || entry.stopped {
            return;
        }
        if wake_once_due(true, entry.children.any_busy(), &entry.mailbox) {
            self.schedule(id);
        }
    }

    /// After a resume: turns the last run owed (mail that asks for one waits), then the
    /// wake-once that are due.
    pub(crate) fn finish_owed(&mut self) {
        let owed: Vec<ThreadId> = self
            .agents
            .values()
            .filter(|entry| !entry.internal && !entry.closed && entry.mailbox.owes_wake())
            .map(|entry| entry.id)
            .collect();
        for id in owed {
            self.schedule(id);
        }
        let all: Vec<ThreadId> = self.agents.keys().copied().collect();
        for id in all {
            self.wake_once(id);
        }
    }

    /// After a resume, by hand (`arbor resume --continue`): every open agent whose last turn
    /// was interrupted gets a turn with [`continue_note`] (the root too, unless `skip_root`),
    /// then the turns and wakes the last run owed, all before any of them runs.
    pub(crate) fn continue_interrupted(&mut self, ticket: Ticket, skip_root: bool) {
        let interrupted: Vec<_> = self
            .agents
            .values()
            .filter(|entry| !entry.internal && !entry.closed && !entry.stopped)
            .filter(|entry| !(skip_root && entry.path.is_root()))
            .filter_map(|entry| match &entry.status {
                AgentStatus::Interrupted(reason) => {
                    Some((entry.id, entry.path.clone(), reason.clone()))
                }
                _ => None,
            })
            .collect();
        let mut continued = Vec::with_capacity(interrupted.len());
        for (id, path, reason) in interrupted {
            self.input(id, vec![continue_note(&reason)]);
            continued.push(path);
        }
        self.finish_owed();
        self.emit(Effect::Reply {
            ticket,
            answer: Answer::Continued(continued),
        });
    }
}

/// The input of a turn that continues one that was interrupted for `reason`.
pub fn continue_note(reason: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "user".to_string(),
        content: format!(
            "Your previous turn was interrupted ({reason}) before it finished. Continue your \
             task from where it stopped."
        ),
    }
}
