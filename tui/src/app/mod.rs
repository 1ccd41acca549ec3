//! The UI's state and what changes it: the session (kept up to date with its log), the tree's
//! and the transcript's places, the composer, overlays, and what the user sent and how it
//! stands. Keys are in `keys.rs`; drawing is in `view/`.

mod composer;
mod keys;
mod sent;

pub use composer::Composer;
pub use sent::{RootTurns, Sent, SentState};

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use arbor_agent_graph::{ApprovalOutcome, ApprovalRecord, answer_outcome};
use arbor_protocol::{AgentPath, ThreadId};

use crate::act::{Outcome, Report, Request, Worker};
use crate::session::{Driver, Session};
use crate::theme::Theme;
use crate::transcript::Transcript;
use crate::tree::Tree;

/// Sent items remembered for the status line.
const SENT_KEPT: usize = 16;

/// Which pane takes the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Transcript,
    Composer,
}

/// A window over the panes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Approvals {
        selected: usize,
    },
    /// The whole diff of the queue's `selected` request, from line `scroll`.
    Diff {
        selected: usize,
        scroll: usize,
    },
    Confirm(Confirm),
    Find {
        query: String,
    },
}

/// An action that asks first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    Close {
        target: AgentPath,
    },
    /// Quitting stops the run this process drives.
    Quit,
}

/// A message for the user, in the line under the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub error: bool,
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    pub home: PathBuf,
    pub session: Option<Session>,
    pub tree: Tree,
    pub transcript: Option<Transcript>,
    pub focus: Focus,
    pub composer: Composer,
    pub overlay: Option<Overlay>,
    pub notice: Option<Notice>,
    pub sent: Vec<Sent>,
    pub theme: Theme,
    pub quit: bool,
    /// Quitting waits for the run this process drives to stop.
    pub stopping: bool,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// Rows of the tree and transcript panes at the last frame (for paging).
    pub tree_height: usize,
    pub transcript_height: usize,
    /// Requests made without a worker (tests), in order.
    pub requests: Vec<Request>,
    worker: Option<Worker>,
    readable: Option<Arc<AtomicU64>>,
    next_ticket: u64,
    /// Pending approval requests already announced.
    announced: usize,
    /// The run this process drove stopped with turns interrupted.
    pub interrupted: bool,
    /// The root's turns as the lines read tell them (how a prompt to it stands).
    pub root_turns: RootTurns,
}

impl App {
    /// A UI on `session` (none: it asks for the root's task first).
    pub fn new(
        home: PathBuf,
        session: Option<Session>,
        worker: Option<Worker>,
        theme: Theme,
    ) -> Self {
        let focus = if session.is_some() {
            Focus::Tree
        } else {
            Focus::Composer
        };
        let mut app = Self {
            home,
            session: None,
            tree: Tree::default(),
            transcript: None,
            focus,
            composer: Composer::default(),
            overlay: None,
            notice: None,
            sent: Vec::new(),
            theme,
            quit: false,
            stopping: false,
            dirty: true,
            tree_height: 20,
            transcript_height: 20,
            requests: Vec::new(),
            worker,
            readable: None,
            next_ticket: 1,
            announced: 0,
            interrupted: false,
            root_turns: RootTurns::default(),
        };
        if let Some(session) = session {
            app.attach(session);
        }
        app
    }

    /// Shows `session`.
    pub fn attach(&mut self, session: Session) {
        self.announced = session.figures.totals.pending_approvals;
        self.session = Some(session);
        self.tree = Tree::default();
        if let Some(session) = &self.session {
            self.tree.sync(session, true);
        }
        self.open_transcript();
        self.dirty = true;
    }

    /// The budget of runs this UI starts, if any.
    pub fn budget(&self) -> Option<u64> {
        self.worker.as_ref().and_then(Worker::budget)
    }

    /// Whether this process drives the session.
    pub fn driving(&self) -> bool {
        self.worker.as_ref().is_some_and(Worker::driving)
    }

