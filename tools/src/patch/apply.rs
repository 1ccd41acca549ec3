//! Applying a parsed patch: every change is computed in memory first, then written in order.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::parse::{FileOp, Hunk, HunkLine, Patch};
use super::seek::seek;
use super::{ChangeKind, FileChange};
use crate::ToolError;
use crate::beneath::{Kind, Root};

/// Where a patch reads and writes: plain paths under the cwd, or beneath a handle on the
/// workspace, following no symbolic link (`beneath.rs`).
#[derive(Debug)]
pub(crate) enum Files {
    Plain(PathBuf),
    Beneath(Root),
}

impl Files {
    /// Files beneath `cwd`, opened through a handle on it.
    pub(crate) fn beneath(cwd: &Path) -> Result<Self, ToolError> {
        Root::open(cwd)
            .map(Files::Beneath)
            .map_err(|source| ToolError::Read {
                path: cwd.display().to_string(),
                source,
            })
    }

    fn kind(&self, rel: &Path) -> io::Result<Option<Kind>> {
        match self {
            Files::Plain(cwd) => match fs::metadata(cwd.join(rel)) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(err) => Err(err),
                Ok(meta) if meta.is_file() => Ok(Some(Kind::File)),
                Ok(_) => Ok(Some(Kind::Other)),
            },
            Files::Beneath(root) => root.kind(rel),
        }
    }

    fn read(&self, rel: &Path) -> io::Result<String> {
        match self {
            Files::Plain(cwd) => fs::read_to_string(cwd.join(rel)),
            Files::Beneath(root) => root.read(rel),
        }
    }

    fn write(&self, rel: &Path, contents: &str) -> io::Result<()> {
        match self {
            Files::Plain(cwd) => {
                let full = cwd.join(rel);
                if let Some(parent) = full.parent() {
                    fs::create_dir_all(parent)?;
                }
                fs::write(&full, contents)
            }
            Files::Beneath(root) => root.write(rel, contents),
        }
    }

    fn remove(&self, rel: &Path) -> io::Result<()> {
        match self {
            Files::Plain(cwd) => match fs::remove_file(cwd.join(rel)) {
                // Already gone (removed by something else meanwhile): the intended state holds.
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
            Files::Beneath(root) => root.remove(rel),
        }
    }
}

/// One file-system step of the write phase.
#[derive(Debug)]
enum Step {
    Write { path: PathBuf, contents: String },
    Remove { path: PathBuf },
}

/// Computes every operation of `patch` against the files under `cwd` (later operations see the
/// results of earlier ones), then performs the writes. Nothing is written unless every hunk of
/// every file applies. Returns the changes in patch order.
pub(crate) fn apply(files: &Files, patch: &Patch) -> Result<Vec<FileChange>, ToolError> {
    let mut plan = Plan {
        files,
        overlay: HashMap::new(),
        steps: Vec::new(),
        changes: Vec::new(),
    };
    for op in &patch.ops {
        plan.add_op(op)?;
    }
    for step in &plan.steps {
        write_step(files, step)?;
    }
    Ok(plan.changes)
}

struct Plan<'a> {
    files: &'a Files,
    /// Contents as the patch leaves them so far: `None` is deleted.
    overlay: HashMap<PathBuf, Option<String>>,
    steps: Vec<Step>,
    changes: Vec<FileChange>,
}

impl Plan<'_> {
    fn add_op(&mut self, op: &FileOp) -> Result<(), ToolError> {
        match op {
            FileOp::Add { path, contents } => {
                let rel = relative_path(path)?;
                self.write(rel.clone(), contents.clone());
                self.record(ChangeKind::Added, &rel);
            }
            FileOp::Delete { path } => {
                let rel = relative_path(path)?;
                self.read(&rel, "delete")?;
                self.overlay.insert(rel.clone(), None);
                self.steps.push(Step::Remove { path: rel.clone() });
                self.record(ChangeKind::Deleted, &rel);
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let rel = relative_path(path)?;
                let original = self.read(&rel, "update")?;
                let updated = apply_hunks(&original, hunks, &rel)?;
                let target = match move_to {
                    Some(dest) => relative_path(dest)?,
                    None => rel.clone(),
                };
                self.write(target.clone(), updated);
                if target != rel {
                    self.overlay.insert(rel.clone(), None);
                    self.steps.push(Step::Remove { path: rel });
                }
                self.record(ChangeKind::Modified, &target);
            }
        }
        Ok(())
    }

    fn write(&mut self, rel: PathBuf, contents: String) {
        self.overlay.insert(rel.clone(), Some(contents.clone()));
        self.steps.push(Step::Write {
            path: rel,
            contents,
        });
    }

    fn record(&mut self, kind: ChangeKind, rel: &Path) {
        let change = FileChange {
            kind,
            path: display(rel),
        };
        if !self.changes.contains(&change) {
            self.changes.push(change);
        }
    }

    /// The current contents of a file that must exist, as earlier operations left it.
    fn read(&self, rel: &Path, verb: &'static str) -> Result<String, ToolError> {
        let missing = || ToolError::Missing {
            verb,
            path: display(rel),
        };
        if let Some(state) = self.overlay.get(rel) {
            return state.clone().ok_or_else(missing);
        }
        let failed = |source: io::Error| read_error(rel, source);
        match self.files.kind(rel).map_err(failed)? {
            None => return Err(missing()),
            Some(Kind::Other) => {
                return Err(ToolError::NotAFile {
                    verb,
                    path: display(rel),
                });
            }
            Some(Kind::File) => {}
        }
        self.files.read(rel).map_err(failed)
    }
}

