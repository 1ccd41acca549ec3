//! What each agent is doing now, as its newest log lines tell: waiting for the model after a
//! turn started or a tool answered, the tool call it runs (`exec_command: cargo test`), or the
//! text it last wrote while its turn goes on; nothing once its turn ended. Read from the lines
//! the UI applies, so it is the same whichever process drives the session.

use std::collections::HashMap;

use arbor_protocol::text::call_brief;
use arbor_protocol::{ResponseItem, RolloutItem, RolloutLine, ThreadId, Timestamp};

/// One agent's current doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doing {
    pub text: String,
    /// The same in a word, for a narrow column: the tool's name, `thinking…` or `writing…`.
    pub word: String,
    /// When it started doing it.
    pub since: Timestamp,
}

#[derive(Debug, Clone, Default)]
struct Agent {
    /// The newest line taken in (lines may come twice: from a rollout's tail, then the log).
    seq: u64,
    doing: Option<Doing>,
    /// Calls started and not answered, oldest first: `(call id, tool, brief, started)`.
    calls: Vec<(String, String, String, Timestamp)>,
}

/// Every agent's doing.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    agents: HashMap<ThreadId, Agent>,
}

const THINKING: &str = "thinking…";

/// Lines of a rollout's tail read at open: enough for a turn's start and its running calls.
const TAIL_LINES: usize = 64;

impl Activity {
    /// Takes one line of `thread`'s in.
    pub fn apply(&mut self, thread: ThreadId, line: &RolloutLine) {
        if let Some(seq) = line.seq {
            let agent = self.agents.entry(thread).or_default();
            if seq <= agent.seq {
                return;
            }
            agent.seq = seq;
        }
        let at = line.timestamp;
        let thinking = || Doing {
            text: THINKING.to_string(),
            word: THINKING.to_string(),
            since: at,
        };
        match &line.item {
            RolloutItem::TurnStarted(_) => {
                let agent = self.agents.entry(thread).or_default();
                agent.calls.clear();
                agent.doing = Some(thinking());
            }
            RolloutItem::TurnCompleted(_) | RolloutItem::TurnAborted(_) => {
                if let Some(agent) = self.agents.get_mut(&thread) {
                    agent.calls.clear();
                    agent.doing = None;
                }
            }
            RolloutItem::ResponseItem(item) => {
                let agent = self.agents.entry(thread).or_default();
                match item {
                    ResponseItem::FunctionCall {
                        call_id,
                        name,
                        arguments,
                    } => {
                        let arguments = serde_json::from_str(arguments).unwrap_or_default();
                        let brief = call_brief(name, &arguments);
                        agent
                            .calls
                            .push((call_id.clone(), name.clone(), brief.clone(), at));
                        agent.doing = Some(Doing {
                            text: brief,
                            word: name.clone(),
                            since: at,
                        });
                    }
                    ResponseItem::FunctionCallOutput { call_id, .. } => {
                        agent.calls.retain(|(id, ..)| id != call_id);
                        agent.doing = Some(match agent.calls.last() {
                            Some((_, name, brief, since)) => Doing {
                                text: brief.clone(),
                                word: name.clone(),
                                since: *since,
                            },
                            None => thinking(),
                        });
                    }
                    ResponseItem::Message { role, content } if role == "assistant" => {
                        let last = content.lines().rev().find(|l| !l.trim().is_empty());
                        agent.doing = Some(Doing {
                            text: format!("“{}”", last.unwrap_or("").trim()),
                            word: "writing…".to_string(),
                            since: at,
                        });
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// What `thread` does now, if its turn runs and a line said.
    pub fn of(&self, thread: ThreadId) -> Option<&Doing> {
        self.agents
            .get(&thread)
            .and_then(|agent| agent.doing.as_ref())
    }

    /// Takes the tail of `thread`'s rollout in (at open, for an agent whose turn runs: the
    /// lines before the store's position are not read otherwise). A rollout that cannot be
    /// read leaves the agent as it was.
    pub fn read_tail(&mut self, thread: ThreadId, rollout: &std::path::Path) {
        let Ok(len) = std::fs::metadata(rollout).map(|meta| meta.len()) else {
            return;
        };
        if let Ok(window) = crate::backwards::read_before(rollout, len, TAIL_LINES) {
            for (_, line) in &window.lines {
                self.apply(thread, line);
            }
        }
    }

    /// Whether any agent is doing something.
    pub fn any(&self) -> bool {
        self.agents.values().any(|agent| agent.doing.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::{TurnCompleted, TurnStarted};

    fn line(item: RolloutItem, millis: i64) -> RolloutLine {
        RolloutLine {
            seq: None,
            thread: None,
            timestamp: Timestamp::from_millis(millis),
            item,
        }
    }

    #[test]
    fn a_turn_thinks_runs_its_calls_writes_and_ends() {
        let mut activity = Activity::default();
        let a = ThreadId::new();
        let text = |activity: &Activity| activity.of(a).map(|d| d.text.clone());
        activity.apply(
            a,
            &line(RolloutItem::TurnStarted(TurnStarted { turn: 1 }), 0),
        );
        assert_eq!(text(&activity).as_deref(), Some("thinking…"));
        let call = |id: &str, cmd: &str| {
            RolloutItem::ResponseItem(ResponseItem::FunctionCall {
                call_id: id.into(),
                name: "exec_command".into(),
                arguments: serde_json::json!({"cmd": cmd}).to_string(),
            })
        };
        let output = |id: &str| {
            RolloutItem::ResponseItem(ResponseItem::FunctionCallOutput {
                call_id: id.into(),
                output: String::new(),
            })
        };
        activity.apply(a, &line(call("c1", "make"), 10));
        activity.apply(a, &line(call("c2", "cargo test"), 20));
        assert_eq!(text(&activity).as_deref(), Some("exec_command: cargo test"));
        activity.apply(a, &line(output("c2"), 30));
        let doing = activity.of(a).expect("doing");
        assert_eq!(
            (doing.text.as_str(), doing.since.as_millis()),
            ("exec_command: make", 10),
            "the call still running"
        );
        activity.apply(a, &line(output("c1"), 40));
        assert_eq!(text(&activity).as_deref(), Some("thinking…"));
        activity.apply(
            a,
            &line(
                RolloutItem::ResponseItem(ResponseItem::Message {
                    role: "assistant".into(),
                    content: "done\nall good\n".into(),
                }),
                50,
            ),
        );
        assert_eq!(text(&activity).as_deref(), Some("“all good”"));
        assert!(activity.any());
        activity.apply(
            a,
            &line(
                RolloutItem::TurnCompleted(TurnCompleted {
                    turn: 1,
                    last_message: None,
                }),
                60,
            ),
        );
        assert_eq!(text(&activity), None);
        assert!(!activity.any());
    }
}
