//! What the user sent and how it stands, followed through the lines read: mail made durable,
//! then delivered; an answer decided; a prompt to the root running its turn, then how that
//! turn ended (so the status line never says a turn started once it is over).

use arbor_protocol::{MailId, RolloutItem, RolloutLine};

use super::App;

/// How something the user sent stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SentState {
    Sending,
    /// A durable line of the session log.
    Durable,
    /// The recipient took the mail into its history.
    Delivered,
    /// A prompt started the root's turn, which runs.
    Running,
    /// Done, with what came of it.
    Done(String),
    Failed(String),
}

/// One thing the user sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub ticket: u64,
    pub what: String,
    pub state: SentState,
    pub mail: Option<MailId>,
    /// The mail asks for a turn.
    pub wakes: bool,
    pub request: Option<String>,
    /// The UI took the session over once to deliver it.
    pub retried: bool,
    /// The root's turns seen started when it was sent (a prompt's turn is a later one).
    pub turns_before: u64,
}

/// The root's turns as the lines read since the UI opened tell them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootTurns {
    /// Turns seen starting.
    pub started: u64,
    /// How the last one seen ended; `None` while it runs (or before any was seen).
    pub ended: Option<String>,
}

impl RootTurns {
    /// The state of a prompt whose turn has started, sent when `before` turns had: its turn
    /// may already have ended (a fast turn's lines can be read before the report comes).
    pub fn prompted(&self, before: u64) -> SentState {
        match &self.ended {
            Some(ended) if self.started > before => SentState::Done(ended.clone()),
            _ => SentState::Running,
        }
    }
}

impl App {
    /// Follows what a line says about something the user sent.
    pub(super) fn track(&mut self, line: &RolloutLine) {
        let root = self.session.as_ref().map(|session| session.root.id());
        let of_root = line.thread.is_some() && line.thread == root;
        match &line.item {
            RolloutItem::MailConsumed(consumed) => {
                for sent in &mut self.sent {
                    if sent.mail == Some(consumed.mail.id) {
                        sent.state = SentState::Delivered;
                    }
                }
            }
            RolloutItem::ApprovalDecided(decided) => {
                for sent in &mut self.sent {
                    if sent.request.as_deref() == Some(decided.request_id.as_str()) {
                        sent.state = SentState::Done(format!(
                            "decided {} by {}",
                            decided.outcome,
                            decided.decided_by.as_deref().unwrap_or("-")
                        ));
                    }
                }
            }
            RolloutItem::TurnStarted(_) if of_root => {
                self.root_turns.started += 1;
                self.root_turns.ended = None;
            }
            RolloutItem::TurnCompleted(_) | RolloutItem::TurnAborted(_) if of_root => {
                let ended = match &line.item {
                    RolloutItem::TurnAborted(aborted) => format!("turn {}", aborted.status()),
                    _ => "turn completed".to_string(),
                };
                for sent in &mut self.sent {
                    if sent.state == SentState::Running {
                        sent.state = SentState::Done(ended.clone());
                    }
                }
                self.root_turns.ended = Some(ended);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_runs_until_its_turn_ends_whichever_comes_first() {
        let mut turns = RootTurns::default();
        assert_eq!(turns.prompted(0), SentState::Running, "not seen yet");
        turns.started = 1;
        assert_eq!(turns.prompted(0), SentState::Running, "seen running");
        turns.ended = Some("turn completed".into());
        assert_eq!(
            turns.prompted(0),
            SentState::Done("turn completed".into()),
            "ended before the report came"
        );
        assert_eq!(
            turns.prompted(1),
            SentState::Running,
            "an earlier turn's end is not this prompt's"
        );
    }
}
