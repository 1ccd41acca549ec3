//! Reconstruction of a thread from its rollout: the model history exactly as the agent had it,
//! its turns, its derived status, and the mail it sent and consumed (behaviour §9: "revival
//! replays the rollout into the model history; the result must equal the history the agent had
//! before eviction"). A `compacted` line starts a new window: everything the replay holds is
//! set from it, so replaying the last window alone equals replaying the whole file.

use std::collections::HashSet;

use arbor_protocol::{
    AgentClosed, AgentStatus, Compacted, Mail, MailId, ResponseItem, RolloutItem, SessionMeta,
    Usage,
};

use crate::RolloutRead;

/// One turn as the rollout recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayedTurn {
    pub number: u64,
    /// Index into [`Replay::history`] where the turn's items begin.
    pub start: usize,
    /// The final answer, when the turn completed with one.
    pub final_answer: Option<String>,
    /// How it ended; `None` while it was in flight when the file ends.
    pub end: Option<AgentStatus>,
}

/// A thread rebuilt from its rollout.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub meta: SessionMeta,
    /// The model history: every response item, and every consumed mail in its model form.
    pub history: Vec<ResponseItem>,
    pub turns: Vec<ReplayedTurn>,
    /// The status the rollout supports: `pending_init` before any turn, the last turn's end,
    /// or `interrupted: process_exit` for a turn that never ended.
    pub status: AgentStatus,
    /// The last final answer of any completed turn.
    pub last_message: Option<String>,
    /// Ids of every mail that entered the history.
    pub consumed: HashSet<MailId>,
    /// Every mail this thread sent, in order.
    pub sent: Vec<Mail>,
    /// Every close this thread performed, in order.
    pub closed: Vec<AgentClosed>,
    /// Call ids of function calls in the last turn that have no output.
    pub dangling_calls: Vec<String>,
    /// Tokens used, summed over every response.
    pub usage: Usage,
    /// The last response's reported size (input and output tokens) and the history's length
    /// right after it: what the next request's size is measured from.
    pub measure: Option<(u64, usize)>,
}

/// The output recorded for a call whose turn ended (interrupt, close, crash) before it did.
pub const CUT_CALL_OUTPUT: &str = "the turn ended before this call finished";

/// Call ids of the function calls in `items` that have no output among them, in order.
pub fn unanswered_calls(items: &[ResponseItem]) -> Vec<String> {
    let answered: HashSet<&str> = items
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCallOutput { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    items
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCall { call_id, .. } if !answered.contains(call_id.as_str()) => {
                Some(call_id.clone())
            }
            _ => None,
        })
        .collect()
}

/// Outputs that close the given calls as cut short.
pub fn cut_call_outputs(call_ids: &[String]) -> Vec<ResponseItem> {
    call_ids
        .iter()
        .map(|call_id| ResponseItem::FunctionCallOutput {
            call_id: call_id.clone(),
            output: CUT_CALL_OUTPUT.to_string(),
        })
        .collect()
}

/// The reason given to a turn the process died in.
pub const PROCESS_EXIT: &str = "process_exit";

impl Replay {
    /// Rebuilds a thread from a read rollout.
    pub fn from_read(read: &RolloutRead) -> Self {
        Self::from_items(read.meta.clone(), read.items())
    }

