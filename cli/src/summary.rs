//! `arbor exec` with stderr on a terminal: a live area summing the tree up, redrawn in place
//! (`screen.rs`) instead of a line per event: one line per working agent saying what it does
//! now (waiting for the model, the tool it runs and for how long, the text it last wrote, the
//! approval it waits for), then the counts (agents running, queued, waiting for an approval,
//! tokens). Lines a person must not miss (the session id, approvals, aborted turns, retries,
//! the budget, warnings) are still printed, above it. With stderr not a terminal, nothing
//! changes: the usual lines.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use arbor_protocol::text::truncate_middle;
use arbor_protocol::{AgentPath, AgentStatus, Event};

/// Most agents the live area names; the others are counted on one line.
const MAX_AGENT_LINES: usize = 8;

/// Whether stderr gets the live summary.
pub fn wanted() -> bool {
    std::io::stderr().is_terminal()
}

/// What one agent is doing now, as its events tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Doing {
    /// Its request is with the model.
    Thinking,
    /// A tool call runs (the newest of those that run), since then.
    Tool { call_id: String, text: String },
    /// The text it wrote last, while its turn goes on.
    Wrote(String),
}

#[derive(Debug, Clone)]
struct Activity {
    doing: Doing,
    since: Instant,
    /// Calls started and not answered yet, oldest first: `(call id, what it is)`.
    calls: Vec<(String, String)>,
}

/// The tree as the events tell it.
#[derive(Debug, Default)]
pub struct Summary {
    statuses: HashMap<AgentPath, AgentStatus>,
    activity: BTreeMap<AgentPath, Activity>,
    tokens: u64,
}

