//! `arbor exec`: start a session, run the tree until it is quiescent, print the root's answer.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arbor_model::ModelClient;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentStatus, SandboxMode};

use crate::args::{ExecArgs, RunOptions, SandboxArg};
use crate::config::FileConfig;
use crate::error::{CliError, EXIT_INTERRUPTED};
use crate::output::{Mode, spawn_printer};
use crate::providers::Plan;

/// Runs `arbor exec` and returns the exit code.
pub async fn exec(home: PathBuf, args: ExecArgs) -> Result<u8, CliError> {
    let prompt = read_prompt(&args.prompt)?;
    let workspace = workspace_of(&args.run)?;
    let file = crate::config::load(&home, &workspace)?;
    let model = build_model(&args.run, &file)?;
    let config = run_config(
        home.clone(),
        &args.run,
        &file,
        terminal_attached(&args.prompt),
    )?;
    let retained = match &file.retention {
        Some(retention) => crate::gc::retain(home.clone(), retention).await?,
        None => None,
    };
    let orch = Orchestrator::new(config, model).await?;
    let hint = crate::hint::resume_continue(&home, &args.run, &crate::hint::session_name(&orch));
    let start = Start::Prompt(&prompt);
    let code = run_root(
        &orch,
        start,
        mode_of(&args.run),
        args.no_wait_children,
        &hint,
    )
    .await;
    // Reported last: the first line on stderr names the session.
    if let Some(note) = retained {
        eprintln!("{note}");
    }
    code
}

/// The root's prompt: the argument, or stdin for `-`; an empty one is refused.
pub fn read_prompt(prompt: &str) -> Result<String, CliError> {
    let text = if prompt == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|err| {
            CliError::usage(format!("could not read the prompt from stdin: {err}"))
        })?;
        text
    } else {
        prompt.to_string()
    };
    if text.trim().is_empty() {
        return Err(CliError::usage(
            "the prompt is empty: give the root agent a task",
        ));
    }
    Ok(text)
}

/// Output mode the options ask for.
pub fn mode_of(run: &RunOptions) -> Mode {
    if run.json { Mode::Json } else { Mode::Human }
}

/// The console side of a run: approval prompts at the terminal and the event printer.
pub struct Console {
    stop_printer: tokio::sync::oneshot::Sender<()>,
    printer: tokio::task::JoinHandle<()>,
    signals: crate::signals::Signals,
}

impl Console {
    /// Starts the approval prompter (when a terminal answers) and the event printer.
    pub fn attach(orch: &Orchestrator, mode: Mode) -> Self {
        // Before anything runs: a Ctrl-C right after the first event must interrupt the tree,
        // not kill the process.
        let signals = crate::signals::Signals::listen();
        let approvals = crate::output::Approvals {
            prompting: crate::prompt::start(orch),
            wait: orch.approval_wait(),
        };
        let (stop_printer, printer) = spawn_printer(
            mode,
            orch.subscribe(),
            orch.log().clone(),
            sandbox_notices(orch),
            approvals,
        );
        Self {
            stop_printer,
            printer,
            signals,
        }
    }

    /// Waits for `work` or the first Ctrl-C / SIGTERM (which interrupts every running turn and
    /// waits for them to persist), then reports the end, shuts the session down and prints
    /// every event left. True when interrupted.
    pub async fn run_until(mut self, orch: &Orchestrator, work: impl Future<Output = ()>) -> bool {
        let interrupted = tokio::select! {
            () = work => false,
            () = self.signals.first() => true,
        };
        if interrupted {
            orch.interrupt_all("user_interrupt");
            orch.wait_quiescent().await;
        }
        orch.complete().await;
        self.close(orch).await;
        interrupted
    }

    /// Shuts the session down and prints every event left.
    pub async fn close(self, orch: &Orchestrator) {
        orch.shutdown("shutdown").await;
        let _ = self.stop_printer.send(());
        let _ = self.printer.await;
    }
}