    /// One step of the loop: the worker's reports, then the log's new lines.
    pub fn tick(&mut self, now: Instant) {
        let reports = self
            .worker
            .as_mut()
            .map(Worker::reports)
            .unwrap_or_default();
        for report in reports {
            self.on_report(report);
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        if let Some(readable) = &self.readable {
            session.readable = Some(readable.load(Ordering::SeqCst));
        }
        let before = (session.generation, session.driver);
        let fresh = session.refresh(now);
        if fresh.is_empty() && before == (session.generation, session.driver) {
            return;
        }
        self.dirty = true;
        for (line, _) in &fresh {
            if let Some(transcript) = self.transcript.as_mut() {
                transcript.push(line);
            }
            self.track(line);
        }
        if let Some(session) = &self.session {
            self.tree.sync(session, false);
        }
        if before.1 != Driver::None
            && self
                .session
                .as_ref()
                .is_some_and(|s| s.driver == Driver::None)
        {
            self.take_over_if_owed();
        }
        self.announce_approvals();
        if self.transcript.as_ref().map(|t| t.thread) != self.tree.selected_id() {
            self.open_transcript();
        }
    }

    /// When the driver stopped before a follow-up the user sent was delivered, this process
    /// takes the session over to deliver it.
    fn take_over_if_owed(&mut self) {
        if self.driving() {
            return;
        }
        let mut owed = false;
        for sent in &mut self.sent {
            let undelivered = sent.state == SentState::Durable && sent.mail.is_some();
            if sent.wakes && undelivered && !sent.retried {
                sent.retried = true;
                owed = true;
            }
        }
        if owed {
            self.notice(
                "the driver stopped before your follow-up was delivered: taking the session over",
                false,
            );
            self.request_quiet(Request::TakeOver);
        }
    }

    fn announce_approvals(&mut self) {
        let Some(session) = &self.session else {
            return;
        };
        let pending = session.figures.totals.pending_approvals;
        if pending > self.announced {
            let newest = session
                .state
                .approvals
                .iter()
                .rev()
                .find(|a| a.outcome == ApprovalOutcome::Pending);
            if let Some(newest) = newest {
                let text = format!(
                    "approval requested by {}: press A to answer ({pending} pending)",
                    newest.requester
                );
                self.notice(&text, false);
            }
        }
        self.announced = pending;
    }

    fn on_report(&mut self, report: Report) {
        self.dirty = true;
        match report {
            Report::Done { ticket, result } => {
                let Some(sent) = self.sent.iter_mut().find(|s| s.ticket == ticket) else {
                    return;
                };
                match result {
                    Ok(Outcome::Mail(id)) => {
                        sent.mail = Some(id);
                        if sent.state == SentState::Sending {
                            sent.state = SentState::Durable;
                        }
                    }
                    Ok(Outcome::Prompted) => {
                        sent.state = self.root_turns.prompted(sent.turns_before)
                    }
                    Ok(Outcome::Said(text)) => {
                        if sent.request.is_none() || sent.state == SentState::Sending {
                            sent.state = SentState::Done(text);
                        }
                    }
                    Err(err) => {
                        sent.state = SentState::Failed(err.clone());
                        self.notice(&err, true);
                    }
                }
            }
            Report::Driving { session, readable } => {
                self.readable = Some(readable);
                if self.session.as_ref().map(Session::id) != Some(session) {
                    match Session::open(&self.home, &session.to_string()) {
                        Ok(opened) => {
                            self.attach(opened);
                            self.focus = Focus::Tree;
                        }
                        Err(err) => self.notice(&err, true),
                    }
                }
                if let Some(open) = self.session.as_mut() {
                    open.set_driven_here(true);
                }
            }
            Report::Stopped {
                session,
                interrupted,
            } => {
                self.readable = None;
                self.interrupted |= interrupted;
                if let Some(open) = self.session.as_mut()
                    && Some(open.id()) == session
                {
                    open.readable = None;
                    open.set_driven_here(false);
                }
                if self.stopping {
                    self.quit = true;
                }
            }
            Report::Notice(text) => self.notice(&text, false),
        }
    }

    /// SIGTERM: stop the run this process drives (then quit), or quit.
    pub fn stop_for_signal(&mut self) {
        if self.driving() {
            self.stopping = true;
            self.request("stop the run".to_string(), Request::Stop);
        } else {
            self.quit = true;
        }
    }

    /// Pasted text goes into the composer (lines joined by spaces).
    pub fn paste(&mut self, text: &str) {
        if self.focus == Focus::Composer && self.overlay.is_none() {
            for c in text.chars() {
                self.composer
                    .insert(if c == '\n' || c == '\r' { ' ' } else { c });
            }
            self.dirty = true;
        }
    }

    pub fn notice(&mut self, text: &str, error: bool) {
        self.notice = Some(Notice {
            text: text.replace('\n', " "),
            error,
        });
        self.dirty = true;
    }

    /// Sends `request`, remembered as `what` for the status line.
    pub fn request(&mut self, what: String, request: Request) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let (wakes, id) = match &request {
            Request::Followup { target, .. } => (target != "/root", None),
            Request::Answer { id, .. } => (false, Some(id.clone())),
            _ => (false, None),
        };
        self.sent.push(Sent {
            ticket,
            what,
            state: SentState::Sending,
            mail: None,
            wakes,
            request: id,
            retried: false,
            turns_before: self.root_turns.started,
        });
        if self.sent.len() > SENT_KEPT {
            self.sent.remove(0);
        }
        self.submit(ticket, request);
    }

    /// Sends `request` without remembering it.
    fn request_quiet(&mut self, request: Request) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.submit(ticket, request);
    }

    fn submit(&mut self, ticket: u64, request: Request) {
        let session = self.session.as_ref().map(Session::id);
        let driver = self.session.as_ref().map_or(Driver::None, |s| s.driver);
        match self.worker.as_mut() {
            Some(worker) => worker.submit(ticket, session, driver, request),
            None => self.requests.push(request),
        }
        self.dirty = true;
    }

    /// Opens the transcript of the selected agent.
    pub fn open_transcript(&mut self) {
        let (Some(session), Some(id)) = (&self.session, self.tree.selected_id()) else {
            self.transcript = None;
            return;
        };
        self.transcript = session
            .state
            .thread(id)
            .map(|row| Transcript::open(session, row));
    }

    /// The selected agent's path.
    pub fn selected_path(&self) -> Option<AgentPath> {
        let id = self.tree.selected_id()?;
        let session = self.session.as_ref()?;
        Some(session.state.thread(id)?.record.meta.path.clone())
    }

    pub fn selected_id(&self) -> Option<ThreadId> {
        self.tree.selected_id()
    }

    /// Approval requests to show: every pending one (oldest first), then decided denials a
    /// human may still override (newest first).
    pub fn approvals(&self) -> Vec<&ApprovalRecord> {
        let Some(session) = &self.session else {
            return Vec::new();
        };
        let state = &session.state;
        let mut list: Vec<&ApprovalRecord> = state
            .approvals
            .iter()
            .filter(|a| a.outcome == ApprovalOutcome::Pending)
            .collect();
        list.extend(state.approvals.iter().rev().filter(|a| {
            a.outcome != ApprovalOutcome::Pending
                && a.outcome != ApprovalOutcome::Allow
                && answer_outcome(
                    a.outcome,
                    a.decided_by,
                    state.override_of(&a.id).is_some(),
                    true,
                ) == arbor_agent_graph::AnswerOutcome::Overridden
        }));
        list
    }
}
