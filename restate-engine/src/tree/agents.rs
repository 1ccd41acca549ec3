//! The agents of a `Tree`, each held under its own state key (`agent<path>`) and loaded only
//! when an operation reads it. An operation runs on the entries loaded so far; reading one
//! that is not loaded notes a miss (and sees nothing), and the handler loads the misses and
//! runs the operation again from the state it started with, until it misses none. So an
//! operation costs what it touches, never the size of the tree, and no list of what to load
//! is kept beside the decisions. A tree made in memory (a new session, the tests) holds every
//! entry: nothing is missed there.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use arbor_protocol::AgentPath;

use super::Entry;

/// The entries loaded, the ones changed, and what was asked for but not loaded.
#[derive(Debug, Clone, Default)]
pub struct Agents {
    /// Loaded entries; `None` is an agent known not to exist.
    loaded: BTreeMap<AgentPath, Option<Entry>>,
    /// Thread ids looked up: the path of each, `None` when none has it.
    threads: BTreeMap<String, Option<AgentPath>>,
    /// Every entry is here (a tree made in memory): nothing is missed.
    complete: bool,
    changed: BTreeSet<AgentPath>,
    /// Agents made by this operation (their thread ids are new).
    inserted: BTreeSet<AgentPath>,
    /// Each agent's children (the guardian aside), in creation order: a key of their own
    /// (`children<path>`), read only by spawns, waits for children and closes.
    children: BTreeMap<AgentPath, Vec<AgentPath>>,
    children_changed: BTreeSet<AgentPath>,
    missed: RefCell<Misses>,
}

/// What an operation asked for that was not loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Misses {
    pub paths: BTreeSet<AgentPath>,
    pub threads: BTreeSet<String>,
    /// Agents whose children were asked for.
    pub children: BTreeSet<AgentPath>,
}

impl Misses {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.threads.is_empty() && self.children.is_empty()
    }
}

impl Agents {
    /// Holds every entry of a tree made in memory (each noted as changed: none is stored yet).
    pub fn complete(entries: impl IntoIterator<Item = Entry>) -> Self {
        let mut agents = Self {
            complete: true,
            ..Self::default()
        };
        for entry in entries {
            agents.insert(entry);
        }
        agents
    }

    /// An entry read from its key (`None`: no agent at `path`).
    pub fn load(&mut self, path: AgentPath, entry: Option<Entry>) {
        if let Some(entry) = &entry {
            self.threads
                .insert(entry.thread_id.clone(), Some(entry.path.clone()));
        }
        self.loaded.insert(path, entry);
    }

    /// A thread id's path read from its key.
    pub fn load_thread(&mut self, thread: String, path: Option<AgentPath>) {
        self.threads.insert(thread, path);
    }

    fn miss(&self, path: &AgentPath) {
        if !self.complete {
            self.missed.borrow_mut().paths.insert(path.clone());
        }
    }

    pub fn get(&self, path: &AgentPath) -> Option<&Entry> {
        match self.loaded.get(path) {
            Some(entry) => entry.as_ref(),
            None => {
                self.miss(path);
                None
            }
        }
    }

    /// The entry at `path`, noted as changed.
    pub fn get_mut(&mut self, path: &AgentPath) -> Option<&mut Entry> {
        match self.loaded.get(path) {
            Some(Some(_)) => {
                self.changed.insert(path.clone());
            }
            Some(None) => return None,
            None => {
                self.miss(path);
                return None;
            }
        }
        self.loaded.get_mut(path).and_then(Option::as_mut)
    }

    /// The path of the agent with thread id `thread`.
    pub fn path_of(&self, thread: &str) -> Option<AgentPath> {
        if let Some(path) = self.threads.get(thread) {
            return path.clone();
        }
        if self.complete {
            return self
                .loaded
                .values()
                .flatten()
                .find(|entry| entry.thread_id == thread)
                .map(|entry| entry.path.clone());
        }
        self.missed.borrow_mut().threads.insert(thread.to_string());
        None
    }

    /// A new agent (or a new one at a path a closed agent left).
    pub fn insert(&mut self, entry: Entry) {
        let path = entry.path.clone();
        self.threads
            .insert(entry.thread_id.clone(), Some(path.clone()));
        self.changed.insert(path.clone());
        self.inserted.insert(path.clone());
        self.loaded.insert(path, Some(entry));
    }

    /// The children of `path` read from their key.
    pub fn load_children(&mut self, path: AgentPath, children: Vec<AgentPath>) {
        self.children.insert(path, children);
    }

    /// The children of `path` (the guardian aside), in creation order.
    pub fn children_of(&self, path: &AgentPath) -> Vec<AgentPath> {
        match self.children.get(path) {
            Some(children) => children.clone(),
            None => {
                if !self.complete {
                    self.missed.borrow_mut().children.insert(path.clone());
                }
                Vec::new()
            }
        }
    }

    /// `child` is one of `parent`'s children (once, however often its path is taken).
    pub fn add_child(&mut self, parent: &AgentPath, child: &AgentPath) {
        if !self.complete && !self.children.contains_key(parent) {
            self.missed.borrow_mut().children.insert(parent.clone());
            return;
        }
        let children = self.children.entry(parent.clone()).or_default();
        if !children.contains(child) {
            children.push(child.clone());
            self.children_changed.insert(parent.clone());
        }
    }

    /// The children lists changed since the tree was loaded, to be stored.
    pub fn changed_children(&self) -> impl Iterator<Item = (&AgentPath, &Vec<AgentPath>)> {
        self.children_changed
            .iter()
            .filter_map(|path| self.children.get(path).map(|children| (path, children)))
    }

    /// The agents made since the tree was loaded (their thread ids to be stored).
    pub fn inserted(&self) -> impl Iterator<Item = &Entry> {
        self.inserted
            .iter()
            .filter_map(|path| self.loaded.get(path).and_then(Option::as_ref))
    }

    /// What the operation asked for and did not find loaded, cleared.
    pub fn take_misses(&self) -> Misses {
        std::mem::take(&mut *self.missed.borrow_mut())
    }

    /// The entries changed since the tree was loaded, to be stored.
    pub fn changed(&self) -> impl Iterator<Item = &Entry> {
        self.changed
            .iter()
            .filter_map(|path| self.loaded.get(path).and_then(Option::as_ref))
    }

    /// The paths changed (an agent whose turn may be owed now is among them).
    pub fn changed_paths(&self) -> Vec<AgentPath> {
        self.changed.iter().cloned().collect()
    }

    /// Every loaded entry, by path (all of them in a complete tree).
    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.loaded.values().flatten()
    }
}

impl std::ops::Index<&AgentPath> for Agents {
    type Output = Entry;

    fn index(&self, path: &AgentPath) -> &Entry {
        match self.get(path) {
            Some(entry) => entry,
            None => panic!("no agent {path} is loaded"),
        }
    }
}

impl PartialEq for Agents {
    fn eq(&self, other: &Self) -> bool {
        self.loaded == other.loaded
    }
}

impl Eq for Agents {}
