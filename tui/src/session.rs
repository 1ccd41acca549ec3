//! The session as the UI sees it: the store's state with the log's later lines applied
//! (`SessionView`, as the read commands open it), then every new line of the log applied as it
//! appears. The log is append-only, so a refresh reads from the byte where the last one ended;
//! a refresh that finds the file no longer is costs one `stat`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_agent_graph::{AgentRow, EdgeStatus, SessionState, ThreadRecord};
use arbor_orchestrator::{Lease, SessionView};
use arbor_protocol::{AgentStatus, RolloutItem, RolloutLine, ThreadId, Usage};
use arbor_rollout::log::read_log;

use crate::activity::Activity;

/// Most rollouts whose tails are read at open, for what their agents do now.
const TAIL_READS: usize = 256;

/// How often the lease is checked for who drives the session.
const LEASE_CHECK: Duration = Duration::from_millis(500);

/// Where a log line of one agent sits in the session log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineAt {
    pub seq: u64,
    pub start: u64,
    pub end: u64,
}

/// Who drives the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Nothing runs it.
    None,
    /// Another process, by pid.
    Process(u32),
    /// This process.
    Here,
}

/// Counts over the whole tree, for the status line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub running: usize,
    pub queued: usize,
    pub waiting: usize,
    pub awaiting_approval: usize,
    pub agents: usize,
    pub usage: Usage,
    pub pending_approvals: usize,
}

/// Per-agent figures recomputed once per change of the state, so rendering a row is a lookup.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub unread: HashMap<ThreadId, usize>,
    pub pending: HashMap<ThreadId, usize>,
    /// 1-based place in the queue of turns waiting for a running slot.
    pub queue_position: HashMap<ThreadId, usize>,
    pub totals: Totals,
}

/// One session, kept up to date with its log.
#[derive(Debug)]
pub struct Session {
    pub home: PathBuf,
    pub root: ThreadRecord,
    pub log_path: PathBuf,
    pub state: SessionState,
    /// Where the next read of the log starts.
    pub offset: u64,
    /// Where the store had come to when the session was opened: rollouts hold at least this.
    pub stored: u64,
    pub driver: Driver,
    /// Lines read from the log since the session was opened, per agent.
    index: HashMap<ThreadId, Vec<LineAt>>,
    /// The line number at which a queued agent was queued, as seen by this UI.
    queued_at: HashMap<ThreadId, u64>,
    /// Bumped whenever the state changes.
    pub generation: u64,
    pub figures: Figures,
    /// Lines of the log skipped while reading it.
    pub notices: Vec<String>,
    last_lease_check: Option<Instant>,
    /// This process drives the session: what other processes hold does not matter.
    driven_here: bool,
    /// Reads stop here (the log is durable up to it) when this process drives the session.
    pub readable: Option<u64>,
    /// What each agent is doing now, from the lines read since the session was opened.
    pub activity: Activity,
}

impl Session {
    /// Opens `session` (an id or a unique prefix) under `home` as the read commands do.
    pub fn open(home: &Path, session: &str) -> Result<Self, String> {
        let view = SessionView::open(home, session).map_err(|err| err.to_string())?;
        Ok(Self::from_view(home, view))
    }

