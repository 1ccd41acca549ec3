//! A three-way merge of a worktree's commit into another checkout of the same repository, file
//! by file: a file only the worktree changed is taken, a file both sides changed is merged with
//! `git merge-file`, anything else that both sides changed is a conflict. All or nothing: with
//! any conflict nothing is written, and the target's files are checked again just before the
//! writes, which go through temporary files renamed into place, every one through handles on
//! the target's directories that follow no symbolic link (`apply.rs`).

mod apply;
mod content;

use std::collections::HashMap;
use std::path::Path;

use arbor_tools::beneath::Root;

use crate::snapshot::snapshot;
use crate::{Git, Repo, WorktreeError};

/// How conflicting hunks of a file both sides changed are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Conflicts are reported and nothing is written (the default).
    #[default]
    Merge,
    /// The target's side wins where both changed.
    Ours,
    /// The worktree's side wins where both changed.
    Theirs,
    /// Both sides' lines are kept, the target's first (text files only).
    Union,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [
        Strategy::Merge,
        Strategy::Ours,
        Strategy::Theirs,
        Strategy::Union,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Ours => "ours",
            Self::Theirs => "theirs",
            Self::Union => "union",
        }
    }

    pub fn parse(text: &str) -> Option<Strategy> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A merge to make.
#[derive(Debug, Clone)]
pub struct MergeSpec<'a> {
    /// The worktree whose changes merge.
    pub worktree: &'a Path,
    /// Its commit that holds them (see [`crate::commit_work`]).
    pub commit: &'a str,
    /// The commit they are counted from: where it started, or what was merged last.
    pub from: &'a str,
    /// Only paths under this prefix merge (empty: all).
    pub prefix: &'a str,
    /// The checkout to merge into.
    pub into: &'a Path,
    pub strategy: Strategy,
    /// Names of the two sides in conflict markers and messages (agent paths).
    pub ours_label: &'a str,
    pub theirs_label: &'a str,
}

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Paths changed in the target (relative to its top), sorted; empty with any conflict.
    pub merged: Vec<String>,
    /// Files that kept the merge from happening, sorted by path.
    pub conflicts: Vec<Conflict>,
}

/// A file both sides changed in ways that do not merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    /// The conflicting hunks with their markers, or one sentence saying why the file does not
    /// merge (deleted on one side, binary, in the way).
    pub hunks: Vec<String>,
}

/// A tree entry: file mode and blob id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) mode: u32,
    pub(crate) sha: String,
}

pub(crate) const REGULAR: u32 = 0o100644;
pub(crate) const EXECUTABLE: u32 = 0o100755;
pub(crate) const SYMLINK: u32 = 0o120000;

impl Entry {
    pub(crate) fn is_file(&self) -> bool {
        matches!(self.mode, REGULAR | EXECUTABLE)
    }
}

/// One path the worktree changed: its entry before (`None`: added) and after (`None`: deleted).
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) path: String,
    pub(crate) base: Option<Entry>,
    pub(crate) theirs: Option<Entry>,
}

/// What the merge does with one path.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// The target already has the worktree's version, or keeps its own.
    Keep,
    /// The worktree's version goes in (`None`: the file is deleted).
    Take(Option<Entry>),
    /// Both changed the text: a merged text with this mode goes in.
    Merged(Vec<u8>, u32),
}

/// Merges the worktree's changes into the target checkout (see the module's docs).
pub fn merge(git: &Git, spec: &MergeSpec<'_>) -> Result<MergeReport, WorktreeError> {
    let child = Repo::discover(git, spec.worktree)?
        .ok_or_else(|| WorktreeError::NotARepository(spec.worktree.to_path_buf()))?;
    let target = Repo::discover(git, spec.into)?
        .ok_or_else(|| WorktreeError::NotARepository(spec.into.to_path_buf()))?;
    if child.common_dir != target.common_dir {
        return Err(WorktreeError::Refused(format!(
            "{} is not a checkout of the repository {} (it belongs to {})",
            spec.into.display(),
            child.common_dir.display(),
            target.common_dir.display()
        )));
    }
    let top = target.toplevel.clone();
    let root = Root::open(&top)
        .map_err(|err| WorktreeError::io(format!("cannot open {}", top.display()), &err))?;
    let theirs = changes(git, &top, spec.from, spec.commit, spec.prefix)?;
    if theirs.is_empty() {
        return Ok(MergeReport::default());
    }
    let ours_tree = snapshot(git, &target)?;
    let ours: HashMap<String, Option<Entry>> = changes(git, &top, spec.from, &ours_tree, "")?
        .into_iter()
        .map(|change| (change.path, change.theirs))
        .collect();
    let mut conflicts = Vec::new();
    let mut actions = Vec::new();
    for change in theirs {
        let ours = match ours.get(&change.path) {
            Some(entry) => entry.clone(),
            None => change.base.clone(),
        };
        match content::decide(git, &root, &target, spec, &change, ours.as_ref())? {
            Ok(Action::Keep) => {}
            Ok(action) => actions.push((change.path, ours, action)),
            Err(hunks) => conflicts.push(Conflict {
                path: change.path,
                hunks,
            }),
        }
    }
    for (path, ours, action) in &actions {
        if let Some(reason) = apply::in_the_way(&root, path, ours.as_ref(), action, spec) {
            conflicts.push(Conflict {
                path: path.clone(),
                hunks: vec![reason],
            });
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort_by(|a, b| a.path.cmp(&b.path));
        return Ok(MergeReport {
            merged: Vec::new(),
            conflicts,
        });
    }
    apply::unchanged_since_snapshot(git, &root, &top, &actions, spec)?;
    let contents = content::blobs(git, &top, &actions)?;
    let mut merged = apply::write(&root, actions, contents, spec)?;
    merged.sort();
    Ok(MergeReport {
        merged,
        conflicts: Vec::new(),
    })
}

/// The paths that differ between two commits or trees (under `prefix`), with both entries.
pub(crate) fn changes(
    git: &Git,
    top: &Path,
    from: &str,
    to: &str,
    prefix: &str,
) -> Result<Vec<Change>, WorktreeError> {
    let mut args = vec!["diff-tree", "-r", "-z", "--raw", "--no-renames", from, to];
    if !prefix.is_empty() {
        args.extend(["--", prefix]);
    }
    let literal = [("GIT_LITERAL_PATHSPECS", std::ffi::OsStr::new("1"))];
    let out = git.run_env(top, &args, &literal)?;
    parse_raw(&out)
}

/// `:<old mode> <new mode> <old id> <new id> <status>NUL<path>NUL`, repeated.
fn parse_raw(out: &[u8]) -> Result<Vec<Change>, WorktreeError> {
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let Some(meta) = fields.next() {
        let meta = String::from_utf8_lossy(meta);
        let path = fields
            .next()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .ok_or_else(|| WorktreeError::Refused(format!("git diff-tree ended early: {meta}")))?;
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_sha, new_sha, ..] = parts[..] else {
            return Err(WorktreeError::Refused(format!(
                "cannot read git diff-tree output `{meta}`"
            )));
        };
        let entry = |mode: &str, sha: &str| -> Option<Entry> {
            let mode = u32::from_str_radix(mode, 8).ok()?;
            (mode != 0).then(|| Entry {
                mode,
                sha: sha.to_string(),
            })
        };
        changes.push(Change {
            path,
            base: entry(old_mode, old_sha),
            theirs: entry(new_mode, new_sha),
        });
    }
    Ok(changes)
}

#[cfg(test)]
mod tests;
