//! `arbor exec` with stderr on a terminal: one live line summing the tree up (agents running,
//! queued, waiting for an approval, tokens), redrawn in place, instead of a line per event.
//! Lines a person must not miss (the session id, approvals, aborted turns, retries, the
//! budget, warnings) are still printed, above it. With stderr not a terminal, nothing changes:
//! the usual lines.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use arbor_protocol::{AgentPath, AgentStatus, Event};

/// An approval prompt is open on the terminal: the summary line is not drawn meanwhile.
pub static PROMPT_OPEN: AtomicBool = AtomicBool::new(false);

/// Clears the summary line (before a prompt writes to the terminal).
pub fn clear_line() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
}

/// Whether stderr gets the live summary.
pub fn wanted() -> bool {
    std::io::stderr().is_terminal()
}

/// The tree as the events tell it.
#[derive(Debug, Default)]
pub struct Summary {
    statuses: HashMap<AgentPath, AgentStatus>,
    tokens: u64,
    shown: bool,
}

impl Summary {
    /// Takes one event in; true when it is one to print as a line above the summary.
    pub fn take(&mut self, event: &Event) -> bool {
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
            Event::SessionStarted { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecided { .. }
            | Event::TurnAborted { .. }
            | Event::AgentRetrying { .. }
            | Event::ModelFallback { .. }
            | Event::BudgetExhausted { .. } => true,
            _ => false,
        }
    }

    /// The summary's text.
    pub fn text(&self) -> String {
        let count =
            |wanted: fn(&AgentStatus) -> bool| self.statuses.values().filter(|s| wanted(s)).count();
        format!(
            "{} agents · {} running · {} queued · {} waiting for approval · {} tokens",
            self.statuses.len(),
            count(|s| matches!(s, AgentStatus::Running | AgentStatus::Waiting)),
            count(|s| matches!(s, AgentStatus::Queued | AgentStatus::PendingInit)),
            count(|s| matches!(s, AgentStatus::AwaitingApproval)),
            self.tokens
        )
    }

    /// Prints `line` above the summary (when there is one), then draws the summary again.
    pub fn print(&mut self, line: Option<&str>) {
        let mut err = std::io::stderr().lock();
        if self.shown {
            let _ = write!(err, "\r\x1b[2K");
            self.shown = false;
        }
        if let Some(line) = line {
            let _ = writeln!(err, "{line}");
        }
        if !PROMPT_OPEN.load(Ordering::SeqCst) {
            let _ = write!(err, "{}", self.text());
            self.shown = true;
        }
        let _ = err.flush();
    }

    /// Ends the summary: its last state stays on a line of its own.
    pub fn finish(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err);
            self.shown = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_agents_by_status() {
        let mut summary = Summary::default();
        let path = |p: &str| AgentPath::parse(p).expect("path");
        for (p, status) in [
            ("/root", AgentStatus::Waiting),
            ("/root/a", AgentStatus::Running),
            ("/root/b", AgentStatus::Queued),
            ("/root/c", AgentStatus::AwaitingApproval),
        ] {
            assert!(!summary.take(&Event::AgentStatus {
                path: path(p),
                status
            }));
        }
        assert_eq!(
            summary.text(),
            "4 agents · 2 running · 1 queued · 1 waiting for approval · 0 tokens"
        );
    }
}
