//! Writing a merge into the target checkout: first every path is checked (nothing in the way,
//! every file still as the snapshot saw it), then every new file is written next to its place
//! and only then renamed over it, then deletions. A failure before the renames removes what was
//! written, so the checkout is left as it was.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Action, EXECUTABLE, Entry, MergeSpec, SYMLINK};
use crate::{Git, WorktreeError};

/// Why writing `path` would go wrong in the target, if it would: a directory on its way is a
/// file or a symbolic link there, or the target has something git does not track at `path`.
pub(crate) fn in_the_way(
    top: &Path,
    path: &str,
    ours: Option<&Entry>,
    action: &Action,
    spec: &MergeSpec<'_>,
) -> Option<String> {
    if matches!(action, Action::Take(None) | Action::Keep) {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    let mut dir = top.to_path_buf();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(part);
        match dir.symlink_metadata() {
            Err(_) => break,
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Some(format!(
                    "{} is a file or a symbolic link in {}'s checkout where {} has a \
                     directory; merge it by hand",
                    dir.strip_prefix(top).unwrap_or(&dir).display(),
                    spec.ours_label,
                    spec.theirs_label
                ));
            }
        }
    }
    if ours.is_none() && top.join(path).symlink_metadata().is_ok() {
        return Some(format!(
            "{}'s checkout has something git does not track at this path (an ignored file or a \
             directory); move it away or merge by hand",
            spec.ours_label
        ));
    }
    None
}

/// Fails when a file the merge replaces or deletes is no longer what the snapshot held (the
/// target changed while the merge ran), before anything is written.
pub(crate) fn unchanged_since_snapshot(
    git: &Git,
    top: &Path,
    actions: &[(String, Option<Entry>, Action)],
    spec: &MergeSpec<'_>,
) -> Result<(), WorktreeError> {
    let changed = |path: &str| {
        WorktreeError::Refused(format!(
            "{path} changed in {}'s checkout while the merge ran; nothing was written, merge \
             again",
            spec.ours_label
        ))
    };
    let mut files: Vec<(&str, &str)> = Vec::new();
    for (path, ours, _) in actions {
        match ours {
            None => {
                if top.join(path).symlink_metadata().is_ok() {
                    return Err(changed(path));
                }
            }
            Some(entry) if entry.mode == SYMLINK => {
                let target = std::fs::read_link(top.join(path)).map_err(|_| changed(path))?;
                let out = git.output(
                    top,
                    &["hash-object", "-t", "blob", "--no-filters", "--stdin"],
                    &[],
                    Some(target.as_os_str().as_bytes()),
                )?;
                if String::from_utf8_lossy(&out.stdout).trim() != entry.sha {
                    return Err(changed(path));
                }
            }
            Some(entry) => files.push((path, &entry.sha)),
        }
    }
    if files.is_empty() {
        return Ok(());
    }
    let input: String = files.iter().map(|(path, _)| format!("{path}\n")).collect();
    let out = git.output(
        top,
        &["hash-object", "--stdin-paths"],
        &[],
        Some(input.as_bytes()),
    )?;
    if out.code != 0 {
        let first = files.first().map_or("a file", |(path, _)| path);
        return Err(changed(first));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut hashes = text.lines();
    for (path, sha) in files {
        if hashes.next() != Some(sha) {
            return Err(changed(path));
        }
    }
    Ok(())
}

/// Writes the merge: new files beside their places, renamed over them once all are written,
/// then deletions (with the directories they leave empty). Returns every path it changed.
pub(crate) fn write(
    top: &Path,
    actions: Vec<(String, Option<Entry>, Action)>,
    mut contents: HashMap<String, Vec<u8>>,
) -> Result<Vec<String>, WorktreeError> {
    let mut staged = Staged::default();
    let mut deletions = Vec::new();
    for (path, _, action) in actions {
        let (bytes, mode) = match action {
            Action::Keep => continue,
            Action::Take(None) => {
                deletions.push(path);
                continue;
            }
            Action::Take(Some(entry)) => (contents.remove(&path).unwrap_or_default(), entry.mode),
            Action::Merged(bytes, mode) => (bytes, mode),
        };
        if let Err(err) = staged.stage(top, &path, &bytes, mode) {
            staged.undo();
            return Err(err);
        }
    }
    let mut changed = Vec::new();
    for (temp, path) in std::mem::take(&mut staged.files) {
        let target = top.join(&path);
        std::fs::rename(&temp, &target)
            .map_err(|err| WorktreeError::io(format!("cannot write {}", target.display()), &err))?;
        changed.push(path);
    }
    for path in deletions {
        let target = top.join(&path);
        match std::fs::remove_file(&target) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(WorktreeError::io(
                    format!("cannot delete {}", target.display()),
                    &err,
                ));
            }
        }
        prune_empty_parents(top, &target);
        changed.push(path);
    }
    Ok(changed)
}

/// Files written beside their places and the directories made for them.
#[derive(Default)]
struct Staged {
    files: Vec<(PathBuf, String)>,
    dirs: Vec<PathBuf>,
}

impl Staged {
    fn stage(
        &mut self,
        top: &Path,
        path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> Result<(), WorktreeError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let target = top.join(path);
        let parent = target.parent().unwrap_or(top).to_path_buf();
        self.make_dirs(top, &parent)?;
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let temp = parent.join(format!(
            ".{name}.arbor-merge-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let written = if mode == SYMLINK {
            std::os::unix::fs::symlink(OsStr::from_bytes(bytes), &temp)
        } else {
            let permissions = if mode == EXECUTABLE { 0o777 } else { 0o666 };
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(permissions)
                .open(&temp)
                .and_then(|mut file| file.write_all(bytes))
        };
        if let Err(err) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(WorktreeError::io(
                format!("cannot write {}", target.display()),
                &err,
            ));
        }
        self.files.push((temp, path.to_string()));
        Ok(())
    }

    /// Makes `dir` and the directories above it up to `top` that are missing.
    fn make_dirs(&mut self, top: &Path, dir: &Path) -> Result<(), WorktreeError> {
        let missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| *d != top && d.symlink_metadata().is_err())
            .collect();
        for dir in missing.into_iter().rev() {
            std::fs::create_dir(dir).map_err(|err| {
                WorktreeError::io(format!("cannot create {}", dir.display()), &err)
            })?;
            self.dirs.push(dir.to_path_buf());
        }
        Ok(())
    }

    /// Removes everything staged so far.
    fn undo(&mut self) {
        for (temp, _) in self.files.drain(..) {
            let _ = std::fs::remove_file(temp);
        }
        for dir in self.dirs.drain(..).rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Removes the directories a deletion left empty, up to (not including) `top`.
fn prune_empty_parents(top: &Path, path: &Path) {
    for dir in path.ancestors().skip(1) {
        if dir == top || !dir.starts_with(top) || std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}
