//! Where `apply_patch` may write. arbor writes a patch itself, in process, so the sandbox that
//! confines commands cannot confine it: the same limits are checked here before anything is
//! written. `read-only` writes nothing; `workspace-write` writes only inside the workspace (the
//! agent's cwd, symbolic links resolved) and never inside its `.git` or `.arbor`;
//! `danger-full-access` only keeps the patch's own rule that paths stay under the cwd. This
//! check gives the clear messages; what makes the writes safe against a link swapped in after it
//! is that every file is then opened beneath a handle on the workspace (`beneath.rs`).

use std::path::{Component, Path, PathBuf};

use arbor_protocol::SandboxMode;

use super::apply::relative_path;
use super::parse::{FileOp, Patch};
use crate::ToolError;
use crate::sandbox::PROTECTED_ENTRIES;

/// Checks every path `patch` writes, moves or deletes against `mode` with `cwd` as the
/// workspace. Blocking (it resolves symbolic links): call it from `spawn_blocking`.
pub(crate) fn check(cwd: &Path, patch: &Patch, mode: SandboxMode) -> Result<(), ToolError> {
    match mode {
        SandboxMode::DangerFullAccess => return Ok(()),
        SandboxMode::ReadOnly => return Err(ToolError::ReadOnly),
        SandboxMode::WorkspaceWrite => {}
    }
    let workspace = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for path in written_paths(patch) {
        let rel = relative_path(path)?;
        if let Some(entry) = protected_entry(&rel) {
            return Err(ToolError::Protected {
                path: path.to_string(),
                entry,
            });
        }
        let resolved = resolve(&workspace.join(&rel));
        let Ok(inside) = resolved.strip_prefix(&workspace) else {
            return Err(ToolError::OutsideWorkspace {
                path: path.to_string(),
            });
        };
        if let Some(entry) = protected_entry(inside) {
            return Err(ToolError::Protected {
                path: path.to_string(),
                entry,
            });
        }
    }
    Ok(())
}

/// Every path the patch touches, moves included.
pub(super) fn written_paths(patch: &Patch) -> impl Iterator<Item = &str> {
    patch.ops.iter().flat_map(|op| match op {
        FileOp::Add { path, .. } | FileOp::Delete { path } => vec![path.as_str()],
        FileOp::Update { path, move_to, .. } => std::iter::once(path.as_str())
            .chain(move_to.as_deref())
            .collect(),
    })
}

/// The protected entry a workspace-relative path lies in, if any.
fn protected_entry(rel: &Path) -> Option<&'static str> {
    let first = rel.components().find_map(|c| match c {
        Component::Normal(part) => Some(part),
        _ => None,
    })?;
    PROTECTED_ENTRIES
        .iter()
        .copied()
        .find(|entry| first == std::ffi::OsStr::new(entry))
}

/// `path` with every symbolic link resolved: its deepest existing ancestor canonicalized, the
/// rest (which does not exist yet) appended as it is.
fn resolve(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(current) {
            return rest.iter().rev().fold(real, |dir, part| dir.join(part));
        }
        match (current.parent(), current.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                current = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::apply_patch_confined;

    fn add(path: &str) -> String {
        format!("*** Begin Patch\n*** Add File: {path}\n+hello\n*** End Patch")
    }

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join(".git")).expect(".git");
        std::fs::create_dir(dir.path().join("src")).expect("src");
        dir
    }

    /// Applies `add(path)` in `mode` and returns the error text, or `ok`.
    fn check(mode: SandboxMode, path: &str, setup: impl FnOnce(&Path)) -> String {
        let dir = workspace();
        setup(dir.path());
        match apply_patch_confined(dir.path(), &add(path), mode) {
            Ok(_) => "ok".to_string(),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn workspace_write_writes_inside_only() {
        let ws = SandboxMode::WorkspaceWrite;
        assert_eq!(check(ws, "src/a.txt", |_| {}), "ok");
        assert_eq!(
            check(ws, ".git/config", |_| {}),
            "apply_patch: .git/config is inside .git, which stays read-only"
        );
        assert_eq!(
            check(ws, "./src/../.arbor/rules/x.toml", |_| {}),
            "apply_patch: ./src/../.arbor/rules/x.toml is inside .arbor, which stays read-only"
        );
        assert_eq!(
            check(ws, "../x.txt", |_| {}),
            "apply_patch: path escapes the working directory: ../x.txt"
        );
    }

    #[test]
    fn symbolic_links_cannot_lead_out_or_into_git() {
        let ws = SandboxMode::WorkspaceWrite;
        let outside = tempfile::tempdir().expect("outside");
        let target = outside.path().to_path_buf();
        assert_eq!(
            check(ws, "out/x.txt", |dir| {
                std::os::unix::fs::symlink(&target, dir.join("out")).expect("symlink");
            }),
            "apply_patch: out/x.txt resolves outside the workspace"
        );
        assert_eq!(
            check(ws, "g/hooks/pre-commit", |dir| {
                std::os::unix::fs::symlink(dir.join(".git"), dir.join("g")).expect("symlink");
            }),
            "apply_patch: g/hooks/pre-commit is inside .git, which stays read-only"
        );
        assert!(
            std::fs::read_dir(outside.path())
                .expect("dir")
                .next()
                .is_none()
        );
    }

    #[test]
    fn read_only_writes_nothing_and_full_access_keeps_the_cwd_rule() {
        assert_eq!(
            check(SandboxMode::ReadOnly, "src/a.txt", |_| {}),
            "apply_patch: the sandbox is read-only: this agent cannot change files"
        );
        assert_eq!(check(SandboxMode::DangerFullAccess, ".git/x", |_| {}), "ok");
        assert_eq!(
            check(SandboxMode::DangerFullAccess, "/etc/x", |_| {}),
            "apply_patch: absolute paths are not allowed: /etc/x"
        );
    }

    #[test]
    fn a_move_into_git_is_refused_and_nothing_is_written() {
        let dir = workspace();
        std::fs::write(dir.path().join("src/a.txt"), "hello\n").expect("a");
        let patch = "*** Begin Patch\n*** Update File: src/a.txt\n*** Move to: .git/a.txt\n@@\n-hello\n+bye\n*** End Patch";
        let err = apply_patch_confined(dir.path(), patch, SandboxMode::WorkspaceWrite)
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(
            err.to_string(),
            "apply_patch: .git/a.txt is inside .git, which stays read-only"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/a.txt")).expect("a"),
            "hello\n"
        );
    }
}