/// Applies `hunks` in order to `original`. Each hunk is searched for from where the previous
/// one ended; all replacements are computed before any is made.
fn apply_hunks(original: &str, hunks: &[Hunk], rel: &Path) -> Result<String, ToolError> {
    let crlf = original.contains("\r\n");
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = original
        .split('\n')
        .map(|line| {
            if crlf {
                line.strip_suffix('\r').unwrap_or(line)
            } else {
                line
            }
        })
        .map(str::to_string)
        .collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }

    let mut cursor = 0;
    // (first line, lines removed, lines inserted)
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for hunk in hunks {
        if let Some(anchor) = &hunk.context {
            let (at, _) = seek(&lines, &[anchor.as_str()], cursor, false).ok_or_else(|| {
                ToolError::AnchorNotFound {
                    path: display(rel),
                    line: anchor.clone(),
                }
            })?;
            cursor = at + 1;
        }
        let mut old = hunk.old_lines();
        if old.is_empty() {
            // Pure insertion: after the anchor when there is one, else at the end.
            let at = if hunk.context.is_some() && !hunk.end_of_file {
                cursor
            } else {
                lines.len()
            };
            let new = hunk.new_lines().into_iter().map(str::to_string).collect();
            replacements.push((at, 0, new));
            continue;
        }
        let mut found = seek(&lines, &old, cursor, hunk.end_of_file);
        if found.is_none() && old.last() == Some(&"") {
            // A trailing blank line the file does not have (often the file's final newline).
            old.pop();
            found = seek(&lines, &old, cursor, hunk.end_of_file);
        }
        let Some((at, _)) = found else {
            return Err(ToolError::ContextNotFound {
                path: display(rel),
                lines: hunk.old_lines().join("\n"),
            });
        };
        let new = replacement(hunk, &lines[at..at + old.len()]);
        replacements.push((at, old.len(), new));
        cursor = at + old.len();
    }

    replacements.sort_by_key(|(at, _, _)| *at);
    for (at, removed, inserted) in replacements.into_iter().rev() {
        lines.splice(at..at + removed, inserted);
    }
    let mut text = lines.join(newline);
    if !lines.is_empty() {
        text.push_str(newline);
    }
    Ok(text)
}

/// The lines that replace `matched` (the file's lines the hunk's old lines were found at):
/// context lines keep the file's text, which a loose match may differ from; added lines are
/// the patch's. A hunk line beyond `matched` (a dropped trailing blank) is skipped.
fn replacement(hunk: &Hunk, matched: &[String]) -> Vec<String> {
    let mut file = matched.iter();
    let mut out = Vec::new();
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => out.extend(file.next().cloned()),
            HunkLine::Remove(_) => {
                file.next();
            }
            HunkLine::Add(text) => out.push(text.clone()),
        }
    }
    out
}

/// Checks that `path` is relative and stays inside the cwd; returns it normalised.
pub(super) fn relative_path(path: &str) -> Result<PathBuf, ToolError> {
    let raw = Path::new(path);
    let mut normal = PathBuf::new();
    for component in raw.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !normal.pop() {
                    return Err(ToolError::EscapesCwd {
                        path: path.to_string(),
                    });
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::AbsolutePath {
                    path: path.to_string(),
                });
            }
        }
    }
    if normal.as_os_str().is_empty() {
        return Err(ToolError::NotAFilePath {
            path: path.to_string(),
        });
    }
    Ok(normal)
}

fn write_step(files: &Files, step: &Step) -> Result<(), ToolError> {
    match step {
        Step::Write { path, contents } => {
            files
                .write(path, contents)
                .map_err(|source| match link_error(path, &source) {
                    Some(err) => err,
                    None => ToolError::Write {
                        path: display(path),
                        source,
                    },
                })
        }
        Step::Remove { path } => files.remove(path).map_err(|source| {
            link_error(path, &source).unwrap_or_else(|| ToolError::Remove {
                path: display(path),
                source,
            })
        }),
    }
}

fn read_error(rel: &Path, source: io::Error) -> ToolError {
    link_error(rel, &source).unwrap_or_else(|| ToolError::Read {
        path: display(rel),
        source,
    })
}

/// The error of a path through a symbolic link, which confined patches do not follow.
fn link_error(rel: &Path, source: &io::Error) -> Option<ToolError> {
    (source.raw_os_error() == Some(libc::ELOOP))
        .then(|| ToolError::ThroughLink { path: display(rel) })
}

fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
