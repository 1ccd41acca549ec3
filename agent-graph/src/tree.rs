//! A session's spawn tree as a `petgraph` graph, rendered as indented text, Graphviz DOT or a
//! Mermaid flowchart.

use std::collections::HashMap;
use std::fmt::Write as _;

use arbor_protocol::{AgentStatus, ThreadId};
use petgraph::Direction;
use petgraph::graph::{Graph, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::state::SessionState;
use crate::threads::{session_threads, thread_by_id};
use crate::walk::session_edges;
use crate::{EdgeStatus, Store, StoreError, ThreadRecord};

/// Longest status detail shown on one line of a rendering, in characters.
const DETAIL_CHARS: usize = 60;

/// A spawn tree: nodes are thread records, edges carry the spawn edge's status.
#[derive(Debug, Clone)]
pub struct SessionTree {
    graph: Graph<ThreadRecord, EdgeStatus>,
    root: NodeIndex,
}

impl SessionTree {
    /// Loads the tree under `root_id` (normally a session id: the root thread's id) from one
    /// consistent snapshot. Closed edges, and everything under them, are included only when
    /// `include_closed` is set.
    pub fn load(
        store: &Store,
        root_id: ThreadId,
        include_closed: bool,
    ) -> Result<Self, StoreError> {
        let (root, threads, edges) = store.read("load session tree", |conn| {
            let root = thread_by_id(conn, root_id)?.ok_or(StoreError::UnknownThread(root_id))?;
            let threads = session_threads(conn, root.session_id())?;
            let edges = session_edges(conn, root.session_id())?;
            Ok((root, threads, edges))
        })?;
        Ok(Self::build(
            root,
            threads,
            edges.into_iter().collect(),
            include_closed,
        ))
    }

    /// The tree of a session's state (the store's view with the log's later lines applied).
    /// `None` when the state has no root.
    pub fn from_state(state: &SessionState, include_closed: bool) -> Option<Self> {
        let root = state.root()?.record.clone();
        let edges = state
            .threads
            .values()
            .filter_map(|row| Some((row.record.id(), (row.record.parent_id()?, row.edge?))))
            .collect();
        let threads = state
            .threads
            .values()
            .map(|row| row.record.clone())
            .collect();
        Some(Self::build(root, threads, edges, include_closed))
    }

    /// The tree of `root_record` over `threads` and the spawn `edges` (child → parent and the
    /// edge's status), for a caller that holds the agents itself (the Restate engine).
    pub fn build(
        root_record: ThreadRecord,
        threads: Vec<ThreadRecord>,
        edges: Vec<(ThreadId, (ThreadId, EdgeStatus))>,
        include_closed: bool,
    ) -> Self {
        let root_id = root_record.id();
        let mut children: HashMap<ThreadId, Vec<(ThreadId, EdgeStatus)>> = HashMap::new();
        for (child, (parent, status)) in edges {
            if include_closed || status == EdgeStatus::Open {
                children.entry(parent).or_default().push((child, status));
            }
        }
        let mut records: HashMap<ThreadId, ThreadRecord> = threads
            .into_iter()
            .map(|record| (record.id(), record))
            .collect();
        let mut graph = Graph::new();
        let root = graph.add_node(root_record);
        // Breadth-first, children by id: node indices follow the order `descendants` reports.
        let mut queue = std::collections::VecDeque::from([(root_id, root)]);
        while let Some((id, node)) = queue.pop_front() {
            let Some(mut kids) = children.remove(&id) else {
                continue;
            };
            kids.sort_unstable_by_key(|(child, _)| *child);
            for (child, status) in kids {
                // An edge into a thread outside the session index is skipped, not fatal.
                let Some(record) = records.remove(&child) else {
                    continue;
                };
                let child_node = graph.add_node(record);
                graph.add_edge(node, child_node, status);
                queue.push_back((child, child_node));
            }
        }
        Self { graph, root }
    }

    /// The graph: node weights are thread records, edge weights the spawn edges' status.
    pub fn graph(&self) -> &Graph<ThreadRecord, EdgeStatus> {
        &self.graph
    }

    /// Changes every node's record in place, e.g. to show an effective status before
    /// rendering.
    pub fn adjust_records(&mut self, mut adjust: impl FnMut(&mut ThreadRecord)) {
        for record in self.graph.node_weights_mut() {
            adjust(record);
        }
    }

    /// The node of the tree's root.
    pub fn root(&self) -> NodeIndex {
        self.root
    }

    /// How many agents the tree holds, root included.
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// Always false: a tree holds at least its root.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// One line per agent, children indented by two spaces under their parent, by id:
    /// `/root/a (Plato, worker) completed: done`, with ` [closed]` after a closed edge.
    pub fn to_text(&self) -> String {
        self.to_text_with(|_| None)
    }

    /// [`SessionTree::to_text`] with `note(record)`, when it gives one, after an agent's line
    /// as `  [note]` (a worktree agent's change summary).
    pub fn to_text_with(&self, note: impl Fn(&ThreadRecord) -> Option<String>) -> String {
        let mut out = String::new();
        let mut row = String::new();
        for (node, depth, edge) in self.preorder() {
            let record = &self.graph[node];
            row.clear();
            let _ = write!(
                row,
                "{:indent$}{} {} {}",
                "",
                record.path(),
                who(record),
                status_line(&record.status),
                indent = depth * 2
            );
            if edge == Some(EdgeStatus::Closed) {
                row.push_str(" [closed]");
            }
            if let Some(note) = note(record) {
                let _ = write!(row, "  [{note}]");
            }
            // One row per agent whatever its fields hold: a control character (a line break
            // in a status, an escape in a file name) shows as its escape.
            out.push_str(&arbor_protocol::text::visible(&row));
            out.push('\n');
        }
        out
    }

    /// A Graphviz `digraph`; nodes are named by thread id, closed edges are dashed.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph session {\n  node [shape=box];\n");
        let order = self.preorder();
        for (node, _, _) in &order {
            let record = &self.graph[*node];
            let label = label_lines(record)
                .map(|line| dot_escape(&line))
                .join("\\n");
            let _ = writeln!(out, "  \"{}\" [label=\"{label}\"];", record.id());
        }
        for (node, _, _) in &order {
            for edge in self.sorted_edges(*node) {
                let (parent, child) = (&self.graph[*node], &self.graph[edge.0]);
                let style = match edge.1 {
                    EdgeStatus::Open => "",
                    EdgeStatus::Closed => " [style=dashed, label=\"closed\"]",
                };
                let _ = writeln!(out, "  \"{}\" -> \"{}\"{style};", parent.id(), child.id());
            }
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid `flowchart TD`; nodes are `n0`, `n1`, … in breadth-first order, closed edges
    /// are dotted.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart TD\n");
        let order = self.preorder();
        for (node, _, _) in &order {
            let record = &self.graph[*node];
            let label = label_lines(record)
                .map(|line| mermaid_escape(&line))
                .join("<br/>");
            let _ = writeln!(out, "  n{}[\"{label}\"]", node.index());
        }
        for (node, _, _) in &order {
            for (child, status) in self.sorted_edges(*node) {
                let arrow = match status {
                    EdgeStatus::Open => "-->",
                    EdgeStatus::Closed => "-. closed .->",
                };
                let _ = writeln!(out, "  n{} {arrow} n{}", node.index(), child.index());
            }
        }
        out
    }

    /// Depth-first pre-order from the root, children by id: (node, depth, edge into it).
    fn preorder(&self) -> Vec<(NodeIndex, usize, Option<EdgeStatus>)> {
        let mut out = Vec::with_capacity(self.graph.node_count());
        let mut stack = vec![(self.root, 0, None)];
        while let Some((node, depth, edge)) = stack.pop() {
            out.push((node, depth, edge));
            for (child, status) in self.sorted_edges(node).into_iter().rev() {
                stack.push((child, depth + 1, Some(status)));
            }
        }
        out
    }

    /// A node's outgoing edges, children ordered by thread id.
    fn sorted_edges(&self, node: NodeIndex) -> Vec<(NodeIndex, EdgeStatus)> {
        let mut edges: Vec<_> = self
            .graph
            .edges_directed(node, Direction::Outgoing)
            .map(|edge| (edge.target(), *edge.weight()))
            .collect();
        edges.sort_unstable_by_key(|(child, _)| self.graph[*child].id());
        edges
    }
}

/// A node's label in a drawing, line by line: path, who, status.
fn label_lines(record: &ThreadRecord) -> [String; 3] {
    let shown = |text: String| arbor_protocol::text::visible(&text).into_owned();
    [
        record.path().to_string(),
        shown(who(record)),
        shown(status_line(&record.status)),
    ]
}

/// `(nickname, role)`, or `(role)` without a nickname.
fn who(record: &ThreadRecord) -> String {
    match &record.meta.nickname {
        Some(nickname) => format!("({nickname}, {})", record.meta.role),
        None => format!("({})", record.meta.role),
    }
}

/// The status on one line: the detail's first line, cut to [`DETAIL_CHARS`] characters.
fn status_line(status: &AgentStatus) -> String {
    let Some(detail) = status.detail() else {
        return status.name().to_string();
    };
    let first = detail.lines().next().unwrap_or_default();
    let mut short: String = first.chars().take(DETAIL_CHARS).collect();
    if short.len() < detail.len() {
        short.push('…');
    }
    format!("{}: {short}", status.name())
}

fn dot_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn mermaid_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            c => out.push(c),
        }
    }
    out
}
