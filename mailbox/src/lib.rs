//! Per-agent mailboxes: arrival order, delivery phases (current turn or next turn), wake
//! decisions and unread counts (behaviour §4). No I/O: the runtime persists mail through the
//! store before it reaches a mailbox, and records consumption in the recipient's rollout.

use std::collections::{HashSet, VecDeque};

use arbor_protocol::{Mail, MailId, MailKind};

/// Whether mail that arrives now may join the running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryPhase {
    /// Mail joins the next model request of the running turn.
    CurrentTurn,
    /// The turn has produced its final answer: mail waits for the next turn.
    NextTurn,
}

/// What the runtime should do after a mail arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The agent was idle and the mail asks for a turn: start one.
    Wake,
    /// The mail joins the running turn at its next request boundary.
    JoinsTurn,
    /// The mail waits (queue-only mail to an idle agent, or mail after the final answer).
    Waits,
}

/// One agent's undelivered mail and delivery phase.
#[derive(Debug)]
pub struct Mailbox {
    pending: VecDeque<Mail>,
    /// The ids in `pending`, so a duplicate is found without a scan (a busy parent can hold
    /// thousands of unread results).
    ids: HashSet<MailId>,
    phase: DeliveryPhase,
    turn_active: bool,
}

impl Default for Mailbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Mailbox {
    /// An empty mailbox of an idle agent.
    pub fn new() -> Self {
        Self {
            pending: VecDeque::new(),
            ids: HashSet::new(),
            phase: DeliveryPhase::NextTurn,
            turn_active: false,
        }
    }

    /// Restores undelivered mail (in enqueue order) after a revival or a restart. Mail whose
    /// id is already present is ignored, so delivery stays exactly-once.
    pub fn restore(&mut self, mail: impl IntoIterator<Item = Mail>) {
        for mail in mail {
            self.insert(mail);
        }
    }

    /// Drops waiting mail whose id is in `ids` (it is already in the agent's history, as a
    /// rollout showed); returns the ids dropped.
    pub fn remove_ids(&mut self, ids: &std::collections::HashSet<MailId>) -> Vec<MailId> {
        let mut removed = Vec::new();
        self.pending.retain(|mail| {
            let keep = !ids.contains(&mail.id);
            if !keep {
                removed.push(mail.id);
            }
            keep
        });
        for id in &removed {
            self.ids.remove(id);
        }
        removed
    }

    /// Whether a mail with this id is waiting here.
    pub fn contains(&self, id: MailId) -> bool {
        self.ids.contains(&id)
    }

    /// Appends a mail unless its id is already waiting; true when it was added.
    fn insert(&mut self, mail: Mail) -> bool {
        if !self.ids.insert(mail.id) {
            return false;
        }
        self.pending.push_back(mail);
        true
    }

    /// A mail arrived (already persisted). Says whether it wakes the agent, joins its running
    /// turn or waits. Duplicate ids are dropped and reported as `Waits`.
    pub fn push(&mut self, mail: Mail) -> Arrival {
        let trigger = mail.trigger_turn;
        if !self.insert(mail) {
            return Arrival::Waits;
        }
        match (self.turn_active, self.phase) {
            (true, DeliveryPhase::CurrentTurn) => Arrival::JoinsTurn,
            (true, DeliveryPhase::NextTurn) => Arrival::Waits,
            (false, _) if trigger => Arrival::Wake,
            (false, _) => Arrival::Waits,
        }
    }

    /// A turn starts: delivery is open for it.
    pub fn start_turn(&mut self) {
        self.turn_active = true;
        self.phase = DeliveryPhase::CurrentTurn;
    }

    /// The mail that joins the next model request: everything pending, in arrival order, when
    /// the phase is `CurrentTurn`; nothing otherwise.
    pub fn take_for_request(&mut self) -> Vec<Mail> {
        match self.phase {
            DeliveryPhase::CurrentTurn => {
                self.ids.clear();
                self.pending.drain(..).collect()
            }
            DeliveryPhase::NextTurn => Vec::new(),
        }
    }

    /// The turn produced a user-visible final answer: later mail waits for the next turn,
    /// unless same-turn input is already pending (`same_turn_input_pending`).
    pub fn final_answer(&mut self, same_turn_input_pending: bool) {
        if !same_turn_input_pending {
            self.phase = DeliveryPhase::NextTurn;
        }
    }

    /// New same-turn work (a steered message, a tool call after a preamble) reopens delivery.
    pub fn reopen(&mut self) {
        if self.turn_active {
            self.phase = DeliveryPhase::CurrentTurn;
        }
    }

    /// The turn ended (completed, errored or interrupted). Pending mail stays: nothing is
    /// dropped. Returns true when pending mail asks for another turn.
    pub fn end_turn(&mut self) -> bool {
        self.turn_active = false;
        self.phase = DeliveryPhase::NextTurn;
        self.owes_wake()
    }

    /// True when an idle agent holds mail that asks for a turn.
    pub fn owes_wake(&self) -> bool {
        !self.turn_active && self.pending.iter().any(|m| m.trigger_turn)
    }

    /// The current phase.
    pub fn phase(&self) -> DeliveryPhase {
        self.phase
    }

    /// Whether a turn is running.
    pub fn turn_active(&self) -> bool {
        self.turn_active
    }