    /// The session a [`SessionView`] shows.
    pub fn from_view(home: &Path, view: SessionView) -> Self {
        let driver = match Lease::holder(home, view.root.id()) {
            Some(pid) => Driver::Process(pid),
            None => Driver::None,
        };
        let mut session = Self {
            home: home.to_path_buf(),
            root: view.root,
            log_path: view.log_path,
            offset: view.state.applied.offset.max(view.stored.offset),
            stored: view.stored.offset,
            state: view.state,
            driver,
            index: HashMap::new(),
            queued_at: HashMap::new(),
            generation: 0,
            figures: Figures::default(),
            notices: view.notices,
            last_lease_check: Some(Instant::now()),
            driven_here: false,
            readable: None,
            activity: Activity::default(),
        };
        // What the agents whose turns run are doing: their rollouts' tails (lines before the
        // store's position are not read otherwise), for the first `TAIL_READS` of them, so
        // opening a huge live fan-out stays quick; the others show theirs from their next line.
        let driven = session.driven();
        let running: Vec<(ThreadId, PathBuf)> = session
            .state
            .threads
            .values()
            .filter(|row| row.reported_status(driven).is_active())
            .take(TAIL_READS)
            .map(|row| (row.record.id(), home.join(&row.record.rollout_path)))
            .collect();
        for (thread, rollout) in running {
            session.activity.read_tail(thread, &rollout);
        }
        // The lines the view applied beyond the store are indexed too: read them again, only
        // for their places (the state already holds them).
        if session.offset > session.stored {
            session.index_range(session.stored, session.offset);
        }
        session.recompute();
        session
    }

    /// A session read from its log alone, from the first line (no store): for recorded
    /// sessions, whose rollouts may not exist.
    pub fn from_log(home: &Path, log_path: &Path, driver: Driver) -> Result<Self, String> {
        let read = read_log(log_path, 0).map_err(|err| err.to_string())?;
        let mut state = SessionState::default();
        let mut index: HashMap<ThreadId, Vec<LineAt>> = HashMap::new();
        let mut activity = Activity::default();
        let mut start = 0;
        for (line, end) in &read.lines {
            state.apply(line, *end);
            if let (Some(seq), Some(thread)) = (line.seq, line.thread) {
                activity.apply(thread, line);
                index.entry(thread).or_default().push(LineAt {
                    seq,
                    start,
                    end: *end,
                });
            }
            start = *end;
        }
        let root = state
            .root()
            .map(|row| row.record.clone())
            .ok_or_else(|| format!("{} has no root agent", log_path.display()))?;
        let mut session = Self {
            home: home.to_path_buf(),
            root,
            log_path: log_path.to_path_buf(),
            offset: read.end,
            stored: 0,
            state,
            driver,
            index,
            queued_at: HashMap::new(),
            generation: 0,
            figures: Figures::default(),
            notices: read.notices,
            last_lease_check: None,
            driven_here: matches!(driver, Driver::Here),
            readable: None,
            activity,
        };
        session.recompute();
        Ok(session)
    }

    /// The session's id.
    pub fn id(&self) -> ThreadId {
        self.root.id()
    }

    /// Marks the session driven by this process (or no longer).
    pub fn set_driven_here(&mut self, here: bool) {
        self.driven_here = here;
        if !here {
            self.readable = None;
        }
        self.check_lease();
    }

    /// Whether a live process drives the session (as the read commands decide statuses).
    pub fn driven(&self) -> bool {
        self.driver != Driver::None
    }

    /// Reads what the log gained since the last refresh and applies it; returns the new lines
    /// (for the open transcript). Checks the lease now and then.
    pub fn refresh(&mut self, now: Instant) -> Vec<(RolloutLine, LineAt)> {
        if self
            .last_lease_check
            .is_none_or(|at| now.duration_since(at) >= LEASE_CHECK)
        {
            self.last_lease_check = Some(now);
            if self.check_lease() {
                self.recompute();
            }
        }
        let len = match std::fs::metadata(&self.log_path) {
            Ok(meta) => meta.len(),
            Err(_) => return Vec::new(),
        };
        let limit = self.readable.map_or(len, |readable| readable.min(len));
        if limit <= self.offset {
            return Vec::new();
        }
        let read = match read_log(&self.log_path, self.offset) {
            Ok(read) => read,
            Err(err) => {
                self.notices.push(err.to_string());
                return Vec::new();
            }
        };
        self.notices.extend(read.notices);
        let mut fresh = Vec::new();
        let mut start = self.offset;
        for (line, end) in read.lines {
            if end > limit {
                break;
            }
            self.offset = end;
            let at = self.note(&line, start, end);
            start = end;
            self.state.apply(&line, end);
            if let Some(at) = at {
                fresh.push((line, at));
            }
        }
        if !fresh.is_empty() {
            self.recompute();
        }
        fresh
    }

