//! The command line, as `cli.md` fixes it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod engine;
mod mcp;
mod worktrees;
pub use engine::{EngineArgs, EngineCommand, EngineCommandArgs, EngineKind, UpArgs, WorkerArgs};
pub use mcp::{McpArgs, McpCommand, McpListArgs};
pub use worktrees::{DiffArgs, MergeArgs, StrategyArg};

/// arbor runs a tree of LLM coding agents on your code.
#[derive(Debug, Parser)]
#[command(name = "arbor", version, about, propagate_version = true)]
pub struct Cli {
    /// Where arbor keeps its state (default: $ARBOR_HOME, else ~/.arbor).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Without a command on a terminal, `arbor` opens the terminal UI (`arbor ui`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a new session: the root agent gets PROMPT (or stdin with `-`) and the tree runs
    /// until it is quiescent. Prints the root's last answer.
    Exec(ExecArgs),
    /// Restore a session's tree (identities only, no model call); with PROMPT, run the root
    /// with it like `exec`, otherwise print the tree.
    Resume(ResumeArgs),
    /// Queue mail from /root to TARGET without waking it; prints the mail id.
    Send(SendArgs),
    /// Wake TARGET with a new task. Hands it to the driving process if there is one; otherwise
    /// revives TARGET, runs until quiescent and prints its answer.
    Followup(FollowupArgs),
    /// Stop TARGET's running turn.
    Interrupt(TargetArgs),
    /// Close TARGET: its edge is closed and it and its descendants stop.
    Close(TargetArgs),
    /// Check the environment (config, roles, rules, git, the sandbox, MCP servers, the model
    /// server) and the store and rollouts against the session logs; --rebuild rebuilds the
    /// store from the logs.
    Doctor(DoctorArgs),
    /// Show a session's spawn tree.
    Tree(TreeArgs),
    /// List a session's agents.
    Agents(ReadArgs),
    /// List sessions, newest first.
    Sessions(JsonArgs),
    /// Show an agent's rollout as readable text (default: /root).
    Log(LogArgs),
    /// Turn a Restate tree into a local session (`--to-local`) that `arbor resume` continues.
    Export(ExportArgs),
    /// Show mail addressed to TARGET that it has not consumed yet.
    Mail(MailArgs),
    /// List every approval request of a session and its decision.
    Approvals(ReadArgs),
    /// Approve a pending request; after a denial, let its identical retry through once.
    Approve(AnswerArgs),
    /// Deny a pending request.
    Deny(AnswerArgs),
    /// The interactive terminal UI: the live tree, any agent's transcript, a composer to
    /// talk to any agent, the approval queue. Attaches to SESSION (live or stopped); without
    /// it, asks for a task and starts a new session with the options `exec` takes.
    Ui(UiArgs),
    /// Show what a worktree agent changed since it started, as a unified diff.
    Diff(DiffArgs),
    /// Merge a worktree agent's changes into the checkout it forked from (or --into DIR);
    /// with a conflict nothing is written and the conflicts are listed (exit 1).
    Merge(MergeArgs),
    /// Compact TARGET's history into a new window now: its model summarizes the work so far
    /// and its next request starts from the summary. The session must not be driven.
    Compact(CompactArgs),
    /// Delete sessions no process drives (their logs, rollouts, leases and store rows) and
    /// print what was freed.
    Gc(GcArgs),
    /// Trust a workspace (default: the current directory): its .arbor/config.toml may then
    /// choose the provider, base_url, api_key_env, headers and shell_environment, and its
    /// .arbor/rules may allow commands.
    Trust(TrustArgs),
    /// MCP servers: `arbor mcp list` shows the configured ones, whether they start, and their
    /// tools.
    Mcp(McpArgs),
    /// Serve arbor as an MCP server on stdin and stdout: any MCP client can start a tree,
    /// follow it, answer its approvals and read its answer (see docs/mcp.md).
    McpServer,
    /// Serve arbor's Restate services (the `Agent` and `Session` objects) on ADDR; register
    /// ADDR with the Restate server as a deployment (see docs/engines.md).
    Worker(WorkerArgs),
    /// A local Restate engine for development: `arbor engine up`.
    Engine(EngineCommandArgs),
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The workspace to trust (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunOptions {
    /// Use the scripted model with this script.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Model name for agents that do not name their own.
    #[arg(long)]
    pub model: Option<String>,
    /// Model provider (the session's default; `[providers]` in config.toml names more).
    #[arg(long, value_enum)]
    pub provider: Option<Provider>,
    /// Base URL of the session's provider.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Workspace directory of the root agent (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print JSON Lines events on stdout.
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_enum, default_value = "on-request")]
    pub approval_policy: ApprovalPolicyArg,
    /// Who answers approval requests: you, or the guardian agent.
    #[arg(long, value_enum, default_value = "user")]
    pub reviewer: Reviewer,
    /// Longest wait for an approval, in seconds (default: unlimited with a terminal, 0 without).
    #[arg(long, value_name = "SECONDS")]
    pub approval_wait: Option<u64>,
    #[arg(long, value_enum, default_value = "workspace-write")]
    pub sandbox: SandboxArg,
    /// Deepest spawn depth (the root is 0).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub max_depth: u32,
    /// Child turns running at once; more are queued.
    #[arg(long, default_value_t = 6, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_running: u64,
    /// Loaded child runtimes.
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_resident: u64,
    /// Token budget for the whole tree: once used up, no new turn starts anywhere.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_tokens: Option<u64>,
    /// Leave the AGENTS.md files of the repository out of the agents' instructions.
    #[arg(long)]
    pub no_project_docs: bool,
}

