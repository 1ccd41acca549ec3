//! Deciding each path of a merge, merging the text of files both sides changed with
//! `git merge-file`, and reading the blobs that go into the target (in their checkout form:
//! the path's smudge filters and line endings applied, as `git checkout` would write them).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use arbor_protocol::text::truncate_middle;

use arbor_tools::beneath::Root;

use super::{Action, Change, Entry, MergeSpec, SYMLINK, Strategy};
use crate::{Git, Repo, WorktreeError};

/// Most hunks reported for one file, and most bytes of one hunk.
const MAX_HUNKS: usize = 20;
const MAX_HUNK_BYTES: usize = 2048;
/// How far into a file git looks for a NUL byte to call it binary.
const BINARY_PROBE: usize = 8000;
const GITLINK: u32 = 0o160000;

/// What the merge does with one changed path, or why it cannot (the conflict's hunks).
pub(crate) fn decide(
    git: &Git,
    root: &Root,
    target: &Repo,
    spec: &MergeSpec<'_>,
    change: &Change,
    ours: Option<&Entry>,
) -> Result<Result<Action, Vec<String>>, WorktreeError> {
    let (base, theirs) = (change.base.as_ref(), change.theirs.as_ref());
    if let Some(reason) = refused_path(&change.path) {
        return Ok(Err(vec![reason]));
    }
    if ours == theirs {
        return Ok(Ok(Action::Keep));
    }
    let gitlink = |entry: Option<&Entry>| entry.is_some_and(|e| e.mode == GITLINK);
    if gitlink(base) || gitlink(theirs) || gitlink(ours) {
        return Ok(Err(vec![format!(
            "{} changed a submodule, which arbor does not merge: update it by hand",
            spec.theirs_label
        )]));
    }
    if ours == base {
        return Ok(Ok(Action::Take(change.theirs.clone())));
    }
    if let (Some(o), Some(t)) = (ours, theirs)
        && o.is_file()
        && t.is_file()
        && base.is_none_or(Entry::is_file)
    {
        return merge_text(git, root, target, spec, &change.path, base, o, t);
    }
    if let Some(decided) = whole_file(spec.strategy, change) {
        return Ok(Ok(decided));
    }
    let (ours_label, theirs_label) = (spec.ours_label, spec.theirs_label);
    match (ours, theirs) {
        (Some(_), None) => Ok(Err(vec![format!(
            "{theirs_label} deleted this file, which {ours_label}'s checkout changed"
        )])),
        (None, Some(_)) => Ok(Err(vec![format!(
            "{theirs_label} changed this file, which {ours_label}'s checkout deleted"
        )])),
        _ => Ok(Err(vec![format!(
            "both {ours_label}'s checkout and {theirs_label} changed this path, and one of \
             them made it something other than a regular file (a symbolic link)"
        )])),
    }
}

/// What `ours` and `theirs` decide for a file that does not merge as text: one side's whole
/// file.
fn whole_file(strategy: Strategy, change: &Change) -> Option<Action> {
    match strategy {
        Strategy::Ours => Some(Action::Keep),
        Strategy::Theirs => Some(Action::Take(change.theirs.clone())),
        Strategy::Merge | Strategy::Union => None,
    }
}

/// Paths a merge never writes: inside `.git` or the workspace's `.arbor` (which stay
/// read-only to agents), and names git's batch input cannot carry.
fn refused_path(path: &str) -> Option<String> {
    let mut parts = path.split('/');
    if parts.clone().next() == Some(".arbor") {
        return Some(
            "arbor does not merge changes to .arbor, which stays read-only to agents".to_string(),
        );
    }
    if parts.any(|part| part == ".git") {
        return Some("arbor does not merge changes inside .git".to_string());
    }
    if path.contains('\n') {
        return Some("arbor cannot merge a path with a newline in it".to_string());
    }
    None
}

/// A three-way merge of the text of one file.
#[allow(clippy::too_many_arguments)]
fn merge_text(
    git: &Git,
    root: &Root,
    target: &Repo,
    spec: &MergeSpec<'_>,
    path: &str,
    base: Option<&Entry>,
    ours: &Entry,
    theirs: &Entry,
) -> Result<Result<Action, Vec<String>>, WorktreeError> {
    let top = target.toplevel.as_path();
    let ours_text = root.read_bytes(Path::new(path)).map_err(|err| {
        WorktreeError::io(format!("cannot read {}", top.join(path).display()), &err)
    })?;
    let base_text = match base {
        Some(entry) => checkout_form(git, top, path, &entry.sha)?,
        None => Vec::new(),
    };
    let theirs_text = checkout_form(git, top, path, &theirs.sha)?;
    let binary = |text: &[u8]| text[..text.len().min(BINARY_PROBE)].contains(&0);
    if binary(&ours_text) || binary(&base_text) || binary(&theirs_text) {
        match spec.strategy {
            Strategy::Ours => return Ok(Ok(Action::Keep)),
            Strategy::Theirs => return Ok(Ok(Action::Take(Some(theirs.clone())))),
            Strategy::Merge | Strategy::Union => {}
        }
        return Ok(Err(vec![format!(
            "a binary file both {}'s checkout and {} changed",
            spec.ours_label, spec.theirs_label
        )]));
    }
    let dir = TempDir::new(&target.git_dir)?;
    let files = [
        ("ours", &ours_text),
        ("base", &base_text),
        ("theirs", &theirs_text),
    ];
    for (name, text) in files {
        std::fs::write(dir.path.join(name), text)
            .map_err(|err| WorktreeError::io("cannot write a file to merge", &err))?;
    }
    let at = |name: &str| dir.path.join(name).to_string_lossy().into_owned();
    let (o, b, t) = (at("ours"), at("base"), at("theirs"));
    let mut args = vec!["merge-file", "-p"];
    match spec.strategy {
        Strategy::Merge => {}
        Strategy::Ours => args.push("--ours"),
        Strategy::Theirs => args.push("--theirs"),
        Strategy::Union => args.push("--union"),
    }
    args.extend([
        "-L",
        spec.ours_label,
        "-L",
        "base",
        "-L",
        spec.theirs_label,
        &o,
        &b,
        &t,
    ]);
    let out = git.output(top, &args, &[], None)?;
    match out.code {
        0 => {
            let mode = if theirs.mode != base.map_or(ours.mode, |b| b.mode) {
                theirs.mode
            } else {
                ours.mode
            };
            Ok(Ok(Action::Merged(out.stdout, mode)))
        }
        1..=127 => Ok(Err(hunks(&out.stdout))),
        _ => Err(WorktreeError::Git {
            command: format!("merge-file {path}"),
            dir: top.to_path_buf(),
            stderr: out.stderr,
        }),
    }
}