    /// Records where a line is, and when an agent was queued.
    fn note(&mut self, line: &RolloutLine, start: u64, end: u64) -> Option<LineAt> {
        let (Some(seq), Some(thread)) = (line.seq, line.thread) else {
            return None;
        };
        if let RolloutItem::Status(changed) = &line.item {
            if changed.status == AgentStatus::Queued {
                self.queued_at.insert(thread, seq);
            } else {
                self.queued_at.remove(&thread);
            }
        }
        self.activity.apply(thread, line);
        let at = LineAt { seq, start, end };
        self.index.entry(thread).or_default().push(at);
        Some(at)
    }

    fn index_range(&mut self, from: u64, to: u64) {
        let Ok(read) = read_log(&self.log_path, from) else {
            return;
        };
        let mut start = from;
        for (line, end) in read.lines {
            if end > to {
                break;
            }
            self.note(&line, start, end);
            start = end;
        }
    }

    /// Checks who holds the lease; true when that changed.
    fn check_lease(&mut self) -> bool {
        let driver = if self.driven_here {
            Driver::Here
        } else {
            match Lease::holder(&self.home, self.root.id()) {
                Some(pid) if pid == std::process::id() => Driver::Here,
                Some(pid) => Driver::Process(pid),
                None => Driver::None,
            }
        };
        let changed = driver != self.driver;
        self.driver = driver;
        changed
    }

    /// The log lines of `thread` read since the session was opened.
    pub fn lines_of(&self, thread: ThreadId) -> &[LineAt] {
        self.index.get(&thread).map_or(&[], Vec::as_slice)
    }

    /// The status to show for an agent (a dead driver's active turns read as interrupted).
    pub fn status(&self, row: &AgentRow) -> AgentStatus {
        row.reported_status(self.driven())
    }

    /// Whether an agent's own edge is closed.
    pub fn is_closed(row: &AgentRow) -> bool {
        row.edge == Some(EdgeStatus::Closed)
    }

    /// Recomputes the per-agent figures and the totals (after the state changed).
    pub fn recompute(&mut self) {
        self.generation += 1;
        let mut figures = Figures::default();
        for row in self.state.mail.values() {
            *figures.unread.entry(row.recipient_id).or_default() += 1;
        }
        for approval in &self.state.approvals {
            if approval.outcome == arbor_agent_graph::ApprovalOutcome::Pending {
                *figures.pending.entry(approval.requester_id).or_default() += 1;
                figures.totals.pending_approvals += 1;
            }
        }
        let mut queued: Vec<(u64, i64, ThreadId)> = Vec::new();
        let driven = self.driven();
        for row in self.state.threads.values() {
            figures.totals.agents += 1;
            figures.totals.usage.input_tokens += row.usage.input_tokens;
            figures.totals.usage.cached_input_tokens += row.usage.cached_input_tokens;
            figures.totals.usage.output_tokens += row.usage.output_tokens;
            match row.reported_status(driven) {
                AgentStatus::Running => figures.totals.running += 1,
                AgentStatus::Queued => {
                    figures.totals.queued += 1;
                    // Seen queued by this UI: by the line; otherwise by the row's last change.
                    let seq = self.queued_at.get(&row.record.id()).copied().unwrap_or(0);
                    queued.push((seq, row.record.updated_at.as_millis(), row.record.id()));
                }
                AgentStatus::Waiting => figures.totals.waiting += 1,
                AgentStatus::AwaitingApproval => figures.totals.awaiting_approval += 1,
                _ => {}
            }
        }
        queued.sort();
        for (place, (_, _, id)) in queued.into_iter().enumerate() {
            figures.queue_position.insert(id, place + 1);
        }
        self.figures = figures;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_session_is_a_clear_error() {
        let home = tempfile::tempdir().expect("dir");
        let err = Session::open(home.path(), "0190aaaa-0000").expect_err("no store");
        assert!(!err.is_empty());
    }
}