impl RunOptions {
    /// The options of a run that names none: what clap gives `arbor exec -`.
    pub fn defaults() -> Option<Self> {
        match Cli::try_parse_from(["arbor", "exec", "-"]) {
            Ok(Cli {
                command: Some(Command::Exec(ExecArgs { run, .. })),
                ..
            }) => Some(run),
            _ => None,
        }
    }
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task for the root agent; `-` reads it from stdin.
    pub prompt: String,
    #[command(flatten)]
    pub run: RunOptions,
    /// Exit when the root's turn ends, leaving running children interrupted (`parent_exit`).
    #[arg(long)]
    pub no_wait_children: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `--json` is `exec`'s: the terminal UI has none, so its help does not offer it (and `ui.rs`
/// refuses it, saying why).
#[derive(Debug, Args)]
#[command(mut_arg("json", |arg| arg.hide(true)))]
pub struct UiArgs {
    /// The session to attach to: its handle (`amber-otter`), its id or a unique prefix of it.
    pub session: Option<String>,
    /// Attach to the newest session.
    #[arg(long)]
    pub last: bool,
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// SESSION (its handle, its id or a unique prefix of it) then an optional PROMPT (`-`
    /// reads it from stdin); with --last, only the optional PROMPT.
    #[arg(value_name = "SESSION_AND_PROMPT", num_args = 0..=2)]
    pub words: Vec<String>,
    /// Resume the newest session.
    #[arg(long)]
    pub last: bool,
    /// Run again the turns the last run left interrupted (Ctrl-C, a crash, --no-wait-children)
    /// and run the tree until it is quiescent, as `exec` does; with PROMPT, the root gets it.
    #[arg(long = "continue")]
    pub continue_interrupted: bool,
    #[command(flatten)]
    pub run: RunOptions,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id.
    pub target: String,
    pub message: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct FollowupArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id.
    pub target: String,
    pub message: String,
    #[command(flatten)]
    pub run: RunOptions,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `compact` asks one model for one summary: it takes the options that choose the model (and
/// the workspace whose configuration applies), not the ones that shape a run.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id.
    pub target: String,
    /// Use the scripted model with this script.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Model name for agents that do not name their own.
    #[arg(long)]
    pub model: Option<String>,
    /// Model provider.
    #[arg(long, value_enum)]
    pub provider: Option<Provider>,
    /// Base URL of an OpenAI-compatible API.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Workspace whose .arbor/config.toml applies (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print what was done as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Delete sessions idle for longer than this: `30d`, `12h`, `90m`, `2w`, `45s`.
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Keep the N newest sessions whatever their age.
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// List what would be deleted, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TargetArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id.
    pub target: String,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Print `{"previous_status": ...}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Rebuild state.sqlite from the session logs (the old file, damaged or not, is kept
    /// beside it).
    #[arg(long)]
    pub rebuild: bool,
    /// Skip the checks that need the network: the model server, MCP servers over HTTP.
    #[arg(long)]
    pub offline: bool,
    /// The workspace whose configuration, roles and rules to check (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct JsonArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct TreeArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    #[arg(long)]
    pub json: bool,
    /// Include closed branches.
    #[arg(long)]
    pub all: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: TreeFormat,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id (default: /root).
    pub target: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The Restate session's id.
    pub session: String,
    /// Write it as a local session under the arbor home (the only target so far).
    #[arg(long)]
    pub to_local: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// The approval request's id (see `arbor approvals`).
    pub request_id: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct MailArgs {
    /// The session: its handle (`amber-otter`), its id or a unique prefix of it, or --last for
    /// the newest.
    #[arg(allow_hyphen_values = true)]
    pub session: String,
    /// Agent path or thread id (default: /root).
    pub target: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Provider {
    Openai,
    Chat,
    Anthropic,
    Script,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ApprovalPolicyArg {
    Never,
    OnRequest,
    Untrusted,
}

impl From<ApprovalPolicyArg> for arbor_protocol::ApprovalPolicy {
    fn from(arg: ApprovalPolicyArg) -> Self {
        match arg {
            ApprovalPolicyArg::Never => Self::Never,
            ApprovalPolicyArg::OnRequest => Self::OnRequest,
            ApprovalPolicyArg::Untrusted => Self::Untrusted,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Reviewer {
    User,
    Guardian,
}

impl From<Reviewer> for arbor_protocol::ApprovalsReviewer {
    fn from(arg: Reviewer) -> Self {
        match arg {
            Reviewer::User => Self::User,
            Reviewer::Guardian => Self::Guardian,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SandboxArg {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum TreeFormat {
    Text,
    Dot,
    Mermaid,
}
