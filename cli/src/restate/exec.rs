//! `arbor exec --engine restate`: starts the session through the ingress, prints its events as
//! the session records them (polling its shared `events` handler), then the root's answer.

use std::path::PathBuf;
use std::time::Duration;

use arbor_protocol::{AgentStatus, SandboxMode, ThreadId};
use arbor_restate::Ingress;
use arbor_restate::wire::{SessionConfig, StartRequest};

use crate::args::{ExecArgs, Provider, SandboxArg};
use crate::error::CliError;
use crate::output::{Mode, print};

/// How often the session's events are read while nothing new came.
const POLL: Duration = Duration::from_millis(50);

/// How long the server may be unreachable (restarting) before `exec` gives up.
const OUTAGE: Duration = Duration::from_secs(120);

/// Runs `arbor exec --engine restate` and returns the exit code.
pub async fn exec(args: ExecArgs) -> Result<u8, CliError> {
    let prompt = crate::exec::read_prompt(&args.prompt)?;
    let run = &args.run;
    if run
        .provider
        .is_some_and(|provider| provider != Provider::Script)
        || run.script.is_none()
    {
        return Err(CliError::usage(
            "--engine restate runs the scripted model only so far: pass --script FILE",
        ));
    }
    let script =
        match &run.script {
            Some(path) => {
                // Checked here, so a bad script is a usage error before anything starts.
                arbor_model::ScriptedModel::load(path)
                    .map_err(|err| CliError::usage(err.to_string()))?;
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
    config.max_depth = usize::try_from(run.max_depth).unwrap_or(usize::MAX);
    config.sandbox = match run.sandbox {
        SandboxArg::ReadOnly => SandboxMode::ReadOnly,
        SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
    };
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
    let mut next = 0;
    let mut reached = std::time::Instant::now();
    loop {
        let page = match ingress.events(&session, next).await {
            Ok(page) => {
                reached = std::time::Instant::now();
                page
            }
            // The tree lives in the server: while it restarts, keep asking.
            Err(err) if transient(&err) && reached.elapsed() < OUTAGE => {
                tokio::time::sleep(POLL * 4).await;
                continue;
            }
            Err(err) => return Err(super::failed(err)),
        };
        let fresh = !page.events.is_empty();
        for line in &page.events {
            if mode == Mode::Json
                || !matches!(line.event, arbor_protocol::Event::SessionStarted { .. })
            {
                print(mode, line);
            }
        }
        next = page.next;
        if page.completed {
            if mode == Mode::Human
                && let Some(answer) = &page.final_message
            {
                println!("{answer}");
            }
            return Ok(match page.root_status {
                Some(AgentStatus::Completed(_)) => 0,
                status => {
                    let status = status.map_or_else(|| "unknown".to_string(), |s| s.to_string());
                    eprintln!("root: {status}");
                    1
                }
            });
        }
        if !fresh {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A failure that a restarting server gives: no connection, or an unavailable answer.
fn transient(error: &arbor_restate::RestateError) -> bool {
    match error {
        arbor_restate::RestateError::Unreachable { .. } => true,
        arbor_restate::RestateError::Status { status, .. } => *status >= 500,
        _ => false,
    }
}
