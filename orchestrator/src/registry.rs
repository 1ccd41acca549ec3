//! The agents' handles: every agent by id, and open agents by path. Turns and tools read it
//! without asking the session task; the session task alone adds and removes, except for the
//! agents of a resumed tree, added as the session is set up, before any turn runs.

use std::sync::Arc;

use arbor_protocol::{AgentPath, ThreadId};
use dashmap::DashMap;

use crate::agent::Agent;

/// Every agent this process knows, keyed by id and (while open) by path.
#[derive(Debug, Default)]
pub struct Registry {
    by_id: DashMap<ThreadId, Arc<Agent>>,
    open_paths: DashMap<AgentPath, ThreadId>,
}

impl Registry {
    /// Registers an agent. Returns false, changing nothing, when its path is already open.
    pub fn insert(&self, agent: Arc<Agent>) -> bool {
        let id = agent.id();
        match self.open_paths.entry(agent.path().clone()) {
            dashmap::Entry::Occupied(_) => return false,
            dashmap::Entry::Vacant(slot) => {
                slot.insert(id);
            }
        }
        self.by_id.insert(id, agent);
        true
    }

    /// The agent with this id, open or closed.
    pub fn get(&self, id: ThreadId) -> Option<Arc<Agent>> {
        self.by_id.get(&id).map(|entry| Arc::clone(entry.value()))
    }

    /// The open agent at this path.
    pub fn open_at(&self, path: &AgentPath) -> Option<Arc<Agent>> {
        let id = *self.open_paths.get(path)?.value();
        self.get(id)
    }

    /// Whether the agent is open (its path is still its own).
    pub fn is_open(&self, agent: &Agent) -> bool {
        self.open_paths
            .get(agent.path())
            .is_some_and(|entry| *entry.value() == agent.id())
    }

    /// Whether an open agent holds this path.
    pub fn path_taken(&self, path: &AgentPath) -> bool {
        self.open_paths.contains_key(path)
    }

    /// Frees a closed agent's path for reuse; the agent stays reachable by id.
    pub fn release_path(&self, agent: &Agent) {
        self.open_paths
            .remove_if(agent.path(), |_, id| *id == agent.id());
    }

    /// Forgets an agent that was never started (its creation failed).
    pub fn remove(&self, agent: &Agent) {
        self.release_path(agent);
        self.by_id.remove(&agent.id());
    }

    /// Every agent whose parent is `id`, open or closed, in id (creation) order.
    pub fn children(&self, id: ThreadId) -> Vec<Arc<Agent>> {
        let mut children: Vec<Arc<Agent>> = self
            .by_id
            .iter()
            .filter(|e| e.value().identity.parent() == Some(id))
            .map(|e| Arc::clone(e.value()))
            .collect();
        children.sort_by_key(|a| a.id());
        children
    }

    /// Every agent, in id (creation) order.
    pub fn all(&self) -> Vec<Arc<Agent>> {
        let mut agents: Vec<Arc<Agent>> =
            self.by_id.iter().map(|e| Arc::clone(e.value())).collect();
        agents.sort_by_key(|a| a.id());
        agents
    }

    /// Number of agents known.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}
