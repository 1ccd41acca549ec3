//! `arbor`: the command line of the multi-agent orchestrator. A thin layer over the
//! orchestrator: parse, run, print, map errors to exit codes (see `error.rs`).

mod acts;
mod approvals;
mod args;
mod compact;
mod config;
mod doctor;
mod error;
mod exec;
mod fields;
mod gc;
mod hint;
mod logtext;
mod mcp;
mod memory;
mod output;
mod outside;
mod prompt;
mod providers;
mod read;
mod restate;
mod screen;
mod script;
mod session;
mod signals;
mod store;
mod summary;
mod trust;
mod ui;
mod worktrees;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::error::CliError;

fn main() -> ExitCode {
    memory::one_arena();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    init_tracing();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) if err.is_closed_output() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.code)
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ARBOR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// The home the flag or the environment names, made absolute (a relative `--home` is taken
/// from the current directory; everything stored in it is relative to it).
fn home_dir(flag: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let home = if let Some(home) = flag {
        home
    } else if let Some(home) = std::env::var_os("ARBOR_HOME").filter(|v| !v.is_empty()) {
        PathBuf::from(home)
    } else {
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".arbor"),
            None => {
                return Err(CliError::usage(
                    "cannot find a home for arbor: set ARBOR_HOME or pass --home",
                ));
            }
        }
    };
    if home.is_absolute() {
        return Ok(home);
    }
    let cwd = std::env::current_dir()
        .map_err(|err| CliError::usage(format!("cannot read the current directory: {err}")))?;
    Ok(cwd.join(home))
}

fn run(cli: Cli) -> Result<u8, CliError> {
    let home = home_dir(cli.home)?;
    let runtime = || {
        arbor_orchestrator::session_runtime()
            .map_err(|err| CliError::failed(format!("cannot start the runtime: {err}")))
    };
    let Some(command) = cli.command else {
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal()
            && std::io::stdout().is_terminal()
            && let Ok(Cli {
                command: Some(Command::Ui(args)),
                ..
            }) = Cli::try_parse_from(["arbor", "ui"])
        {
            return ui::ui(home, args);
        }
        return Err(CliError::usage(
            "no command given: see `arbor --help` (on a terminal, `arbor` alone opens the UI)",
        ));
    };
    match command {
        Command::Ui(args) => ui::ui(home, args),
        Command::Exec(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::exec(home, args))
        }
        Command::Exec(args) => runtime()?.block_on(exec::exec(home, args)),
        Command::Resume(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::resume(&args))
        }
        Command::Resume(args) => runtime()?.block_on(session::resume(home, args)),
        Command::Followup(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::followup(&args))
        }
        Command::Followup(args) => runtime()?.block_on(session::followup(home, args)),
        Command::Send(args) => acts::send(&home, &args),
        Command::Compact(args) => runtime()?.block_on(compact::compact(home, args)),
        Command::Gc(args) => gc::gc(&home, &args),
        Command::Interrupt(args) => acts::interrupt(&home, &args),
        Command::Close(args) => acts::close(&home, &args),
        Command::Doctor(args) if args.rebuild => doctor::rebuild(&home),
        Command::Doctor(args) => runtime()?.block_on(doctor::check(&home, &args)),
        Command::Tree(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::tree(&args)).map(|()| 0)
        }
        Command::Tree(args) => read::tree(&home, &args).map(|()| 0),
        Command::Agents(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::agents(&args)).map(|()| 0)
        }
        Command::Agents(args) => read::agents(&home, &args).map(|()| 0),
        Command::Approvals(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::approvals(&args)).map(|()| 0)
        }
        Command::Approve(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::answer(&home, &args, true))
        }
        Command::Deny(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::answer(&home, &args, false))
        }
        Command::Mail(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::mail(&args)).map(|()| 0)
        }
        Command::Sessions(args) => read::sessions(&home, args.json).map(|()| 0),
        Command::Log(args) if args.engine.engine == args::EngineKind::Restate => {
            runtime()?.block_on(restate::log(&args)).map(|()| 0)
        }
        Command::Log(args) => read::log(&home, &args).map(|()| 0),
        Command::Export(args) => runtime()?.block_on(restate::export(&home, &args)),
        Command::Mail(args) => read::mail(&home, &args).map(|()| 0),
        Command::Approvals(args) => approvals::list(&home, &args).map(|()| 0),
        Command::Approve(args) => approvals::answer(&home, &args, true),
        Command::Deny(args) => approvals::answer(&home, &args, false),
        Command::Trust(args) => trust::trust(&home, &args),
        Command::Diff(args) => worktrees::diff(&home, &args),
        Command::Merge(args) => worktrees::merge(&home, &args),
        Command::Mcp(args) => match args.command {
            args::McpCommand::List(args) => runtime()?.block_on(mcp::list(&home, &args)),
        },
        Command::McpServer => runtime()?.block_on(mcp::serve(home)),
        Command::Worker(args) => restate::worker(&home, &args),
        Command::Engine(args) => match args.command {
            args::EngineCommand::Up(args) => restate::up(&home, &args),
        },
    }
}
