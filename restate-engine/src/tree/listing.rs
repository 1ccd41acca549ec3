//! What the readers of a `Tree` see: the follower's summary and the agents as
//! `arbor agents --json` lists them.

use arbor_protocol::{AgentPath, AgentStatus};

use super::Tree;
use crate::wire::AgentRow;

impl Tree {
    /// What the follower reads between pages of events.
    pub fn summary(&self) -> crate::wire::Summary {
        crate::wire::Summary {
            events: self.events,
            tail: self.tail.clone(),
            completed: self.completed,
            final_message: self.final_message.clone(),
            root_status: self
                .agents
                .get(&AgentPath::root())
                .map(|root| root.status.clone())
                .filter(AgentStatus::is_final),
            idle: !self.busy(),
        }
    }

    /// The agents as `arbor agents --json` lists them: root first, then by depth and path.
    pub fn rows(&self) -> Vec<AgentRow> {
        let mut rows: Vec<AgentRow> = self
            .agents
            .values()
            .map(|entry| AgentRow {
                id: entry.thread_id.clone(),
                path: entry.path.clone(),
                parent_id: entry
                    .parent
                    .as_ref()
                    .and_then(|parent| self.agents.get(parent))
                    .map(|parent| parent.thread_id.clone()),
                depth: entry.path.depth(),
                nickname: entry.nickname.clone(),
                role: entry.role.clone(),
                model: None,
                status: entry.status.clone(),
                edge: entry
                    .open
                    .map(|open| if open { "open" } else { "closed" }.to_string()),
                resident: entry.busy,
                unread: entry.unread.mails,
                pending_approvals: self.pending_of(&entry.path),
            })
            .collect();
        rows.sort_by(|a, b| (a.depth, &a.path).cmp(&(b.depth, &b.path)));
        rows
    }
}
