//! The flags of `arbor diff` and `arbor merge`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id (a closed agent's kept worktree too).
    pub target: String,
    /// Only this file or directory (relative to the agent's cwd).
    pub path: Option<String>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id (a closed agent's kept worktree too).
    pub target: String,
    /// The checkout to merge into (default: the one the agent forked from).
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
    /// How conflicting hunks are resolved.
    #[arg(long, value_enum, default_value = "merge")]
    pub strategy: StrategyArg,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--strategy` of `arbor merge`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StrategyArg {
    /// Conflicts are reported and nothing is written.
    Merge,
    /// The target checkout's side wins conflicting hunks.
    Ours,
    /// The agent's side wins conflicting hunks.
    Theirs,
    /// Both sides' lines are kept.
    Union,
}
