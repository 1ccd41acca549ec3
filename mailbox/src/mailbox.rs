//! The session's side of one agent's mail: what waits, what a turn was handed and has not yet
//! taken into its history, and the wake decisions.

use std::collections::{HashSet, VecDeque};

use arbor_protocol::{AgentPath, Mail, MailId, MailKind};

/// What the session should do after a mail arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The agent was idle and the mail asks for a turn: start one.
    Wake,
    /// A turn is running: hand the mail over ([`Mailbox::hand_over`]); it joins a later
    /// request of that turn, or the next turn if the turn has already answered.
    JoinsTurn,
    /// The mail waits (queue-only mail to an idle agent).
    Waits,
}

/// One agent's undelivered mail. `handed` is mail given to a running turn (in arrival order,
/// before `pending`) that the turn has not yet taken into its history.
#[derive(Debug, Default)]
pub struct Mailbox {
    handed: VecDeque<Mail>,
    pending: VecDeque<Mail>,
    /// The ids of both queues, so a duplicate is found without a scan (a busy parent can hold
    /// thousands of unread results).
    ids: HashSet<MailId>,
    turn_active: bool,
}

impl Mailbox {
    /// An empty mailbox of an idle agent.
    pub fn new() -> Self {
        Self::default()
    }

    /// Restores undelivered mail (in send order) after a restart. Mail whose id is already
    /// here is ignored, so delivery stays exactly-once.
    pub fn restore(&mut self, mail: impl IntoIterator<Item = Mail>) {
        for mail in mail {
            self.insert(mail);
        }
    }

    /// Drops mail whose id is in `ids` (it is already in the agent's history, as its rollout
    /// showed); returns the ids dropped.
    pub fn remove_ids(&mut self, ids: &HashSet<MailId>) -> Vec<MailId> {
        let mut removed = Vec::new();
        for queue in [&mut self.handed, &mut self.pending] {
            queue.retain(|mail| {
                let keep = !ids.contains(&mail.id);
                if !keep {
                    removed.push(mail.id);
                }
                keep
            });
        }
        for id in &removed {
            self.ids.remove(id);
        }
        removed
    }

    /// Whether a mail with this id is here.
    pub fn contains(&self, id: MailId) -> bool {
        self.ids.contains(&id)
    }

    fn insert(&mut self, mail: Mail) -> bool {
        if !self.ids.insert(mail.id) {
            return false;
        }
        self.pending.push_back(mail);
        true
    }

    /// A mail arrived (already in the log). Says whether it wakes the agent, joins its running
    /// turn or waits. A duplicate id is dropped and reported as `Waits`.
    pub fn push(&mut self, mail: Mail) -> Arrival {
        let trigger = mail.trigger_turn;
        if !self.insert(mail) {
            return Arrival::Waits;
        }
        if self.turn_active {
            Arrival::JoinsTurn
        } else if trigger {
            Arrival::Wake
        } else {
            Arrival::Waits
        }
    }

    /// A turn starts: everything waiting is handed to it (its first request's mail).
    pub fn start_turn(&mut self) -> Vec<Mail> {
        self.turn_active = true;
        self.hand_over()
    }

    /// During a turn: hands what waits over to it (it joins the turn's next request).
    pub fn hand_over(&mut self) -> Vec<Mail> {
        let mails: Vec<Mail> = self.pending.drain(..).collect();
        self.handed.extend(mails.iter().cloned());
        mails
    }

    /// The turn took these handed mails into its history.
    pub fn consumed(&mut self, ids: &[MailId]) {
        let mut taken = 0;
        for id in ids {
            if self.ids.remove(id) {
                taken += 1;
            }
        }
        if taken == 0 {
            return;
        }
        // A turn takes its handed mail in order, so what it took is usually the front; a
        // parent that waited long takes thousands of results at once: one pass at most, not
        // one scan of the ids per mail.
        while taken > 0
            && let Some(front) = self.handed.front()
            && !self.ids.contains(&front.id)
        {
            self.handed.pop_front();
            taken -= 1;
        }
        if taken > 0 {
            let known = &self.ids;
            self.handed.retain(|mail| known.contains(&mail.id));
        }
    }

    /// The turn ended. Nothing is dropped: handed mail the turn did not take stays with the
    /// agent's runtime for its next turn. True when mail here asks for another turn.
    pub fn end_turn(&mut self) -> bool {
        self.turn_active = false;
        self.owes_wake()
    }

    /// The runtime holding the handed mail is gone (evicted): that mail waits again, first.
    pub fn take_back(&mut self) {
        while let Some(mail) = self.handed.pop_back() {
            self.pending.push_front(mail);
        }
    }

    /// True when an idle agent holds mail that asks for a turn.
    pub fn owes_wake(&self) -> bool {
        !self.turn_active && self.all().any(|mail| mail.trigger_turn)
    }

