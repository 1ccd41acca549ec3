//! The tree pane's rows: the spawn tree flattened depth first, children in path order,
//! without the branches the user collapsed and, unless asked for, without closed branches.
//! Rebuilt when the session changes, never per frame; a frame renders only the rows in view.

use std::collections::{HashMap, HashSet};

use arbor_agent_graph::SessionState;
use arbor_protocol::ThreadId;

use crate::session::Session;

/// One visible row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub id: ThreadId,
    pub depth: usize,
    pub children: usize,
    pub collapsed: bool,
}

/// The tree's flattened rows and the reader's place in them.
#[derive(Debug, Default)]
pub struct Tree {
    pub rows: Vec<Row>,
    pub selected: usize,
    /// The first row in view.
    pub offset: usize,
    pub collapsed: HashSet<ThreadId>,
    pub show_closed: bool,
    /// The session generation the rows were built from.
    built: u64,
}

impl Tree {
    /// Rebuilds the rows if the session changed since (or `force`), keeping the selection on
    /// the same agent when it is still shown.
    pub fn sync(&mut self, session: &Session, force: bool) {
        if !force && self.built == session.generation && !self.rows.is_empty() {
            return;
        }
        let keep = self.selected_id();
        self.rows = flatten(&session.state, &self.collapsed, self.show_closed);
        self.built = session.generation;
        if let Some(id) = keep {
            if let Some(at) = self.rows.iter().position(|row| row.id == id) {
                self.selected = at;
            } else {
                // The agent is hidden now (closed, or under a collapsed branch): its shown
                // ancestor is the nearest place.
                self.selected = self.nearest_shown(&session.state, id);
            }
        }
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    fn nearest_shown(&self, state: &SessionState, id: ThreadId) -> usize {
        let mut current = state.thread(id).and_then(|row| row.record.meta.parent_id);
        while let Some(parent) = current {
            if let Some(at) = self.rows.iter().position(|row| row.id == parent) {
                return at;
            }
            current = state
                .thread(parent)
                .and_then(|row| row.record.meta.parent_id);
        }
        0
    }

    pub fn selected_id(&self) -> Option<ThreadId> {
        self.rows.get(self.selected).map(|row| row.id)
    }

    /// Moves the selection by `delta` rows.
    pub fn move_by(&mut self, delta: isize) {
        if self.rows.is_empty() {
            return;
        }
        self.selected = self
            .selected
            .saturating_add_signed(delta)
            .min(self.rows.len() - 1);
    }

    pub fn select_id(&mut self, id: ThreadId) -> bool {
        match self.rows.iter().position(|row| row.id == id) {
            Some(at) => {
                self.selected = at;
                true
            }
            None => false,
        }
    }

    /// Collapses (`Some(true)`), expands (`Some(false)`) or toggles the selected branch.
    /// Returns whether anything changed.
    pub fn set_collapsed(&mut self, collapse: Option<bool>) -> bool {
        let Some(row) = self.rows.get(self.selected).copied() else {
            return false;
        };
        if row.children == 0 {
            return false;
        }
        let collapse = collapse.unwrap_or(!row.collapsed);
        if collapse == row.collapsed {
            return false;
        }
        if collapse {
            self.collapsed.insert(row.id);
        } else {
            self.collapsed.remove(&row.id);
        }
        true
    }

    /// Keeps the selection in a pane of `height` rows; returns the first row to draw.
    pub fn scroll_into_view(&mut self, height: usize) -> usize {
        if height == 0 {
            return self.offset;
        }
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + height {
            self.offset = self.selected + 1 - height;
        }
        let max_offset = self.rows.len().saturating_sub(height);
        self.offset = self.offset.min(max_offset);
        self.offset
    }
}

/// The rows shown: depth first from the root, children by path.
pub fn flatten(state: &SessionState, collapsed: &HashSet<ThreadId>, show_closed: bool) -> Vec<Row> {
    let mut children: HashMap<ThreadId, Vec<ThreadId>> = HashMap::new();
    for row in state.threads.values() {
        if let Some(parent) = row.record.meta.parent_id {
            if !show_closed && Session::is_closed(row) {
                continue;
            }
            children.entry(parent).or_default().push(row.record.id());
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| {
            let path = |id: &ThreadId| state.thread(*id).map(|row| row.record.meta.path.as_str());
            path(a).cmp(&path(b)).then(a.cmp(b))
        });
    }
    let mut rows = Vec::with_capacity(state.threads.len());
    let Some(root) = state.root() else {
        return rows;
    };
    let mut stack = vec![(root.record.id(), 0usize)];
    while let Some((id, depth)) = stack.pop() {
        let kids = children.get(&id).map_or(&[][..], Vec::as_slice);
        let is_collapsed = collapsed.contains(&id);
        rows.push(Row {
            id,
            depth,
            children: kids.len(),
            collapsed: is_collapsed && !kids.is_empty(),
        });
        if !is_collapsed {
            for child in kids.iter().rev() {
                stack.push((*child, depth + 1));
            }
        }
    }
    rows
}
