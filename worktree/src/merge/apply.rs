//! Writing a merge into the target checkout: first every path is checked (nothing in the way,
//! every file still as the snapshot saw it), then every new file is written next to its place
//! and, once the directories they went into are checked again, renamed over it, then deletions.
//! A failure before the renames removes what was written, so the checkout is left as it was.
//!
//! Every read and write goes through handles on the checkout's directories
//! ([`arbor_tools::beneath`]) and follows no symbolic link: a command of an agent that swaps a
//! directory of the target for a link while the merge runs (to send a write elsewhere) gets the
//! merge refused, never a file written outside.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use arbor_tools::beneath::{Dir, Entry as Found, Root};

use super::{Action, EXECUTABLE, Entry, MergeSpec, SYMLINK};
use crate::{Git, WorktreeError};

/// Why writing `path` would go wrong in the target, if it would: a directory on its way is a
/// file or a symbolic link there, or the target has something git does not track at `path`.
pub(crate) fn in_the_way(
    root: &Root,
    path: &str,
    ours: Option<&Entry>,
    action: &Action,
    spec: &MergeSpec<'_>,
) -> Option<String> {
    if matches!(action, Action::Take(None) | Action::Keep) {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    let mut dir = PathBuf::new();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(part);
        match root.entry(&dir) {
            Ok(None) => break,
            Ok(Some(Found::Dir)) => {}
            Ok(Some(_)) | Err(_) => {
                return Some(format!(
                    "{} is a file or a symbolic link in {}'s checkout where {} has a \
                     directory; merge it by hand",
                    dir.display(),
                    spec.ours_label,
                    spec.theirs_label
                ));
            }
        }
    }
    if ours.is_none() && !matches!(root.entry(Path::new(path)), Ok(None)) {
        return Some(format!(
            "{}'s checkout has something git does not track at this path (an ignored file or a \
             directory); move it away or merge by hand",
            spec.ours_label
        ));
    }
    None
}

/// The error of a path that changed while the merge ran: nothing was written.
fn changed(path: &str, spec: &MergeSpec<'_>) -> WorktreeError {
    WorktreeError::Refused(format!(
        "{path} changed in {}'s checkout while the merge ran; nothing was written, merge again",
        spec.ours_label
    ))
}

/// Fails when a file the merge replaces or deletes is no longer what the snapshot held (the
/// target changed while the merge ran), before anything is written.
pub(crate) fn unchanged_since_snapshot(
    git: &Git,
    root: &Root,
    top: &Path,
    actions: &[(String, Option<Entry>, Action)],
    spec: &MergeSpec<'_>,
) -> Result<(), WorktreeError> {
    let mut files: Vec<(&str, &str)> = Vec::new();
    for (path, ours, _) in actions {
        let found = root
            .entry(Path::new(path))
            .map_err(|_| changed(path, spec))?;
        match (ours, found) {
            (None, None) => {}
            (None, Some(_)) => return Err(changed(path, spec)),
            (Some(entry), Some(Found::Link)) if entry.mode == SYMLINK => {
                let target = root
                    .read_link(Path::new(path))
                    .map_err(|_| changed(path, spec))?;
                let out = git.output(
                    top,
                    &["hash-object", "-t", "blob", "--no-filters", "--stdin"],
                    &[],
                    Some(&target),
                )?;
                if String::from_utf8_lossy(&out.stdout).trim() != entry.sha {
                    return Err(changed(path, spec));
                }
            }
            (Some(entry), Some(Found::File)) if entry.mode != SYMLINK => {
                files.push((path, &entry.sha));
            }
            (Some(_), _) => return Err(changed(path, spec)),
        }
    }
    if files.is_empty() {
        return Ok(());
    }
    // Git hashes them as `git add` would (clean filters and line endings of the path). It may
    // read through a link swapped in since the check above; what it reads only makes a hash,
    // and a wrong one refuses the merge.
    let input: String = files.iter().map(|(path, _)| format!("{path}\n")).collect();
    let out = git.output(
        top,
        &["hash-object", "--stdin-paths"],
        &[],
        Some(input.as_bytes()),
    )?;
    if out.code != 0 {
        let first = files.first().map_or("a file", |(path, _)| path);
        return Err(changed(first, spec));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut hashes = text.lines();
    for (path, sha) in files {
        if hashes.next() != Some(sha) {
            return Err(changed(path, spec));
        }
    }
    Ok(())
}

/// Writes the merge: new files beside their places, renamed over them once all are written and
/// their directories are still where they were, then deletions (with the directories they
/// leave empty). Returns every path it changed.
pub(crate) fn write(
    root: &Root,
    actions: Vec<(String, Option<Entry>, Action)>,
    mut contents: HashMap<String, Vec<u8>>,
    spec: &MergeSpec<'_>,
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
        if let Err(err) = staged.stage(root, &path, &bytes, mode, spec) {
            staged.undo(root);
            return Err(err);
        }
    }
    // A directory moved or replaced since it was opened: its files would land where it went.
    let moved = staged
        .dirs
        .values()
        .find(|(dir, _)| !dir.still_at(root).unwrap_or(false))
        .map(|(_, path)| path.clone());
    if let Some(path) = moved {
        staged.undo(root);
        return Err(changed(&path, spec));
    }
    let mut changed_paths = Vec::new();
    for file in std::mem::take(&mut staged.files) {
        file.dir
            .rename(&file.temp, &file.name)
            .map_err(|err| WorktreeError::io(format!("cannot write {}", file.path), &err))?;
        changed_paths.push(file.path);
    }
    for path in deletions {
        let (parent, name) = split(&path);
        let dir = match root.open_dir(parent) {
            Ok(dir) => dir,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                changed_paths.push(path);
                continue;
            }
            Err(err) => return Err(WorktreeError::io(format!("cannot delete {path}"), &err)),
        };
        dir.remove(name, false)
            .map_err(|err| WorktreeError::io(format!("cannot delete {path}"), &err))?;
        prune_empty_parents(root, parent);
        changed_paths.push(path);
    }
    Ok(changed_paths)
}