    /// Rebuilds a thread from its items in order (the header may be among them).
    pub fn from_items<'a>(
        meta: SessionMeta,
        items: impl IntoIterator<Item = &'a RolloutItem>,
    ) -> Self {
        let mut replay = Self {
            meta,
            history: Vec::new(),
            turns: Vec::new(),
            status: AgentStatus::PendingInit,
            last_message: None,
            consumed: HashSet::new(),
            sent: Vec::new(),
            closed: Vec::new(),
            dangling_calls: Vec::new(),
            usage: Usage::default(),
            measure: None,
        };
        let mut calls = Calls::default();
        for item in items {
            replay.apply(item, &mut calls);
        }
        replay.finish(&calls);
        replay
    }

    fn apply(&mut self, item: &RolloutItem, calls: &mut Calls) {
        match item {
            RolloutItem::SessionMeta(_) => {}
            RolloutItem::TurnStarted(turn) => {
                // A turn that never ended was cut (a crash, a failed write): its calls get
                // outputs saying so before the next turn's items.
                self.close_calls(calls);
                self.turns.push(ReplayedTurn {
                    number: turn.turn,
                    start: self.history.len(),
                    final_answer: None,
                    end: None,
                });
            }
            RolloutItem::TurnCompleted(done) => {
                self.close_calls(calls);
                if let Some(turn) = self.turns.last_mut() {
                    turn.final_answer = done.last_message.clone();
                    turn.end = Some(AgentStatus::Completed(done.last_message.clone()));
                }
                self.last_message = done.last_message.clone();
            }
            RolloutItem::TurnAborted(aborted) => {
                self.close_calls(calls);
                if let Some(turn) = self.turns.last_mut() {
                    turn.end = Some(aborted.status());
                }
            }
            RolloutItem::ResponseItem(item) => match item {
                ResponseItem::FunctionCall { call_id, .. } => {
                    calls.open.push(call_id.clone());
                    self.history.push(item.clone());
                }
                ResponseItem::FunctionCallOutput { call_id, .. } => {
                    // An output for a call already closed as cut is the same repair again.
                    if calls.answered.insert(call_id.clone()) {
                        calls.open.retain(|open| open != call_id);
                        self.history.push(item.clone());
                    }
                }
                ResponseItem::Message { .. } | ResponseItem::Reasoning { .. } => {
                    self.history.push(item.clone());
                }
            },
            RolloutItem::MailConsumed(consumed) => {
                self.consumed.insert(consumed.mail.id);
                self.history.push(ResponseItem::Message {
                    role: "user".to_string(),
                    content: consumed.mail.model_text(),
                });
            }
            RolloutItem::MailSent(mail) => self.sent.push((**mail).clone()),
            RolloutItem::AgentClosed(closed) => self.closed.push(closed.clone()),
            RolloutItem::Usage(line) => {
                let usage = &line.usage;
                self.usage.add(*usage);
                // A compaction's usage measures the compaction request, not the history.
                if usage.compaction_tokens == 0 {
                    self.measure = Some((usage.total(), self.history.len()));
                }
            }
            RolloutItem::Compacted(compacted) => self.new_window(compacted, calls),
            RolloutItem::ApprovalRequested(_)
            | RolloutItem::ApprovalDecided(_)
            | RolloutItem::Status(_)
            | RolloutItem::UserMail(_)
            | RolloutItem::UserClose(_)
            | RolloutItem::UserInterrupt(_)
            | RolloutItem::UserAnswer(_)
            | RolloutItem::ApprovalOverride(_)
            | RolloutItem::OverrideUsed(_)
            | RolloutItem::Worktree(_)
            | RolloutItem::ModelFallback(_) => {}
        }
    }

    /// Starts the window a `compacted` line opens: nothing of the lines before it is kept
    /// except what the line itself carries.
    fn new_window(&mut self, compacted: &Compacted, calls: &mut Calls) {
        *calls = Calls::default();
        self.history = compacted.window.clone();
        self.usage = compacted.usage;
        self.measure = None;
        self.last_message = compacted.last_message.clone();
        self.consumed.clear();
        self.sent.clear();
        self.closed.clear();
        self.turns.clear();
        if compacted.turn > 0 {
            let final_answer = match &compacted.turn_end {
                Some(AgentStatus::Completed(answer)) => answer.clone(),
                _ => None,
            };
            self.turns.push(ReplayedTurn {
                number: compacted.turn,
                start: 0,
                final_answer,
                end: compacted.turn_end.clone(),
            });
        }
    }

    /// Gives every call of the turn so far that has no output one saying the turn was cut.
    fn close_calls(&mut self, calls: &mut Calls) {
        for call_id in calls.open.drain(..) {
            calls.answered.insert(call_id.clone());
            self.history.push(ResponseItem::FunctionCallOutput {
                call_id,
                output: CUT_CALL_OUTPUT.to_string(),
            });
        }
    }

    fn finish(&mut self, calls: &Calls) {
        self.status = match self.turns.last() {
            None => AgentStatus::PendingInit,
            Some(ReplayedTurn { end: Some(end), .. }) => end.clone(),
            Some(ReplayedTurn { end: None, .. }) => AgentStatus::Interrupted(PROCESS_EXIT.into()),
        };
        // The calls of a turn in flight when the file ends: revival closes them with lines of
        // its own.
        self.dangling_calls = calls.open.clone();
    }

    /// The number of the turn in flight when the file ends, if any.
    pub fn in_flight(&self) -> Option<u64> {
        self.turns
            .last()
            .filter(|turn| turn.end.is_none())
            .map(|turn| turn.number)
    }
}

