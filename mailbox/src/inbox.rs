//! A running turn's side of its mail: what it was handed, and the delivery phases (behaviour
//! §4). The turn takes its mail at model-request boundaries; once it has produced a final
//! answer, mail handed over later waits for the next turn (unless same-turn input is pending),
//! and new same-turn work reopens delivery.

use std::collections::VecDeque;

use arbor_protocol::Mail;

/// Whether mail handed over now may join the running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryPhase {
    /// Mail joins the next model request of the running turn.
    CurrentTurn,
    /// The turn has produced its final answer: mail waits for the next turn.
    NextTurn,
}

/// Mail a runtime was handed and has not yet taken into its history.
#[derive(Debug)]
pub struct Inbox {
    waiting: VecDeque<Mail>,
    phase: DeliveryPhase,
}

impl Default for Inbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Inbox {
    /// An empty inbox between turns.
    pub fn new() -> Self {
        Self {
            waiting: VecDeque::new(),
            phase: DeliveryPhase::NextTurn,
        }
    }

    /// Mail handed over (in arrival order).
    pub fn arrive(&mut self, mail: Mail) {
        self.waiting.push_back(mail);
    }

    /// A turn starts, delivery open: everything handed so far is its first request's mail.
    pub fn start_turn(&mut self) -> Vec<Mail> {
        self.phase = DeliveryPhase::CurrentTurn;
        self.waiting.drain(..).collect()
    }

    /// The mail that joins the next model request: everything waiting, in arrival order, in
    /// `CurrentTurn`; nothing in `NextTurn`.
    pub fn take_for_request(&mut self) -> Vec<Mail> {
        match self.phase {
            DeliveryPhase::CurrentTurn => self.waiting.drain(..).collect(),
            DeliveryPhase::NextTurn => Vec::new(),
        }
    }

    /// The turn produced a user-visible final answer: later mail waits for the next turn,
    /// unless same-turn input is already pending.
    pub fn final_answer(&mut self, same_turn_input_pending: bool) {
        if !same_turn_input_pending {
            self.phase = DeliveryPhase::NextTurn;
        }
    }

    /// New same-turn work (a steered message, a tool call after a preamble) reopens delivery.
    pub fn reopen(&mut self) {
        self.phase = DeliveryPhase::CurrentTurn;
    }

    /// The turn ended: what it did not take stays for the next one.
    pub fn end_turn(&mut self) {
        self.phase = DeliveryPhase::NextTurn;
    }

    /// The current phase.
    pub fn phase(&self) -> DeliveryPhase {
        self.phase
    }

    /// Mail waiting here.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no mail waits here.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::{AgentPath, MailKind};

    fn mail(content: &str) -> Mail {
        let root = AgentPath::root();
        Mail::new(
            root.clone(),
            root.join("w").expect("join"),
            MailKind::Message,
            content.into(),
        )
    }

    fn contents(mails: Vec<Mail>) -> Vec<String> {
        mails.into_iter().map(|m| m.content).collect()
    }

    #[test]
    fn mail_joins_the_running_turn_until_the_final_answer() {
        let mut inbox = Inbox::new();
        inbox.arrive(mail("before"));
        assert_eq!(contents(inbox.start_turn()), ["before"]);
        inbox.arrive(mail("early"));
        assert_eq!(contents(inbox.take_for_request()), ["early"]);
        inbox.final_answer(false);
        inbox.arrive(mail("late"));
        assert!(inbox.take_for_request().is_empty());
        inbox.end_turn();
        assert_eq!(contents(inbox.start_turn()), ["late"]);
    }

    #[test]
    fn same_turn_work_reopens_delivery() {
        let mut inbox = Inbox::new();
        inbox.start_turn();
        inbox.final_answer(false);
        inbox.arrive(mail("x"));
        inbox.reopen();
        assert_eq!(inbox.phase(), DeliveryPhase::CurrentTurn);
        assert_eq!(contents(inbox.take_for_request()), ["x"]);
        inbox.final_answer(true);
        assert_eq!(
            inbox.phase(),
            DeliveryPhase::CurrentTurn,
            "pending same-turn input"
        );
    }
}
