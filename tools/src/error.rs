//! The tools crate's one error: `exec_command` arguments refused, a patch not applied or
//! malformed, a command policy that did not load, a sandbox that could not be set up. The
//! `Display` texts of the argument and patch variants are the tool output the model reads.

use std::io;
use std::path::PathBuf;

/// Why a tool call, the policy or the sandbox failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    // `exec_command` arguments refused before anything ran.
    #[error("invalid exec_command arguments: {0}")]
    ExecArgs(#[from] serde_json::Error),
    #[error("cmd must not be empty")]
    EmptyCommand,
    #[error("timeout_ms must be at least 1")]
    TimeoutZero,
    #[error("timeout_ms must be at most {max}")]
    TimeoutTooLarge { max: u64 },
    // A patch not (fully) applied: every failure before the write phase leaves all files
    // untouched; a write-phase failure names the file it stopped at.
    #[error("apply_patch: invalid arguments: {0}")]
    PatchArgs(serde_json::Error),
    #[error("apply_patch: absolute paths are not allowed: {path}")]
    AbsolutePath { path: String },
    #[error("apply_patch: path escapes the working directory: {path}")]
    EscapesCwd { path: String },
    #[error("apply_patch: not a file path: '{path}'")]
    NotAFilePath { path: String },
    #[error("apply_patch: cannot {verb} {path}: no such file")]
    Missing { verb: &'static str, path: String },
    #[error("apply_patch: cannot {verb} {path}: not a regular file")]
    NotAFile { verb: &'static str, path: String },
    #[error("apply_patch: cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("apply_patch: could not find the line named by @@ in {path}:\n{line}")]
    AnchorNotFound { path: String, line: String },
    #[error("apply_patch: could not find the context in {path}:\n{lines}")]
    ContextNotFound { path: String, lines: String },
    #[error("apply_patch: cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
    #[error("apply_patch: cannot delete {path}: {source}")]
    Remove { path: String, source: io::Error },
    #[error("apply_patch: the sandbox is read-only: this agent cannot change files")]
    ReadOnly,
    #[error("apply_patch: {path} is inside {entry}, which stays read-only")]
    Protected { path: String, entry: &'static str },
    #[error("apply_patch: {path} resolves outside the workspace")]
    OutsideWorkspace { path: String },
    #[error(
        "apply_patch: {path} goes through a symbolic link, which apply_patch does not follow \
         in the sandbox; patch the file at its real path"
    )]
    ThroughLink { path: String },
    // A malformed patch; line numbers count from 1 in the text the model sent.
    #[error("apply_patch: invalid patch: line {line}: expected '*** Begin Patch'")]
    MissingBegin { line: usize },
    #[error("apply_patch: invalid patch: line {line}: expected '*** End Patch' as the last line")]
    MissingEnd { line: usize },
    #[error(
        "apply_patch: invalid patch: line {line}: expected '*** Add File: <path>', \
         '*** Update File: <path>' or '*** Delete File: <path>', found '{found}'"
    )]
    ExpectedFileOp { line: usize, found: String },
    #[error("apply_patch: invalid patch: line {line}: '{header}' needs a path")]
    MissingPath { line: usize, header: &'static str },
    #[error(
        "apply_patch: invalid patch: line {line}: every line of added file {path} must start \
         with '+', found '{found}'"
    )]
    BadAddLine {
        line: usize,
        path: String,
        found: String,
    },
    #[error(
        "apply_patch: invalid patch: line {line}: a hunk line of {path} must start with ' ', \
         '-' or '+' (or be '@@' or '*** End of File'), found '{found}'"
    )]
    BadHunkLine {
        line: usize,
        path: String,
        found: String,
    },
    #[error("apply_patch: invalid patch: line {line}: empty hunk in {path}")]
    EmptyHunk { line: usize, path: String },
    #[error("apply_patch: invalid patch: line {line}: update of {path} has no hunks")]
    EmptyUpdate { line: usize, path: String },
    #[error("apply_patch: invalid patch: line {line}: the patch changes no files")]
    NoChanges { line: usize },
    // A command policy that did not load.
    #[error("rules dir {}: cannot read: {source}", .path.display())]
    RulesDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("rules file {}: cannot read: {source}", .path.display())]
    RulesRead {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("rules file {}: invalid toml: {message}", .path.display())]
    RulesSyntax { path: PathBuf, message: String },
    /// A problem with the file as a whole (a top-level key other than `rule`).
    #[error("rules file {}: {message}", .path.display())]
    RulesFile { path: PathBuf, message: String },
    /// A problem with one rule: a field, or an example that disagrees.
    #[error("rules file {}: rule {index}: {message}", .path.display())]
    Rule {
        path: PathBuf,
        index: usize,
        message: String,
    },
    // A sandbox that could not be set up for a command (reported as a command that could not
    // start).
    #[error("landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("landlock: cannot open {}: {source}", .path.display())]
    LandlockOpen {
        path: PathBuf,
        #[source]
        source: landlock::PathFdError,
    },
    #[error("landlock: cannot list {}: {source}", .path.display())]
    LandlockList {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("landlock: the kernel returned no ruleset")]
    NoRuleset,
    #[error("sandbox: cannot prepare the read-only mounts: {0}")]
    Mounts(#[source] io::Error),
}