/// The calls of the turn being replayed that have no output yet, and every call answered.
#[derive(Default)]
struct Calls {
    open: Vec<String>,
    answered: HashSet<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::{
        AbortKind, AgentPath, MailConsumed, MailKind, ROLLOUT_FORMAT_VERSION, RolloutLine,
        ThreadId, Timestamp, TurnAborted, TurnCompleted, TurnStarted,
    };

    fn read(items: Vec<RolloutItem>) -> RolloutRead {
        let id = ThreadId::new();
        let meta = SessionMeta {
            thread_id: id,
            session_id: id,
            parent_id: None,
            path: AgentPath::root(),
            depth: 0,
            nickname: None,
            role: "default".into(),
            model: "m".into(),
            provider: None,
            effort: None,
            sandbox: "read-only".into(),
            cwd: "/w".into(),
            format_version: ROLLOUT_FORMAT_VERSION,
            repository: None,
            handle: None,
        };
        let mut lines = vec![(
            1,
            RolloutLine {
                seq: None,
                thread: None,
                timestamp: Timestamp::from_millis(0),
                item: RolloutItem::SessionMeta(Box::new(meta.clone())),
            },
        )];
        for (n, item) in items.into_iter().enumerate() {
            lines.push((
                n + 2,
                RolloutLine {
                    seq: None,
                    thread: None,
                    timestamp: Timestamp::from_millis(0),
                    item,
                },
            ));
        }
        RolloutRead {
            lines,
            meta,
            torn_tail: 0,
            unknown: Vec::new(),
            notices: Vec::new(),
        }
    }

    fn msg(role: &str, text: &str) -> RolloutItem {
        RolloutItem::ResponseItem(ResponseItem::Message {
            role: role.into(),
            content: text.into(),
        })
    }

    #[test]
    fn history_turns_and_status_are_rebuilt() {
        let mail = Mail::new(
            AgentPath::root(),
            AgentPath::root().join("w").expect("join"),
            MailKind::Spawn,
            "task".into(),
        );
        let replay = Replay::from_read(&read(vec![
            RolloutItem::TurnStarted(TurnStarted { turn: 1 }),
            RolloutItem::MailConsumed(Box::new(MailConsumed { mail: mail.clone() })),
            msg("assistant", "done"),
            RolloutItem::TurnCompleted(TurnCompleted {
                turn: 1,
                last_message: Some("done".into()),
            }),
        ]));
        assert_eq!(replay.status, AgentStatus::Completed(Some("done".into())));
        assert_eq!(replay.history.len(), 2);
        assert_eq!(
            replay.history[0],
            ResponseItem::Message {
                role: "user".into(),
                content: mail.model_text()
            }
        );
        assert!(replay.consumed.contains(&mail.id));
        assert_eq!(replay.turns[0].final_answer.as_deref(), Some("done"));
        assert_eq!(replay.in_flight(), None);
    }

    #[test]
    fn a_turn_without_an_end_was_cut_by_the_process_exit() {
        let replay = Replay::from_read(&read(vec![
            RolloutItem::TurnStarted(TurnStarted { turn: 1 }),
            RolloutItem::TurnAborted(TurnAborted {
                turn: 1,
                kind: AbortKind::Errored,
                reason: "x".into(),
            }),
            RolloutItem::TurnStarted(TurnStarted { turn: 2 }),
            RolloutItem::ResponseItem(ResponseItem::FunctionCall {
                call_id: "c1".into(),
                name: "exec_command".into(),
                arguments: "{}".into(),
            }),
            RolloutItem::ResponseItem(ResponseItem::FunctionCall {
                call_id: "c2".into(),
                name: "list_agents".into(),
                arguments: "{}".into(),
            }),
            RolloutItem::ResponseItem(ResponseItem::FunctionCallOutput {
                call_id: "c2".into(),
                output: "{}".into(),
            }),
        ]));
        assert_eq!(replay.status, AgentStatus::Interrupted(PROCESS_EXIT.into()));
        assert_eq!(replay.in_flight(), Some(2));
        assert_eq!(replay.dangling_calls, ["c1"]);
        assert_eq!(replay.turns[0].end, Some(AgentStatus::Errored("x".into())));
    }

    #[test]
    fn no_turn_yet_is_pending_init() {
        assert_eq!(
            Replay::from_read(&read(vec![])).status,
            AgentStatus::PendingInit
        );
    }
}