    /// Whether a turn is running.
    pub fn turn_active(&self) -> bool {
        self.turn_active
    }

    /// Mail not yet in the agent's history.
    pub fn unread(&self) -> usize {
        self.handed.len() + self.pending.len()
    }

    /// Whether unread mail of this kind is here.
    pub fn has_unread(&self, kind: MailKind) -> bool {
        self.all().any(|mail| mail.kind == kind)
    }

    /// The authors of unread mail among `authors`, in the order given.
    pub fn unread_from<'a>(&self, authors: &'a [AgentPath]) -> Vec<&'a AgentPath> {
        let present: HashSet<&AgentPath> = self.all().map(|mail| &mail.author).collect();
        authors.iter().filter(|a| present.contains(a)).collect()
    }

    /// Unread mail, in arrival order.
    pub fn all(&self) -> impl Iterator<Item = &Mail> {
        self.handed.iter().chain(self.pending.iter())
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

    fn mail(kind: MailKind, content: &str) -> Mail {
        let root = AgentPath::root();
        let child = root.join("w").expect("join");
        Mail::new(root, child, kind, content.to_string())
    }

    fn contents(mails: &[Mail]) -> Vec<&str> {
        mails.iter().map(|m| m.content.as_str()).collect()
    }

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
        assert_eq!(contents(&mb.start_turn()), ["note", "go"]);
        assert_eq!(mb.unread(), 2, "handed, not yet taken");
        mb.consumed(&[note.id, go.id]);
        assert!(!mb.contains(note.id));
        assert!(!mb.end_turn(), "nothing left asks for a turn");
    }

    #[test]
    fn consumed_mail_leaves_the_handed_queue_in_any_order() {
        let mut mb = Mailbox::new();
        mb.start_turn();
        let mails: Vec<Mail> = (0..5)
            .map(|i| mail(MailKind::Result, &format!("r{i}")))
            .collect();
        for m in &mails {
            mb.push(m.clone());
        }
        assert_eq!(mb.hand_over().len(), 5);
        mb.consumed(&[mails[2].id]);
        mb.consumed(&[mails[0].id, mails[1].id]);
        assert_eq!(mb.unread(), 2);
        mb.consumed(&[mails[4].id, mails[4].id]);
        mb.take_back();
        assert_eq!(
            contents(&mb.start_turn()),
            ["r3"],
            "only the untaken mail is left"
        );
    }

    #[test]
    fn idle_agents_wake_only_for_trigger_mail() {
        let mut mb = Mailbox::new();
        assert_eq!(mb.push(mail(MailKind::Message, "queued")), Arrival::Waits);
        assert!(!mb.owes_wake());
        assert_eq!(mb.unread(), 1);
        assert_eq!(mb.push(mail(MailKind::Followup, "go")), Arrival::Wake);
        assert_eq!(contents(&mb.start_turn()), ["queued", "go"]);
    }

    #[test]
    fn mail_to_a_running_turn_is_handed_over_and_what_it_left_is_owed_a_turn() {
        let mut mb = Mailbox::new();
        mb.start_turn();
        let early = mail(MailKind::Message, "early");
        assert_eq!(mb.push(early.clone()), Arrival::JoinsTurn);
        assert_eq!(contents(&mb.hand_over()), ["early"]);
        mb.consumed(&[early.id]);
        let late = mail(MailKind::Followup, "late");
        assert_eq!(mb.push(late), Arrival::JoinsTurn);
        assert_eq!(contents(&mb.hand_over()), ["late"]);
        // The turn answered before taking it: it stays with the runtime, and asks for a turn.
        assert!(mb.end_turn(), "the late follow-up is owed a turn");
        assert_eq!(mb.unread(), 1);
        assert_eq!(mb.push(mail(MailKind::Message, "later")), Arrival::Waits);
        assert_eq!(
            contents(&mb.start_turn()),
            ["later"],
            "late is already handed"
        );
    }

    #[test]
    fn mail_handed_to_a_runtime_that_is_gone_waits_again_first() {
        let mut mb = Mailbox::new();
        mb.start_turn();
        mb.push(mail(MailKind::Message, "a"));
        mb.hand_over();
        mb.end_turn();
        mb.push(mail(MailKind::Message, "b"));
        mb.take_back();
        assert_eq!(contents(&mb.start_turn()), ["a", "b"]);
    }

    #[test]
    fn wake_once_needs_idle_parent_quiet_children_and_results() {
        let mut mb = Mailbox::new();
        assert!(!wake_once_due(true, false, &mb));
        mb.push(mail(MailKind::Result, "done"));
        assert!(wake_once_due(true, false, &mb));
        assert!(!wake_once_due(true, true, &mb));
        assert!(!wake_once_due(false, false, &mb));
        let authors = [AgentPath::root()];
        assert_eq!(mb.unread_from(&authors), [&AgentPath::root()]);
    }
}
