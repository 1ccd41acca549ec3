//! `apply_patch` (behaviour §8): arguments, the tool spec, the summary and the entry point.

mod apply;
#[cfg(test)]
mod beneath_tests;
mod guard;
mod parse;
mod seek;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::Path;

use crate::ToolError;
use arbor_protocol::{SandboxMode, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub use parse::{FileOp, Hunk, HunkLine, Patch, parse_patch};

/// Arguments of `apply_patch`. Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    pub patch: String,
}

impl ApplyPatchArgs {
    /// Parses the model's JSON arguments.
    pub fn parse(json: &str) -> Result<Self, ToolError> {
        serde_json::from_str(json).map_err(ToolError::PatchArgs)
    }
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    Added,
    /// Updated in place, or moved (reported under the new path).
    Modified,
    Deleted,
}

impl ChangeKind {
    /// The one-letter code of the summary: `A`, `M` or `D`.
    pub fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
        }
    }
}

/// One changed file, its path relative to the cwd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub kind: ChangeKind,
    pub path: String,
}

/// The files a successful patch changed, in patch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchSummary {
    pub changes: Vec<FileChange>,
}

impl PatchSummary {
    /// The text the model reads: `Success. Updated the following files:` then one `A`/`M`/`D`
    /// line per file, added files first, then modified, then deleted.
    pub fn to_model_output(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for PatchSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Success. Updated the following files:")?;
        for kind in [ChangeKind::Added, ChangeKind::Modified, ChangeKind::Deleted] {
            for change in self.changes.iter().filter(|change| change.kind == kind) {
                write!(f, "\n{} {}", kind.letter(), change.path)?;
            }
        }
        Ok(())
    }
}

/// Parses `patch` and applies it to the files under `cwd`. Paths in the patch are relative to
/// `cwd`; absolute paths and paths that climb out with `..` are refused (symlinks are not
/// resolved here: [`apply_patch_confined`] adds the sandbox's limits). Every hunk of every file
/// is computed before anything is written. Blocking: call it from `spawn_blocking`.
pub fn apply_patch(cwd: &Path, patch: &str) -> Result<PatchSummary, ToolError> {
    let parsed = parse_patch(patch)?;
    let changes = apply::apply(&apply::Files::Plain(cwd.to_path_buf()), &parsed)?;
    Ok(PatchSummary { changes })
}

/// Like [`apply_patch`], confined as a command in sandbox `mode` with `cwd` as its workspace
/// would be: nothing in `read-only`; in `workspace-write` only inside `cwd` and never inside its
/// `.git` or `.arbor`. Every path is checked before anything is written, then every file is
/// opened beneath a handle on `cwd` without following any symbolic link (`openat2` with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so a link swapped in meanwhile cannot redirect a
/// read or a write. Blocking: call it from `spawn_blocking`.
pub fn apply_patch_confined(
    cwd: &Path,
    patch: &str,
    mode: SandboxMode,
) -> Result<PatchSummary, ToolError> {
    let parsed = parse_patch(patch)?;
    guard::check(cwd, &parsed, mode)?;
    let files = match mode {
        SandboxMode::WorkspaceWrite => apply::Files::beneath(cwd)?,
        SandboxMode::DangerFullAccess | SandboxMode::ReadOnly => {
            apply::Files::Plain(cwd.to_path_buf())
        }
    };
    let changes = apply::apply(&files, &parsed)?;
    Ok(PatchSummary { changes })
}

/// Every path `patch` adds, updates, moves to or deletes, in patch order, normalised (`./a/../b`
/// is `b`); a path the patch itself refuses (absolute, leaving the cwd) as written. For judging
/// a patch with the command policy before it is applied.
pub fn patch_paths(patch: &str) -> Result<Vec<String>, ToolError> {
    let parsed = parse_patch(patch)?;
    let mut paths: Vec<String> = Vec::new();
    for path in guard::written_paths(&parsed) {
        let path = match apply::relative_path(path) {
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string(),
        };
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    Ok(paths)
}

const DESCRIPTION: &str = "\
Edits files with a patch. Output: a list of the changed files, or an error naming the file and \
the lines that did not match (then no file was changed). The format:

*** Begin Patch
*** Add File: path/to/new.txt
+every line of the new file, each starting with +
*** Update File: path/to/existing.rs
*** Move to: path/to/renamed.rs   (optional line: also renames the file)
@@ fn name_of_enclosing_function()   (optional text after @@: a line to find first)
 an unchanged context line (starts with one space)
-a line to remove
+a line to add
@@
 the next hunk of the same file
*** Delete File: path/to/old.txt
*** End Patch

Paths are relative to your working directory; absolute paths and .. out of it are refused. \
There are no line numbers: give about 3 unchanged lines before and after each change so the \
place is found unambiguously, and add an @@ line naming a class or function when that is not \
enough. Hunks of a file must be in file order. Put `*** End of File` after a hunk that ends at \
the end of the file. Every hunk is checked before anything is written.";

/// The `apply_patch` tool as offered to the model.
pub fn apply_patch_tool_spec() -> ToolSpec {
    ToolSpec {
        name: "apply_patch".to_string(),
        description: DESCRIPTION.to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "patch": {
                    "type": "string",
                    "description": "The whole patch, from '*** Begin Patch' to '*** End Patch'."
                }
            },
            "required": ["patch"],
            "additionalProperties": false
        }),
    }
}
