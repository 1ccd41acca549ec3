//! `arbor send`, `arbor close` and `arbor interrupt` on either engine: one piece of code over
//! the orchestrator's engine seam (`arbor_orchestrator::engine`), the local engine of the home
//! or the Restate engine at `--restate-url`. A refusal exits 2, an engine that failed exits 1.

use std::path::Path;

use arbor_orchestrator::engine::{Engine, Local};
use arbor_protocol::{AgentStatus, MailKind};

use crate::args::{EngineArgs, EngineKind, SendArgs, TargetArgs};
use crate::error::CliError;
use crate::restate::Restate;

fn block_on<T>(work: impl Future<Output = Result<T, CliError>>) -> Result<T, CliError> {
    arbor_orchestrator::session_runtime()
        .map_err(|err| CliError::failed(format!("cannot start the runtime: {err}")))?
        .block_on(work)
}

/// Runs `work` against the engine `engine` names.
fn with_engine<T>(
    home: &Path,
    engine: &EngineArgs,
    local: impl AsyncFnOnce(&Local) -> Result<T, CliError>,
    restate: impl AsyncFnOnce(&Restate) -> Result<T, CliError>,
) -> Result<T, CliError> {
    match engine.engine {
        EngineKind::Restate => {
            let restate_engine = Restate::new(&engine.url()).map_err(CliError::from)?;
            block_on(restate(&restate_engine))
        }
        EngineKind::Local => {
            crate::store::open_store(home)?;
            let local_engine = Local {
                home: home.to_path_buf(),
            };
            block_on(local(&local_engine))
        }
    }
}

async fn send_with(engine: &impl Engine, args: &SendArgs) -> Result<u8, CliError> {
    let id = engine
        .deliver(
            &args.session,
            &args.target,
            MailKind::Message,
            &args.message,
        )
        .await
        .map_err(CliError::from)?;
    println!("{id}");
    Ok(0)
}

/// `arbor send SESSION TARGET MESSAGE`: queues mail and prints its id.
pub fn send(home: &Path, args: &SendArgs) -> Result<u8, CliError> {
    with_engine(
        home,
        &args.engine,
        async |local| send_with(local, args).await,
        async |restate| send_with(restate, args).await,
    )
}

async fn act_with(engine: &impl Engine, args: &TargetArgs, close: bool) -> Result<u8, CliError> {
    let previous = if close {
        engine.close(&args.session, &args.target).await
    } else {
        engine.interrupt(&args.session, &args.target).await
    }
    .map_err(CliError::from)?;
    if args.json {
        println!("{}", serde_json::json!({ "previous_status": previous }));
    } else {
        println!("{}", acted(&args.target, &previous, close));
    }
    Ok(0)
}

/// What a close or an interrupt did, in words.
fn acted(target: &str, previous: &AgentStatus, close: bool) -> String {
    match (close, previous.is_active()) {
        (true, true) => format!("closed {target}: its turn ({previous}) is stopped"),
        (true, false) => format!("closed {target} (it was {previous})"),
        (false, true) => {
            format!("interrupted {target}: its turn ({previous}) is stopped; it stays available")
        }
        (false, false) => format!("{target} had no turn to interrupt (it is {previous})"),
    }
}

/// `arbor interrupt SESSION TARGET`: says what it did (`--json`: `{"previous_status": …}`).
pub fn interrupt(home: &Path, args: &TargetArgs) -> Result<u8, CliError> {
    with_engine(
        home,
        &args.engine,
        async |local| act_with(local, args, false).await,
        async |restate| act_with(restate, args, false).await,
    )
}

/// `arbor close SESSION TARGET`: says what it did (`--json`: `{"previous_status": …}`). A live local driver releases
/// the closed agent's worktrees itself; a stopped local session's are released here.
pub fn close(home: &Path, args: &TargetArgs) -> Result<u8, CliError> {
    with_engine(
        home,
        &args.engine,
        async |local| {
            let code = act_with(local, args, true).await?;
            crate::worktrees::after_close(home, &args.session, &args.target)?;
            Ok(code)
        },
        async |restate| act_with(restate, args, true).await,
    )
}