/// What a run of the root starts with.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// The root gets this prompt.
    Prompt(&'a str),
    /// The turns the last run left interrupted run again; the root gets the prompt, if any.
    Continue(Option<&'a str>),
}

/// Starts the run (see [`Start`]), runs the tree until it is quiescent (or Ctrl-C: `hint` is
/// the command that continues it), shuts down and prints the root's answer. Returns the exit
/// code.
pub async fn run_root(
    orch: &Orchestrator,
    start: Start<'_>,
    mode: Mode,
    no_wait_children: bool,
    hint: &str,
) -> Result<u8, CliError> {
    let console = Console::attach(orch, mode);
    let (prompt, continued) = match start {
        Start::Prompt(prompt) => (Some(prompt), None),
        Start::Continue(prompt) => (
            prompt,
            Some(orch.continue_interrupted(prompt.is_some()).await),
        ),
    };
    if let Some(prompt) = prompt
        && let Err(err) = orch.start(prompt).await
    {
        console.close(orch).await;
        return Err(err.into());
    }
    let interrupted = console.run_until(orch, drive(orch, no_wait_children)).await;
    if continued.is_some_and(|paths| paths.is_empty()) {
        eprintln!("no turn of this session was left interrupted");
    }
    report_budget(orch).await;
    if let Some(failure) = orch.failure() {
        return Err(CliError::failed(failure));
    }
    if interrupted {
        eprintln!("interrupted: state saved; continue with `{hint}`");
        return Ok(EXIT_INTERRUPTED);
    }
    if mode == Mode::Human
        && let Some(answer) = orch.root_last_message().await
    {
        println!("{}", crate::output::answer(&answer));
    }
    Ok(match orch.root_status().await {
        AgentStatus::Completed(_) => 0,
        status => {
            eprintln!("root: {status}");
            1
        }
    })
}

/// Tells the user which agents a spent token budget kept from starting a turn.
pub async fn report_budget(orch: &Orchestrator) {
    let (used, stopped) = orch.usage_report().await;
    if !stopped.is_empty() {
        let paths: Vec<&str> = stopped.iter().map(|p| p.as_str()).collect();
        eprintln!(
            "token budget reached after {} tokens; no new turn started for: {}",
            used.input_tokens + used.output_tokens,
            paths.join(", ")
        );
    }
}

async fn drive(orch: &Orchestrator, no_wait_children: bool) {
    if no_wait_children {
        orch.wait_root_idle().await;
        orch.stop_children("parent_exit");
    }
    orch.wait_quiescent().await;
}

/// Whether a human at a terminal can answer approval requests: stdin is a terminal and does
/// not carry the prompt (`-`).
pub fn terminal_attached(prompt: &str) -> bool {
    prompt != "-" && std::io::stdin().is_terminal()
}

/// What the user is told at session start when commands run without a sandbox.
pub fn sandbox_notices(orch: &Orchestrator) -> Vec<String> {
    let status = orch.sandbox_status();
    if status.enforced {
        return Vec::new();
    }
    vec![format!(
        "warning: commands run without a sandbox (sandbox: {}): {}",
        status.label,
        status.notes.join("; ")
    )]
}

/// The model client the options and config ask for: every provider of the run behind one
/// router. Every problem (no script, no key, no model name, a bad URL, a fallback or a role's
/// model on an unknown provider) is reported here, before any agent starts.
pub fn build_model(run: &RunOptions, file: &FileConfig) -> Result<Arc<dyn ModelClient>, CliError> {
    if run.provider.is_none()
        && file.provider.is_none()
        && run.script.is_none()
        && run.model.is_none()
        && file.model.is_none()
    {
        return Err(CliError::usage(
            "no model configured: pass --script FILE to use the scripted model, or --provider openai|chat|anthropic with --model NAME (see docs/models.md)",
        ));
    }
    Plan::new(run, file)?.build(run, file)
}

/// The run configuration the options describe.
/// `terminal`: a human at a terminal answers approval requests (see [`terminal_attached`]).
pub fn run_config(
    home: PathBuf,
    run: &RunOptions,
    file: &FileConfig,
    terminal: bool,
) -> Result<RunConfig, CliError> {
    let cwd = workspace_of(run)?;
    let mut config = RunConfig::new(home, cwd);
    let plan = Plan::new(run, file)?;
    if let Some(model) = plan.model() {
        config.model = model.to_string();
    }
    check_model_settings(file)?;
    config.reasoning_effort = file.reasoning_effort.clone();
    config.max_output_tokens = file.max_output_tokens;
    config.model_context_window = file.model_context_window;
    if let Some(at) = file.compact_at {
        if !(at > 0.0 && at <= 1.0) {
            return Err(CliError::usage(format!(
                "config: compact_at must be a share of the context window above 0 and at most 1 (such as 0.8), not {at}"
            )));
        }
        config.compact_at = at;
    }
    config.role_models = file
        .roles
        .iter()
        .map(|(role, settings)| {
            (
                role.clone(),
                arbor_orchestrator::config::RoleModel {
                    model: settings.model.clone(),
                    reasoning_effort: settings.reasoning_effort.clone(),
                    max_output_tokens: settings.max_output_tokens,
                    model_context_window: settings.model_context_window,
                },
            )
        })
        .collect();
    config.models = file
        .models
        .iter()
        .map(|(name, settings)| {
            (
                name.clone(),
                arbor_orchestrator::config::ModelSettings {
                    max_output_tokens: settings.max_output_tokens,
                    context_window: settings.context_window,
                },
            )
        })
        .collect();
    config.budget_tokens = run.budget_tokens;
    if let Some(text) = &file.worker_isolation {
        config.worker_isolation = arbor_protocol::Isolation::parse(text).ok_or_else(|| {
            CliError::usage(format!(
                "config: `worker_isolation`: {}",
                arbor_protocol::Isolation::unknown(text)
            ))
        })?;
    }
    config.auto_merge = file.auto_merge.unwrap_or(false);
    config.approval_policy = run.approval_policy.into();
    config.reviewer = run.reviewer.into();
    config.approval_terminal = terminal;
    config.approval_wait = match run.approval_wait {
        Some(seconds) => Some(Duration::from_secs(seconds)),
        None if terminal => None,
        None => Some(Duration::ZERO),
    };
    config.sandbox = match run.sandbox {
        SandboxArg::ReadOnly => SandboxMode::ReadOnly,
        SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
    };
    config.shell_environment = Arc::new(file.shell_environment(plan.key_variables())?);
    config.max_depth = run.max_depth;
    config.project_docs = !run.no_project_docs;
    config.mcp_servers = arbor_mcp::servers_from_raw(&file.mcp_servers)
        .map_err(|message| CliError::usage(format!("config: {message}")))?;
    config.max_running = usize::try_from(run.max_running).unwrap_or(usize::MAX);
    config.max_resident = usize::try_from(run.max_resident).unwrap_or(usize::MAX);
    // Every model the configuration and the role files name must be a configured one.
    let roles = arbor_roles::RoleSet::load(&config.home, &config.cwd)
        .map_err(|err| CliError::usage(err.to_string()))?;
    config
        .check_models(&roles, &plan.catalog())
        .map_err(CliError::usage)?;
    Ok(config)
}

/// Refuses model settings no server would take: an unknown reasoning effort, an output limit
/// of 0. The messages are those a role file gets for the same field.
fn check_model_settings(file: &FileConfig) -> Result<(), CliError> {
    let efforts = std::iter::once(("reasoning_effort".to_string(), &file.reasoning_effort)).chain(
        file.roles.iter().map(|(role, s)| {
            (
                format!("roles.{role}.reasoning_effort"),
                &s.reasoning_effort,
            )
        }),
    );
    for (key, effort) in efforts {
        if let Some(effort) = effort {
            arbor_roles::check_effort(effort)
                .map_err(|message| CliError::usage(format!("config: `{key}`: {message}")))?;
        }
    }
    let limits = std::iter::once(("max_output_tokens".to_string(), file.max_output_tokens))
        .chain(file.roles.iter().map(|(role, s)| {
            (
                format!("roles.{role}.max_output_tokens"),
                s.max_output_tokens,
            )
        }))
        .chain(file.models.iter().map(|(model, s)| {
            (
                format!("models.{model}.max_output_tokens"),
                s.max_output_tokens,
            )
        }));
    for (key, limit) in limits {
        if limit == Some(0) {
            return Err(CliError::usage(format!(
                "config: `{key}` must be at least 1"
            )));
        }
    }
    Ok(())
}

/// The workspace the options name (the current directory by default), canonical.
pub fn workspace_of(run: &RunOptions) -> Result<PathBuf, CliError> {
    let cwd = match &run.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|err| CliError::usage(format!("cannot read the current directory: {err}")))?,
    };
    canonical_dir(&cwd)
}

fn canonical_dir(dir: &Path) -> Result<PathBuf, CliError> {
    let canonical = dir
        .canonicalize()
        .map_err(|err| CliError::usage(format!("--cwd {}: {err}", dir.display())))?;
    if !canonical.is_dir() {
        return Err(CliError::usage(format!(
            "--cwd {}: not a directory",
            dir.display()
        )));
    }
    Ok(canonical)
}