/// `a/b/c` as (`a/b`, `c`).
fn split(path: &str) -> (&Path, &OsStr) {
    let path = Path::new(path);
    (
        path.parent().unwrap_or(Path::new("")),
        path.file_name().unwrap_or_default(),
    )
}

/// A file written beside its place: the handle on its directory, the temporary name, the name
/// it takes, and its path in the checkout.
struct StagedFile {
    dir: Rc<Dir>,
    temp: OsString,
    name: OsString,
    path: String,
}

/// Files written beside their places, the directories they went into (by path, with the first
/// path staged there) and the directories made for them.
#[derive(Default)]
struct Staged {
    files: Vec<StagedFile>,
    dirs: HashMap<PathBuf, (Rc<Dir>, String)>,
    made: Vec<PathBuf>,
}

impl Staged {
    fn stage(
        &mut self,
        root: &Root,
        path: &str,
        bytes: &[u8],
        mode: u32,
        spec: &MergeSpec<'_>,
    ) -> Result<(), WorktreeError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (parent, name) = split(path);
        let refused = |err: io::Error| {
            if err.raw_os_error() == Some(libc_eloop()) {
                changed(path, spec)
            } else {
                WorktreeError::io(format!("cannot write {path}"), &err)
            }
        };
        let dir = match self.dirs.get(parent) {
            Some((dir, _)) => Rc::clone(dir),
            None => {
                let dir = Rc::new(root.make_dir_all(parent, &mut self.made).map_err(refused)?);
                self.dirs
                    .insert(parent.to_path_buf(), (Rc::clone(&dir), path.to_string()));
                dir
            }
        };
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(
            ".arbor-merge-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let written = if mode == SYMLINK {
            dir.create_symlink(&temp, bytes)
        } else {
            let permissions = if mode == EXECUTABLE { 0o777 } else { 0o666 };
            dir.create_file(&temp, bytes, permissions)
        };
        written.map_err(refused)?;
        self.files.push(StagedFile {
            dir,
            temp,
            name: name.to_os_string(),
            path: path.to_string(),
        });
        Ok(())
    }

    /// Removes everything staged so far, and the directories made for it.
    fn undo(&mut self, root: &Root) {
        for file in self.files.drain(..) {
            let _ = file.dir.remove(&file.temp, false);
        }
        self.dirs.clear();
        for made in self.made.drain(..).rev() {
            let (parent, name) = split_path(&made);
            if let Ok(dir) = root.open_dir(parent) {
                let _ = dir.remove(name, true);
            }
        }
    }
}

fn split_path(path: &Path) -> (&Path, &OsStr) {
    (
        path.parent().unwrap_or(Path::new("")),
        path.file_name().unwrap_or_default(),
    )
}

/// `ELOOP`: what the handles say of a symbolic link on the way.
fn libc_eloop() -> i32 {
    arbor_tools::beneath::through_link()
        .raw_os_error()
        .unwrap_or_default()
}

/// Removes the directories a deletion left empty, from `dir` up to (not including) the top.
fn prune_empty_parents(root: &Root, dir: &Path) {
    let mut at = dir;
    while !at.as_os_str().is_empty() {
        let (parent, name) = split_path(at);
        let removed = root
            .open_dir(parent)
            .and_then(|parent| parent.remove(name, true));
        // Not empty (or gone, or in the way): the directories above it are not empty either.
        if removed.is_err() || name.as_bytes().is_empty() {
            break;
        }
        at = parent;
    }
}