/// The conflict regions of a merged text, each from `<<<<<<<` to `>>>>>>>`, bounded.
fn hunks(merged: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(merged);
    let mut hunks = Vec::new();
    let mut current: Option<String> = None;
    let mut total = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("<<<<<<< ") {
            current = Some(String::new());
        }
        if let Some(hunk) = current.as_mut() {
            hunk.push_str(line);
            if line.starts_with(">>>>>>> ") {
                total += 1;
                if hunks.len() < MAX_HUNKS {
                    hunks.push(truncate_middle(hunk, MAX_HUNK_BYTES));
                }
                current = None;
            }
        }
    }
    if total > MAX_HUNKS {
        hunks.push(format!(
            "… and {} more conflicting hunks",
            total - MAX_HUNKS
        ));
    }
    hunks
}

/// A blob as a checkout writes it at `path` (filters and line endings applied).
fn checkout_form(git: &Git, top: &Path, path: &str, sha: &str) -> Result<Vec<u8>, WorktreeError> {
    let path_arg = format!("--path={path}");
    git.run(top, &["cat-file", "--filters", &path_arg, sha])
}

/// The contents the writes need, by path: every blob taken from the worktree, in one
/// `cat-file --batch` for regular files (checkout form) and one for symbolic links (raw).
pub(crate) fn blobs(
    git: &Git,
    top: &Path,
    actions: &[(String, Option<Entry>, Action)],
) -> Result<HashMap<String, Vec<u8>>, WorktreeError> {
    let mut files = Vec::new();
    let mut links = Vec::new();
    for (path, _, action) in actions {
        if let Action::Take(Some(entry)) = action {
            if entry.mode == SYMLINK {
                links.push((path.as_str(), entry.sha.as_str()));
            } else {
                files.push((path.as_str(), entry.sha.as_str()));
            }
        }
    }
    let mut contents = HashMap::new();
    for (wanted, filters) in [(files, true), (links, false)] {
        if wanted.is_empty() {
            continue;
        }
        let input: String = wanted
            .iter()
            .map(|(path, sha)| {
                if filters {
                    format!("{sha} {path}\n")
                } else {
                    format!("{sha}\n")
                }
            })
            .collect();
        let args: &[&str] = if filters {
            &["cat-file", "--batch", "--filters"]
        } else {
            &["cat-file", "--batch"]
        };
        let out = git.output(top, args, &[], Some(input.as_bytes()))?;
        if out.code != 0 {
            return Err(WorktreeError::Git {
                command: args.join(" "),
                dir: top.to_path_buf(),
                stderr: out.stderr,
            });
        }
        let mut rest = out.stdout.as_slice();
        for (path, sha) in wanted {
            let (body, after) = batch_record(rest).ok_or_else(|| {
                WorktreeError::Refused(format!("git cat-file did not return {sha} ({path})"))
            })?;
            contents.insert(path.to_string(), body.to_vec());
            rest = after;
        }
    }
    Ok(contents)
}

/// One `<id> <type> <size>\n<contents>\n` record of `cat-file --batch`, and what follows it.
fn batch_record(out: &[u8]) -> Option<(&[u8], &[u8])> {
    let newline = out.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&out[..newline]).ok()?;
    let size: usize = header.rsplit(' ').next()?.parse().ok()?;
    let start = newline + 1;
    let body = out.get(start..start + size)?;
    let after = out.get(start + size + 1..).unwrap_or(&[]);
    Some((body, after))
}

/// A temporary directory in the target's git directory (which the agents' commands cannot
/// write, unlike the temp dirs), removed when dropped.
struct TempDir {
    path: std::path::PathBuf,
}

impl TempDir {
    fn new(git_dir: &Path) -> Result<TempDir, WorktreeError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = git_dir.join(format!(
            "arbor-merge-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path)
            .map_err(|err| WorktreeError::io(format!("cannot create {}", path.display()), &err))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
