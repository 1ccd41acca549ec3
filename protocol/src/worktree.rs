//! Worktree isolation: the `isolation` setting of roles, config and `spawn_agent`, the change
//! summary of an agent that works in a git worktree of its own, and the `worktree` facts of the
//! session log (a worktree made for an agent, its changes merged, the worktree removed).

use serde::{Deserialize, Serialize};

/// Where a child works: in its parent's checkout, or in a git worktree of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The parent's checkout, shared with every other agent working there (the default).
    #[default]
    Shared,
    /// A new branch and `git worktree` of the parent's current state.
    Worktree,
}

impl Isolation {
    /// Every value, in the order error messages list them.
    pub const ALL: [Isolation; 2] = [Isolation::Shared, Isolation::Worktree];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Worktree => "worktree",
        }
    }

    /// Parses `shared` or `worktree`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|value| value.as_str() == text)
    }

    /// The error text for a value that is neither.
    pub fn unknown(text: &str) -> String {
        format!("unknown value `{text}`, expected one of shared, worktree")
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a worktree agent changed since it forked from its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChangeSummary {
    /// Files added, changed or deleted.
    pub files: u64,
    /// Lines added and removed (binary files count as files only).
    pub added: u64,
    pub removed: u64,
    /// Everything it changed is committed on its branch.
    pub committed: bool,
    /// Everything it changed has been merged back (nothing would be lost by removing it).
    pub merged: bool,
}

impl ChangeSummary {
    /// One short line: `2 files changed, +5 -1, not committed`.
    pub fn text(&self) -> String {
        if self.files == 0 {
            return "no changes".to_string();
        }
        let files = if self.files == 1 { "file" } else { "files" };
        let state = match (self.merged, self.committed) {
            (true, _) => "merged",
            (false, true) => "committed, not merged",
            (false, false) => "not committed",
        };
        format!(
            "{} {files} changed, +{} -{}, {state}",
            self.files, self.added, self.removed
        )
    }
}

/// A fact about an agent's worktree, a line of the agent's own in the session log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WorktreeFact {
    /// The worktree was made at spawn, before the agent's header was written.
    Created(WorktreeCreated),
    /// Its changes, committed as `commit`, were merged into the checkout `into`.
    Merged(WorktreeMerged),
    /// The worktree and its branch were removed (it had no unmerged changes).
    Removed,
}

/// The git repository a session's workspace was in when the session was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceRepository {
    /// Its shared git directory (canonical); `None` when the workspace was in no repository.
    pub common_dir: Option<String>,
}

/// Where an agent's worktree is and what it started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeCreated {
    /// The worktree's directory, relative to `$ARBOR_HOME`.
    pub path: String,
    /// The branch checked out there (`arbor/<session short id>/<name>`).
    pub branch: String,
    /// The commit it started from: the parent's HEAD, or a commit of the parent's uncommitted
    /// changes on top of it.
    pub base: String,
    /// The parent's checkout it forked from (absolute), where its changes merge back.
    pub source: String,
    /// The agent's cwd inside the worktree, relative to its top (empty at the top); changes
    /// outside it are not the agent's.
    #[serde(default)]
    pub prefix: String,
}

/// A merge of an agent's changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeMerged {
    /// The commit on the agent's branch whose changes were merged.
    pub commit: String,
    /// The checkout they were merged into (absolute).
    pub into: String,
    /// The files the merge changed there.
    #[serde(default)]
    pub files: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_parses_its_two_values_only() {
        assert_eq!(Isolation::parse("worktree"), Some(Isolation::Worktree));
        assert_eq!(Isolation::parse("shared"), Some(Isolation::Shared));
        assert_eq!(Isolation::parse("Worktree"), None);
        assert_eq!(
            serde_json::to_string(&Isolation::Worktree).expect("ser"),
            "\"worktree\""
        );
    }

    #[test]
    fn a_summary_reads_as_one_line() {
        let mut summary = ChangeSummary {
            files: 2,
            added: 5,
            removed: 1,
            ..ChangeSummary::default()
        };
        assert_eq!(summary.text(), "2 files changed, +5 -1, not committed");
        summary.committed = true;
        assert_eq!(
            summary.text(),
            "2 files changed, +5 -1, committed, not merged"
        );
        summary.merged = true;
        summary.files = 1;
        assert_eq!(summary.text(), "1 file changed, +5 -1, merged");
        assert_eq!(ChangeSummary::default().text(), "no changes");
    }

    #[test]
    fn facts_are_tagged_by_event() {
        let fact = WorktreeFact::Merged(WorktreeMerged {
            commit: "abc".into(),
            into: "/w".into(),
            files: vec!["a.txt".into()],
        });
        let value = serde_json::to_value(&fact).expect("ser");
        assert_eq!(value["event"], "merged");
        assert_eq!(value["files"][0], "a.txt");
        let removed = serde_json::to_string(&WorktreeFact::Removed).expect("ser");
        assert_eq!(removed, r#"{"event":"removed"}"#);
        let back: WorktreeFact = serde_json::from_str(&removed).expect("de");
        assert_eq!(back, WorktreeFact::Removed);
    }
}
