//! `arbor worker --engine restate --listen ADDR`: serves the `Agent` and `Session` objects
//! until SIGINT or SIGTERM. Prints `listening on ADDR` once the address is bound. With
//! `--provider`, `--model` or `--base-url` it builds the HTTP model once, as `arbor exec` does
//! (the same options and config.toml, the key from this process's environment), and serves
//! sessions without a script with it; without them it serves scripted sessions only.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arbor_model::ModelClient;
use arbor_restate::Worker;
use clap::{Args, FromArgMatches};

use crate::args::{EngineKind, Provider, RunOptions, WorkerArgs};
use crate::error::CliError;

pub fn worker(home: &Path, args: &WorkerArgs) -> Result<u8, CliError> {
    if args.engine != EngineKind::Restate {
        return Err(CliError::usage(
            "arbor worker serves the Restate engine: pass --engine restate",
        ));
    }
    let model = http_model(home, args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::failed(format!("cannot start the runtime: {err}")))?;
    runtime.block_on(async {
        let mut worker = Worker::new(args.step_log.as_deref())
            .map_err(|err| CliError::failed(err.to_string()))?;
        if let Some(model) = model {
            worker = worker.with_model(model);
        }
        let worker = Arc::new(worker);
        let listener = arbor_restate::worker::bind(args.listen)
            .map_err(|err| CliError::failed(err.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|err| CliError::failed(format!("cannot read the bound address: {err}")))?;
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on {addr}");
            let _ = out.flush();
        }
        arbor_restate::worker::serve(listener, worker, stop_signal()).await;
        Ok(0)
    })
}

/// The HTTP model the provider options ask for, built by `arbor exec`'s `build_model` from
/// them and the config (the home's, and the current directory's when trusted); `None`
/// without provider options.
fn http_model(home: &Path, args: &WorkerArgs) -> Result<Option<Arc<dyn ModelClient>>, CliError> {
    if args.provider.is_none() && args.model.is_none() && args.base_url.is_none() {
        return Ok(None);
    }
    let script = || {
        CliError::usage(
            "arbor worker serves scripted sessions without a provider (a session's script \
             travels with it): pass --provider openai|chat|anthropic for an HTTP model",
        )
    };
    if args.provider == Some(Provider::Script) {
        return Err(script());
    }
    let matches = RunOptions::augment_args(clap::Command::new("worker"))
        .try_get_matches_from(["worker"])
        .map_err(|err| CliError::failed(format!("cannot build the run options: {err}")))?;
    let mut run = RunOptions::from_arg_matches(&matches)
        .map_err(|err| CliError::failed(format!("cannot build the run options: {err}")))?;
    run.provider = args.provider;
    run.model = args.model.clone();
    run.base_url = args.base_url.clone();
    let workspace = crate::exec::workspace_of(&run)?;
    let file = crate::config::load(home, &workspace)?;
    if run.provider.is_none() && file.provider.as_deref() == Some("script") {
        return Err(script());
    }
    crate::exec::build_model(&run, &file).map(Some)
}

/// SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
