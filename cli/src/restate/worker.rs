//! `arbor worker --engine restate --listen ADDR`: serves the `Agent` and `Session` objects
//! until SIGINT or SIGTERM. Prints `listening on ADDR` once the address is bound.

use std::io::Write;
use std::sync::Arc;

use arbor_restate::Worker;

use crate::args::{EngineKind, WorkerArgs};
use crate::error::CliError;

pub fn worker(args: &WorkerArgs) -> Result<u8, CliError> {
    if args.engine != EngineKind::Restate {
        return Err(CliError::usage(
            "arbor worker serves the Restate engine: pass --engine restate",
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::failed(format!("cannot start the runtime: {err}")))?;
    runtime.block_on(async {
        let worker = Arc::new(
            Worker::new(args.step_log.as_deref())
                .map_err(|err| CliError::failed(err.to_string()))?,
        );
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