impl Summary {
    /// Takes one event in; true when it is one to print as a line above the summary.
    pub fn take(&mut self, event: &Event, now: Instant) -> bool {
        match event {
            Event::AgentSpawned { path, .. } => {
                self.statuses.insert(path.clone(), AgentStatus::PendingInit);
                false
            }
            Event::AgentStatus { path, status } => {
                self.statuses.insert(path.clone(), status.clone());
                false
            }
            Event::Usage { tree_total, .. } => {
                self.tokens = tree_total.input_tokens + tree_total.output_tokens;
                false
            }
            Event::TurnStarted { path } => {
                self.set(path, Doing::Thinking, now);
                false
            }
            Event::ToolCall {
                path,
                call_id,
                name,
                arguments,
            } => {
                let text = arbor_protocol::text::call_brief(name, arguments);
                let activity = self.activity.entry(path.clone()).or_insert(Activity {
                    doing: Doing::Thinking,
                    since: now,
                    calls: Vec::new(),
                });
                activity.calls.push((call_id.clone(), text.clone()));
                activity.doing = Doing::Tool {
                    call_id: call_id.clone(),
                    text,
                };
                activity.since = now;
                false
            }
            Event::ToolResult { path, call_id, .. } => {
                if let Some(activity) = self.activity.get_mut(path) {
                    activity.calls.retain(|(id, _)| id != call_id);
                    let showing =
                        matches!(&activity.doing, Doing::Tool { call_id: id, .. } if id == call_id);
                    if showing {
                        activity.doing = match activity.calls.last() {
                            Some((id, text)) => Doing::Tool {
                                call_id: id.clone(),
                                text: text.clone(),
                            },
                            None => Doing::Thinking,
                        };
                        activity.since = now;
                    }
                }
                false
            }
            Event::AgentMessage { path, text } => {
                let line = text.lines().rev().find(|l| !l.trim().is_empty());
                self.set(
                    path,
                    Doing::Wrote(line.unwrap_or("").trim().to_string()),
                    now,
                );
                false
            }
            Event::TurnCompleted { path, .. } => {
                self.activity.remove(path);
                false
            }
            Event::TurnAborted { path, .. } => {
                self.activity.remove(path);
                true
            }
            Event::SessionStarted { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecided { .. }
            | Event::AgentRetrying { .. }
            | Event::ModelFallback { .. }
            | Event::BudgetExhausted { .. } => true,
            _ => false,
        }
    }

    fn set(&mut self, path: &AgentPath, doing: Doing, now: Instant) {
        let activity = self.activity.entry(path.clone()).or_insert(Activity {
            doing: Doing::Thinking,
            since: now,
            calls: Vec::new(),
        });
        if activity.doing != doing {
            activity.doing = doing;
            activity.since = now;
        }
    }

    /// The counts line.
    pub fn text(&self) -> String {
        let count =
            |wanted: fn(&AgentStatus) -> bool| self.statuses.values().filter(|s| wanted(s)).count();
        format!(
            "{} · {} running · {} queued · {} waiting for approval · {} tokens",
            arbor_protocol::text::count(self.statuses.len(), "agent", "agents"),
            count(|s| matches!(s, AgentStatus::Running | AgentStatus::Waiting)),
            count(|s| matches!(s, AgentStatus::Queued | AgentStatus::PendingInit)),
            count(|s| matches!(s, AgentStatus::AwaitingApproval)),
            self.tokens
        )
    }

    /// The live area: a line per working agent (at most [`MAX_AGENT_LINES`]), then the counts.
    pub fn lines(&self, now: Instant) -> Vec<String> {
        let working: Vec<(&AgentPath, &Activity)> = self
            .activity
            .iter()
            .filter(|(path, _)| {
                self.statuses
                    .get(*path)
                    .is_none_or(|status| status.is_active())
            })
            .collect();
        let mut lines: Vec<String> = working
            .iter()
            .take(MAX_AGENT_LINES)
            .map(|(path, activity)| {
                let status = self.statuses.get(*path);
                format!("  {path}  {}", describe(activity, status, now))
            })
            .collect();
        if working.len() > MAX_AGENT_LINES {
            lines.push(format!("  … and {} more", working.len() - MAX_AGENT_LINES));
        }
        lines.push(self.text());
        lines
    }
}

/// `exec_command: cargo test (12s)`, `thinking…`, `“I renamed foo”`.
fn describe(activity: &Activity, status: Option<&AgentStatus>, now: Instant) -> String {
    let elapsed = now.saturating_duration_since(activity.since);
    match status {
        Some(AgentStatus::AwaitingApproval) => {
            let what = match &activity.doing {
                Doing::Tool { text, .. } => format!(": {text}"),
                _ => String::new(),
            };
            return format!("waiting for an approval{what} ({})", seconds(elapsed));
        }
        Some(AgentStatus::Waiting) => {
            return format!("waiting for other agents ({})", seconds(elapsed));
        }
        _ => {}
    }
    match &activity.doing {
        Doing::Thinking => format!("thinking… ({})", seconds(elapsed)),
        Doing::Tool { text, .. } => format!("{text} ({})", seconds(elapsed)),
        Doing::Wrote(text) => format!("“{}”", truncate_middle(text, 200)),
    }
}

fn seconds(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(p: &str) -> AgentPath {
        AgentPath::parse(p).expect("path")
    }

    #[test]
    fn the_summary_counts_agents_by_status() {
        let mut summary = Summary::default();
        let now = Instant::now();
        for (p, status) in [
            ("/root", AgentStatus::Waiting),
            ("/root/a", AgentStatus::Running),
            ("/root/b", AgentStatus::Queued),
            ("/root/c", AgentStatus::AwaitingApproval),
        ] {
            assert!(!summary.take(
                &Event::AgentStatus {
                    path: path(p),
                    status
                },
                now
            ));
        }
        assert_eq!(
            summary.text(),
            "4 agents · 2 running · 1 queued · 1 waiting for approval · 0 tokens"
        );
        let mut one = Summary::default();
        one.take(
            &Event::AgentStatus {
                path: path("/root"),
                status: AgentStatus::Running,
            },
            now,
        );
        assert!(
            one.text().starts_with("1 agent · 1 running"),
            "{}",
            one.text()
        );
    }

    #[test]
    fn each_working_agent_says_what_it_does_now() {
        let mut summary = Summary::default();
        let start = Instant::now();
        let a = path("/root/a");
        let feed = |summary: &mut Summary, event: Event, secs: u64| {
            summary.take(&event, start + Duration::from_secs(secs));
        };
        feed(
            &mut summary,
            Event::AgentStatus {
                path: a.clone(),
                status: AgentStatus::Running,
            },
            0,
        );
        feed(&mut summary, Event::TurnStarted { path: a.clone() }, 0);
        let at = |summary: &Summary, secs: u64| {
            summary.lines(start + Duration::from_secs(secs))[0].clone()
        };
        assert_eq!(at(&summary, 3), "  /root/a  thinking… (3s)");
        feed(
            &mut summary,
            Event::ToolCall {
                path: a.clone(),
                call_id: "c1".into(),
                name: "exec_command".into(),
                arguments: json!({"cmd": "cargo test\n--all"}),
            },
            5,
        );
        assert_eq!(
            at(&summary, 80),
            "  /root/a  exec_command: cargo test --all (1m15s)"
        );
        feed(
            &mut summary,
            Event::ToolResult {
                path: a.clone(),
                call_id: "c1".into(),
                name: "exec_command".into(),
                output: String::new(),
            },
            81,
        );
        assert_eq!(at(&summary, 81), "  /root/a  thinking… (0s)");
        feed(
            &mut summary,
            Event::AgentMessage {
                path: a.clone(),
                text: "first\nrenamed foo\n".into(),
            },
            82,
        );
        assert_eq!(at(&summary, 90), "  /root/a  “renamed foo”");
        feed(
            &mut summary,
            Event::TurnCompleted {
                path: a,
                last_message: None,
            },
            91,
        );
        assert_eq!(
            summary.lines(start),
            ["1 agent · 1 running · 0 queued · 0 waiting for approval · 0 tokens"]
        );
    }
}
