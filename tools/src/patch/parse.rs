//! Parsing the Codex patch format into file operations and hunks (no file system access).

use crate::ToolError;

/// A parsed patch: file operations in the order they appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub ops: Vec<FileOp>,
}

/// One `*** Add File` / `*** Delete File` / `*** Update File` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Creates (or replaces) a file with `contents`.
    Add {
        path: String,
        contents: String,
    },
    Delete {
        path: String,
    },
    /// Changes a file by its hunks and optionally moves it to `move_to`.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// One `@@` section of an update.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// `@@ <line>`: a line to find before the hunk's own lines are searched for.
    pub context: Option<String>,
    pub lines: Vec<HunkLine>,
    /// Followed by `*** End of File`: the hunk's lines end the file.
    pub end_of_file: bool,
}

/// One line of a hunk, without its prefix character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` `: kept, and must be there.
    Context(String),
    /// `-`: must be there, is removed.
    Remove(String),
    /// `+`: inserted.
    Add(String),
}

impl Hunk {
    /// The lines the file has now (context and removed lines).
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|line| match line {
                HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// The lines the file will have (context and added lines).
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|line| match line {
                HunkLine::Context(text) | HunkLine::Add(text) => Some(text.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// Parses a patch. Lenient where it is unambiguous: surrounding blank lines and a heredoc
/// wrapper (`<<'EOF'` … `EOF`) are ignored, the first hunk of an update may omit `@@`, a
/// `@@ -1,3 +1,4 @@` range names no line, and a blank line inside a hunk is a blank context
/// line (blank lines at the end of a section are ignored).
pub fn parse_patch(text: &str) -> Result<Patch, ToolError> {
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = patch_bounds(&lines);
    if start >= lines.len() || lines[start].trim() != BEGIN {
        return Err(ToolError::MissingBegin { line: start + 1 });
    }
    if end <= start || lines[end].trim() != END {
        return Err(ToolError::MissingEnd {
            line: end.max(start) + 1,
        });
    }
    let mut parser = Parser {
        lines: &lines,
        at: start + 1,
        end,
    };
    let mut ops = Vec::new();
    while let Some(line) = parser.peek() {
        let header = line.trim();
        if header.is_empty() {
            parser.at += 1;
        } else if let Some(path) = header.strip_prefix(ADD) {
            let path = parser.path(path, ADD)?;
            ops.push(parser.add(path)?);
        } else if let Some(path) = header.strip_prefix(DELETE) {
            let path = parser.path(path, DELETE)?;
            ops.push(FileOp::Delete { path });
        } else if let Some(path) = header.strip_prefix(UPDATE) {
            let line = parser.at + 1;
            let path = parser.path(path, UPDATE)?;
            ops.push(parser.update(path, line)?);
        } else {
            return Err(ToolError::ExpectedFileOp {
                line: parser.at + 1,
                found: excerpt(line),
            });
        }
    }
    if ops.is_empty() {
        return Err(ToolError::NoChanges { line: end + 1 });
    }
    Ok(Patch { ops })
}

/// The indices of the first and last significant lines, inside a heredoc wrapper if any.
fn patch_bounds(lines: &[&str]) -> (usize, usize) {
    let significant = |line: &&str| !line.trim().is_empty();
    let start = lines.iter().position(significant).unwrap_or(lines.len());
    let end = lines.iter().rposition(significant).unwrap_or(0);
    if start < end
        && let Some(rest) = lines[start].trim().strip_prefix("<<")
    {
        let delimiter = rest.trim().trim_matches(|c| c == '\'' || c == '"');
        let inner = &lines[start + 1..end];
        if !delimiter.is_empty()
            && lines[end].trim() == delimiter
            && let (Some(first), Some(last)) = (
                inner.iter().position(significant),
                inner.iter().rposition(significant),
            )
        {
            return (start + 1 + first, start + 1 + last);
        }
    }
    (start, end)
}

struct Parser<'a> {
    lines: &'a [&'a str],
    /// The next line to read.
    at: usize,
    /// The `*** End Patch` line.
    end: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        (self.at < self.end).then(|| self.lines[self.at])
    }

    /// Consumes the header line and returns its path.
    fn path(&mut self, rest: &str, header: &'static str) -> Result<String, ToolError> {
        let path = rest.trim();
        if path.is_empty() {
            return Err(ToolError::MissingPath {
                line: self.at + 1,
                header,
            });
        }
        self.at += 1;
        Ok(path.to_string())
    }

    fn add(&mut self, path: String) -> Result<FileOp, ToolError> {
        let mut body: Vec<&str> = Vec::new();
        let mut blanks = 0;
        while let Some(line) = self.peek() {
            if is_file_header(line) {
                break;
            }
            if let Some(text) = line.strip_prefix('+') {
                body.extend(std::iter::repeat_n("", blanks));
                blanks = 0;
                body.push(text);
            } else if line.trim().is_empty() {
                blanks += 1;
            } else {
                return Err(ToolError::BadAddLine {
                    line: self.at + 1,
                    path,
                    found: excerpt(line),
                });
            }
            self.at += 1;
        }
        let mut contents = body.join("\n");
        if !body.is_empty() {
            contents.push('\n');
        }
        Ok(FileOp::Add { path, contents })
    }

    fn update(&mut self, path: String, header_line: usize) -> Result<FileOp, ToolError> {
        let mut move_to = None;
        if let Some(rest) = self.peek().and_then(|line| line.trim().strip_prefix(MOVE)) {
            move_to = Some(self.path(rest, MOVE)?);
        }
        let mut hunks = Vec::new();
        // The hunk being read and the patch line that opened it.
        let mut current: Option<(Hunk, usize)> = None;
        let mut blanks = 0;
        while let Some(line) = self.peek() {
            let line_no = self.at + 1;
            if is_file_header(line) {
                break;
            }
            let trimmed = line.trim();
            if trimmed == END_OF_FILE {
                let (mut hunk, opened) = current.take().unwrap_or((Hunk::default(), line_no));
                hunk.end_of_file = true;
                finish_hunk(&mut hunks, hunk, opened, &path)?;
                blanks = 0;
            } else if let Some(rest) = line.strip_prefix("@@") {
                if let Some((hunk, opened)) = current.take() {
                    finish_hunk(&mut hunks, hunk, opened, &path)?;
                }
                let hunk = Hunk {
                    context: anchor(rest),
                    ..Hunk::default()
                };
                current = Some((hunk, line_no));
                blanks = 0;
            } else if trimmed.is_empty() {
                blanks += 1;
            } else {
                let mut chars = line.chars();
                let prefix = chars.next();
                let text = chars.as_str().to_string();
                let parsed = match prefix {
                    Some(' ') => HunkLine::Context(text),
                    Some('-') => HunkLine::Remove(text),
                    Some('+') => HunkLine::Add(text),
                    _ => {
                        return Err(ToolError::BadHunkLine {
                            line: line_no,
                            path,
                            found: excerpt(line),
                        });
                    }
                };
                let (hunk, _) = current.get_or_insert_with(|| (Hunk::default(), line_no));
                for _ in 0..blanks {
                    hunk.lines.push(HunkLine::Context(String::new()));
                }
                blanks = 0;
                hunk.lines.push(parsed);
            }
            self.at += 1;
        }
        if let Some((hunk, opened)) = current {
            finish_hunk(&mut hunks, hunk, opened, &path)?;
        }
        if hunks.is_empty() && move_to.is_none() {
            return Err(ToolError::EmptyUpdate {
                line: header_line,
                path,
            });
        }
        Ok(FileOp::Update {
            path,
            move_to,
            hunks,
        })
    }
}

fn finish_hunk(
    hunks: &mut Vec<Hunk>,
    hunk: Hunk,
    opened: usize,
    path: &str,
) -> Result<(), ToolError> {
    if hunk.lines.is_empty() {
        return Err(ToolError::EmptyHunk {
            line: opened,
            path: path.to_string(),
        });
    }
    hunks.push(hunk);
    Ok(())
}

/// The line named after `@@`, if any. A unified-diff range (`-12,7 +12,8 @@`) names none.
fn anchor(rest: &str) -> Option<String> {
    let text = rest.strip_prefix(' ').unwrap_or(rest);
    if text.trim().is_empty() || is_unified_range(text.trim()) {
        return None;
    }
    Some(text.to_string())
}

fn is_unified_range(text: &str) -> bool {
    let is_range = |word: &str, sign: char| {
        word.strip_prefix(sign).is_some_and(|numbers| {
            !numbers.is_empty() && numbers.split(',').all(|n| n.parse::<u64>().is_ok())
        })
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    matches!(words.as_slice(), [old, new, rest @ ..]
        if is_range(old, '-') && is_range(new, '+') && rest.iter().all(|w| *w == "@@"))
}

fn is_file_header(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with(ADD) || line.starts_with(DELETE) || line.starts_with(UPDATE)
}

/// A line as quoted in an error: at most 80 characters.
fn excerpt(line: &str) -> String {
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