    /// Mail not yet delivered into history.
    pub fn unread(&self) -> usize {
        self.pending.len()
    }

    /// Whether undelivered mail of this kind is waiting.
    pub fn has_unread(&self, kind: MailKind) -> bool {
        self.pending.iter().any(|m| m.kind == kind)
    }

    /// Whether undelivered mail from any of `authors` is waiting.
    pub fn has_unread_from(&self, authors: &[arbor_protocol::AgentPath]) -> bool {
        self.pending.iter().any(|m| authors.contains(&m.author))
    }

    /// The undelivered mail, in arrival order.
    pub fn pending(&self) -> impl Iterator<Item = &Mail> {
        self.pending.iter()
    }
}

/// The wake-once rule (behaviour §4): an idle agent whose children have no active or queued
/// turn, and that holds unread `result` mail, is woken once with those results.
pub fn wake_once_due(agent_idle: bool, children_busy: bool, mailbox: &Mailbox) -> bool {
    agent_idle && !children_busy && mailbox.has_unread(MailKind::Result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::AgentPath;

    fn mail(kind: MailKind, content: &str) -> Mail {
        let root = AgentPath::root();
        let child = root.join("w").expect("join");
        Mail::new(root, child, kind, content.to_string())
    }

    fn contents(mails: Vec<Mail>) -> Vec<String> {
        mails.into_iter().map(|m| m.content).collect()
    }

    /// A mail id is held once, whichever way it arrives, and leaves with its mail.
    #[test]
    fn duplicates_are_dropped_and_ids_follow_their_mail() {
        let mut mb = Mailbox::new();
        let go = mail(MailKind::Followup, "go");
        let note = mail(MailKind::Message, "note");
        assert_eq!(mb.push(go.clone()), Arrival::Wake);
        assert_eq!(mb.push(go.clone()), Arrival::Waits, "a duplicate");
        mb.restore([go.clone(), note.clone(), note.clone()]);
        assert_eq!(mb.unread(), 2);
        assert!(mb.owes_wake());
        let removed = mb.remove_ids(&[go.id].into_iter().collect());
        assert_eq!(removed, [go.id]);
        assert!(!mb.owes_wake(), "the only follow-up left");
        assert!(!mb.contains(go.id));
        assert_eq!(mb.push(go.clone()), Arrival::Wake, "it may come back");
        mb.start_turn();
        assert_eq!(contents(mb.take_for_request()), ["note", "go"]);
        assert!(!mb.contains(note.id));
        assert!(!mb.end_turn(), "nothing left asks for a turn");
    }

    #[test]
    fn idle_agents_wake_only_for_trigger_mail() {
        let mut mb = Mailbox::new();
        assert_eq!(mb.push(mail(MailKind::Message, "queued")), Arrival::Waits);
        assert!(!mb.owes_wake());
        assert_eq!(mb.unread(), 1);
        assert_eq!(mb.push(mail(MailKind::Followup, "go")), Arrival::Wake);
        mb.start_turn();
        assert_eq!(contents(mb.take_for_request()), ["queued", "go"]);
        assert_eq!(mb.unread(), 0);
    }

    #[test]
    fn mail_joins_the_running_turn_until_the_final_answer() {
        let mut mb = Mailbox::new();
        mb.start_turn();
        assert_eq!(
            mb.push(mail(MailKind::Message, "early")),
            Arrival::JoinsTurn
        );
        assert_eq!(contents(mb.take_for_request()), ["early"]);
        mb.final_answer(false);
        assert_eq!(mb.push(mail(MailKind::Followup, "late")), Arrival::Waits);
        assert!(mb.take_for_request().is_empty());
        assert!(mb.end_turn(), "the late follow-up is owed a turn");
        assert_eq!(mb.push(mail(MailKind::Message, "later")), Arrival::Waits);
        mb.start_turn();
        assert_eq!(contents(mb.take_for_request()), ["late", "later"]);
    }

    #[test]
    fn same_turn_work_reopens_delivery() {
        let mut mb = Mailbox::new();
        mb.start_turn();
        mb.final_answer(false);
        mb.push(mail(MailKind::Message, "x"));
        mb.reopen();
        assert_eq!(mb.phase(), DeliveryPhase::CurrentTurn);
        assert_eq!(contents(mb.take_for_request()), ["x"]);
        mb.final_answer(true);
        assert_eq!(
            mb.phase(),
            DeliveryPhase::CurrentTurn,
            "pending same-turn input keeps it open"
        );
    }

    #[test]
    fn ending_a_turn_never_drops_mail_and_duplicates_are_ignored() {
        let mut mb = Mailbox::new();
        mb.start_turn();
        mb.final_answer(false);
        let m = mail(MailKind::Message, "kept");
        mb.push(m.clone());
        assert_eq!(mb.push(m.clone()), Arrival::Waits);
        assert!(!mb.end_turn());
        mb.restore([m]);
        assert_eq!(mb.unread(), 1);
    }

    #[test]
    fn wake_once_needs_idle_parent_quiet_children_and_results() {
        let mut mb = Mailbox::new();
        assert!(!wake_once_due(true, false, &mb));
        mb.push(mail(MailKind::Result, "done"));
        assert!(wake_once_due(true, false, &mb));
        assert!(!wake_once_due(true, true, &mb));
        assert!(!wake_once_due(false, false, &mb));
    }
}
