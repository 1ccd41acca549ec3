//! One agent's part of the tree: what a host keeps under that agent's key. Its own mail, turn,
//! status, approvals and usage, and its children as it sees them ([`Children`]): each child's
//! last status and whether it has a turn scheduled. The decisions an agent takes about its
//! children (wake-once, a wait for all of them, the default targets of `wait_agent`) read only
//! these views, never the children's own state; a child's change reaches them as a
//! [`Note`] aimed at the parent.

use std::collections::BTreeMap;

use arbor_mailbox::Mailbox;
use arbor_protocol::{AgentPath, AgentStatus, ResponseItem, ThreadId, Usage};

use crate::types::{Home, Turn};

/// One agent as the tree knows it.
#[derive(Debug)]
pub struct Agent {
    pub id: ThreadId,
    pub path: AgentPath,
    pub parent: Option<ThreadId>,
    pub children: Children,
    /// The guardian: outside the caps, `list_agents`, wait targets and wake-once.
    pub internal: bool,
    pub status: AgentStatus,
    pub closed: bool,
    /// It or an ancestor was closed.
    pub behind_closed: bool,
    /// Its token is cancelled (closed, under a closed agent, or the session stops): no turn
    /// starts for it any more.
    pub stopped: bool,
    pub turn: Turn,
    pub home: Home,
    pub mailbox: Mailbox,
    /// Input for the next turn that is not mail (the user's prompt, a review request).
    pub input: Vec<ResponseItem>,
    pub approvals_open: u32,
    pub last_message: Option<String>,
    pub usage: Usage,
    /// Turns this agent started in this process.
    pub turns_started: u64,
}

impl Agent {
    /// The root and internal agents run outside `max_running` and never hold a residency slot.
    pub fn counted(&self) -> bool {
        !self.path.is_root() && !self.internal
    }

    /// A turn is queued, waiting for its runtime, granted or running.
    pub fn scheduled(&self) -> bool {
        self.turn != Turn::Idle
    }

    /// How its parent sees it now.
    pub fn view(&self) -> ChildView {
        ChildView {
            path: self.path.clone(),
            internal: self.internal,
            closed: self.closed,
            scheduled: self.scheduled(),
            status: self.status.clone(),
        }
    }
}

/// A child as its parent sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildView {
    pub path: AgentPath,
    pub internal: bool,
    pub closed: bool,
    pub scheduled: bool,
    pub status: AgentStatus,
}

impl ChildView {
    /// Counted among the children a parent waits for: not the guardian, not closed.
    fn awaited(&self) -> bool {
        !self.internal && !self.closed
    }
}

/// An agent's children as it sees them, in creation order, with the number of them (internal
/// agents aside) that have a turn scheduled.
#[derive(Debug, Default)]
pub struct Children {
    order: Vec<ThreadId>,
    views: BTreeMap<ThreadId, ChildView>,
    busy: usize,
}

impl Children {
    /// Every child ever registered under this agent, in creation order.
    pub fn ids(&self) -> &[ThreadId] {
        &self.order
    }

    pub fn view(&self, id: ThreadId) -> Option<&ChildView> {
        self.views.get(&id)
    }

    /// Whether a child (the guardian aside) has a turn scheduled.
    pub fn any_busy(&self) -> bool {
        self.busy > 0
    }

    /// The open children a `wait_agent` without targets waits for, in creation order.
    pub fn awaited(&self) -> Vec<ThreadId> {
        self.order
            .iter()
            .filter(|id| self.views.get(id).is_some_and(ChildView::awaited))
            .copied()
            .collect()
    }

    /// A child's view changed (or it is new): the busy count follows.
    fn set(&mut self, id: ThreadId, view: ChildView) {
        let counts = |view: &ChildView| !view.internal && view.scheduled;
        match self.views.insert(id, view.clone()) {
            Some(old) => {
                if counts(&old) {
                    self.busy -= 1;
                }
            }
            None => self.order.push(id),
        }
        if counts(&view) {
            self.busy += 1;
        }
    }
}

/// What a decision about one agent tells another: the one seam between agents' states. A host
/// that keeps every agent together applies it at once; a host that keeps them apart sends it
/// to the agent's key.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// A child's turn or status changed (or it was registered).
    Child { child: ThreadId, view: ChildView },
}

impl Agent {
    /// Takes a note aimed at this agent.
    pub fn take(&mut self, note: Note) {
        match note {
            Note::Child { child, view } => self.children.set(child, view),
        }
    }
}
