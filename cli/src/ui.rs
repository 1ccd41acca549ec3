//! `arbor ui` (and `arbor` alone on a terminal): the terminal UI of `arbor-tui`, given a
//! launcher that starts or takes over sessions with the options `exec` takes.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arbor_model::ModelClient;
use arbor_orchestrator::Orchestrator;
use arbor_protocol::ThreadId;
use arbor_tui::act::BoxFuture;

use crate::args::{RunOptions, UiArgs};
use crate::config::FileConfig;
use crate::error::CliError;

/// Starts sessions for the UI as `exec` and `followup` would, with one model for the life of
/// the process (a scripted model's cursors go on from one run of the UI to the next).
struct Launch {
    home: PathBuf,
    run: RunOptions,
    file: FileConfig,
    model: OnceLock<Result<Arc<dyn ModelClient>, String>>,
}

impl Launch {
    fn model(&self) -> Result<Arc<dyn ModelClient>, String> {
        self.model
            .get_or_init(|| {
                crate::exec::build_model(&self.run, &self.file).map_err(|err| err.to_string())
            })
            .clone()
    }

    fn config(&self, root_driven: bool) -> Result<arbor_orchestrator::RunConfig, String> {
        // A person answers approvals in the UI: no limit on the wait unless one is given, and
        // no terminal prompt (answers come through the log, as from `arbor approve`).
        let mut config = crate::exec::run_config(self.home.clone(), &self.run, &self.file, true)
            .map_err(|err| err.to_string())?;
        config.approval_terminal = false;
        config.root_driven = root_driven;
        Ok(config)
    }
}

impl arbor_tui::Launcher for Launch {
    fn start(&self) -> BoxFuture<'_, Result<Orchestrator, String>> {
        Box::pin(async move {
            let model = self.model()?;
            let config = self.config(true)?;
            Orchestrator::new(config, model)
                .await
                .map_err(|err| err.to_string())
        })
    }

    fn resume(
        &self,
        session: ThreadId,
        root_driven: bool,
    ) -> BoxFuture<'_, Result<(Orchestrator, Vec<String>), String>> {
        Box::pin(async move {
            let model = self.model()?;
            let config = self.config(root_driven)?;
            let (orch, info) = Orchestrator::resume(config, model, &session.to_string())
                .await
                .map_err(|err| err.to_string())?;
            Ok((orch, info.notices))
        })
    }

    fn budget(&self) -> Option<u64> {
        self.run.budget_tokens
    }
}

/// Runs the UI; returns the exit code.
pub fn ui(home: PathBuf, args: UiArgs) -> Result<u8, CliError> {
    if args.run.json {
        return Err(CliError::usage(
            "--json is for `arbor exec`; the terminal UI has no JSON output",
        ));
    }
    let session = if args.last {
        if args.session.is_some() {
            return Err(CliError::usage("name a session or pass --last, not both"));
        }
        Some(arbor_agent_graph::LAST_SESSION.to_string())
    } else {
        args.session.clone()
    };
    if session.is_some() {
        crate::store::open_store(&home)?;
    }
    let workspace = crate::exec::workspace_of(&args.run)?;
    let file = crate::config::load(&home, &workspace)?;
    let launch = Arc::new(Launch {
        home: home.clone(),
        run: args.run,
        file,
        model: OnceLock::new(),
    });
    let runtime = arbor_orchestrator::session_runtime()
        .map_err(|err| CliError::failed(format!("cannot start the runtime: {err}")))?;
    let ended = arbor_tui::run(&runtime, home.clone(), session.as_deref(), launch.clone())
        .map_err(|err| CliError {
            code: err.code,
            message: err.message,
        })?;
    if let Some(session) = &ended.session {
        // Named by its handle, as every hint names a session.
        let root = arbor_agent_graph::Store::open_read_only(&home)
            .ok()
            .and_then(|store| arbor_orchestrator::find_root(&store, session).ok());
        let name = root
            .as_ref()
            .map_or_else(|| session.clone(), arbor_orchestrator::session_name);
        if ended.interrupted {
            eprintln!(
                "session {name}: running turns were interrupted and saved; `{}` runs them again, `arbor ui {name}` shows them",
                crate::hint::resume_continue(&home, &launch.run, &name)
            );
        } else {
            let label = match &root {
                Some(root) => crate::output::session_label(root.id(), root.meta.handle.as_deref()),
                None => session.clone(),
            };
            eprintln!("session: {label}");
        }
    }
    Ok(0)
}
