//! `arbor exec --engine restate`: starts the session through the ingress (its settings, the
//! approval policy, reviewer and wait included), prints its events as the session records them
//! (`stream.rs`), then the root's answer. With `--script` the session carries its script;
//! without, it names a model (`--model`, else config.toml's) that the workers' HTTP provider
//! answers for (the provider and its key belong to the workers: `arbor worker --provider`).

use std::path::{Path, PathBuf};

use arbor_protocol::{SandboxMode, ThreadId};
use arbor_restate::Ingress;
use arbor_restate::wire::{SessionConfig, StartRequest};

use crate::args::{ExecArgs, Provider, RunOptions, SandboxArg};
use crate::error::CliError;
use crate::output::Mode;

/// Runs `arbor exec --engine restate` and returns the exit code.
pub async fn exec(home: PathBuf, args: ExecArgs) -> Result<u8, CliError> {
    let prompt = crate::exec::read_prompt(&args.prompt)?;
    let run = &args.run;
    if run.script.is_some()
        && run
            .provider
            .is_some_and(|provider| provider != Provider::Script)
    {
        return Err(CliError::usage(
            "--script is for the scripted model; drop it or use --provider script",
        ));
    }
    let model = match run.script {
        Some(_) => None,
        None => Some(session_model(&home, run)?),
    };
    let script =
        match &run.script {
            Some(path) => {
                // Checked here, so a bad script is a usage error before anything starts. This
                // engine runs no MCP server: no `mcp__` name passes.
                crate::script::load(path, &crate::config::FileConfig::default())?;
                Some(std::fs::read_to_string(path).map_err(|err| {
                    CliError::usage(format!("cannot read {}: {err}", path.display()))
                })?)
            }
            None => None,
        };
    let cwd = match &run.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|err| CliError::usage(format!("cannot read the current directory: {err}")))?,
    };
    let cwd: PathBuf = std::fs::canonicalize(&cwd)
        .map_err(|err| CliError::usage(format!("--cwd {}: {err}", cwd.display())))?;
    let mut config = SessionConfig::new(cwd.display().to_string());
    config.script = script;
    config.model = model;
    config.max_depth = usize::try_from(run.max_depth).unwrap_or(usize::MAX);
    config.sandbox = match run.sandbox {
        SandboxArg::ReadOnly => SandboxMode::ReadOnly,
        SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
    };
    approvals(
        &mut config,
        run,
        crate::exec::terminal_attached(&args.prompt),
    );
    let mode = if run.json { Mode::Json } else { Mode::Human };
    let ingress = Ingress::new(&args.engine.url()).map_err(super::failed)?;
    let session = ThreadId::new().as_string();
    if mode == Mode::Human {
        eprintln!("session: {session}");
    }
    let request = StartRequest { prompt, config };
    ingress
        .start(&session, &request)
        .await
        .map_err(super::failed)?;
    let page =
        super::stream::follow(&ingress, &session, 0, mode, super::stream::Until::Completed).await?;
    Ok(super::stream::finish_run(&page, mode))
}

/// The model a session without a script names: `--model`, else config.toml's `model`. The
/// provider is the workers' (`--base-url` and a key are theirs too).
fn session_model(home: &Path, run: &RunOptions) -> Result<String, CliError> {
    if run.base_url.is_some() {
        return Err(CliError::usage(
            "--base-url is the workers' option with --engine restate: start the workers with \
             `arbor worker --engine restate --provider openai|chat|anthropic --base-url URL`",
        ));
    }
    let workspace = crate::exec::workspace_of(run)?;
    let file = crate::config::load(home, &workspace)?;
    if run.provider == Some(Provider::Script)
        || (run.provider.is_none() && file.provider.as_deref() == Some("script"))
    {
        return Err(CliError::usage(
            "--provider script needs --script FILE (see docs/scripted-model.md)",
        ));
    }
    run.model.clone().or(file.model).ok_or_else(|| {
        CliError::usage(
            "no model configured: pass --script FILE to use the scripted model, or --model NAME \
             for the workers' HTTP provider (start them with --provider openai|chat|anthropic; see \
             docs/engines.md)",
        )
    })
}

/// The approval settings of `run` (behaviour §7): the policy, the reviewer, and how long a
/// request waits for a human: `--approval-wait`, else without limit when a terminal is
/// attached (a person is there to run `arbor approve`) and not at all without one, as on the
/// local engine.
fn approvals(config: &mut SessionConfig, run: &RunOptions, terminal: bool) {
    config.approval_policy = run.approval_policy.into();
    config.reviewer = run.reviewer.into();
    config.approval_wait_ms = match run.approval_wait {
        Some(seconds) => Some(seconds.saturating_mul(1000)),
        None if terminal => None,
        None => Some(0),
    };
}
