//! Commands on an existing session: `resume`, `send`, `followup`, `interrupt`, `close`. They
//! work whether or not another process drives the session.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_model::{BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse};
use arbor_orchestrator::{Lease, Orchestrator, OrchestratorError, send_external};
use arbor_protocol::{AgentStatus, MailKind};

use crate::args::{FollowupArgs, ResumeArgs};
use crate::error::{CliError, EXIT_INTERRUPTED};
use crate::exec::{
    Console, build_model, mode_of, read_prompt, run_config, run_root, terminal_attached,
    workspace_of,
};

/// Whether a terminal can answer approvals in `arbor resume`: its prompt (the last word, when
/// there is one) does not come from stdin.
fn terminal_for_resume(words: &[String]) -> bool {
    terminal_attached(words.last().map_or("", String::as_str))
}

/// The model of a session resumed only to show it: it is never asked anything.
#[derive(Debug)]
struct NoModel;

impl ModelClient for NoModel {
    fn provider(&self) -> &str {
        "none"
    }

    fn respond<'a>(
        &'a self,
        _request: &'a ModelRequest,
        _events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async {
            Err(ModelError::Config(
                "no model configured: pass --script FILE or --provider".to_string(),
            ))
        })
    }
}

pub(crate) fn external(err: OrchestratorError) -> CliError {
    match err {
        OrchestratorError::Refused(message) => CliError::usage(message),
        // What failed underneath a request from outside: the store or the log.
        other @ (OrchestratorError::Store(_) | OrchestratorError::Log(_)) => {
            CliError::failed(other.to_string())
        }
        other => other.into(),
    }
}

/// The newest session's id, for `--last`.
pub fn last_session(home: &Path) -> Result<String, CliError> {
    let store = crate::read::open_store(home)?;
    let newest = store.sessions()?.into_iter().next();
    newest
        .map(|root| root.id().to_string())
        .ok_or_else(|| CliError::usage(format!("no sessions in {}", home.display())))
}

pub async fn resume(home: PathBuf, args: ResumeArgs) -> Result<u8, CliError> {
    crate::read::open_store(&home)?;
    let mut words = args.words.iter();
    let session = if args.last {
        last_session(&home)?
    } else {
        words
            .next()
            .cloned()
            .ok_or_else(|| CliError::usage("name a session to resume, or pass --last"))?
    };
    let prompt = words.next().map(|p| read_prompt(p)).transpose()?;
    if words.next().is_some() {
        return Err(CliError::usage(
            "too many arguments: arbor resume <SESSION | --last> [PROMPT]",
        ));
    }
    let file = crate::config::load(&home, &workspace_of(&args.run)?)?;
    let model: Arc<dyn ModelClient> = match prompt {
        Some(_) => build_model(&args.run, &file)?,
        None => Arc::new(NoModel),
    };
    let terminal = prompt.is_some() && terminal_for_resume(&args.words);
    let config = run_config(home.clone(), &args.run, &file, terminal)?;
    let (orch, info) = Orchestrator::resume(config, model, &session).await?;
    for notice in &info.notices {
        eprintln!("notice: {notice}");
    }
    let Some(prompt) = prompt else {
        eprintln!(
            "session: {} ({})",
            orch.session_id(),
            arbor_protocol::text::count(info.agents, "agent", "agents")
        );
        orch.shutdown("shutdown").await;
        let tree = crate::args::TreeArgs {
            session: orch.session_id().to_string(),
            json: false,
            all: false,
            format: crate::args::TreeFormat::Text,
            engine: crate::args::EngineArgs {
                engine: crate::args::EngineKind::Local,
                restate_url: None,
            },
        };
        crate::read::tree(&home, &tree)?;
        return Ok(0);
    };
    // Turns the last run still owed (spawned or followed-up children that never started)
    // are granted first, within the running cap.
    orch.finish_owed();
    run_root(&orch, &prompt, mode_of(&args.run), false).await
}

pub async fn followup(home: PathBuf, args: FollowupArgs) -> Result<u8, CliError> {
    crate::read::open_store(&home)?;
    let root = {
        let store = crate::read::open_store(&home)?;
        arbor_orchestrator::find_root(&store, &args.session)?
    };
    if let Some(pid) = Lease::holder(&home, root.id()) {
        // The store's tickets block: off the runtime's workers.
        let (at, session, target, message) = (
            home.clone(),
            args.session.clone(),
            args.target.clone(),
            args.message.clone(),
        );
        let sent = tokio::task::spawn_blocking(move || {
            send_external(&at, &session, &target, MailKind::Followup, &message)
        })
        .await
        .map_err(|err| CliError::failed(err.to_string()))?
        .map_err(external)?;
        eprintln!(
            "handed to the process driving session {} (pid {pid})",
            root.id()
        );
        println!("{}", sent.mail.id);
        return Ok(0);
    }
    let file = crate::config::load(&home, &workspace_of(&args.run)?)?;
    let model = build_model(&args.run, &file)?;
    let mut config = run_config(home, &args.run, &file, terminal_attached(""))?;
    config.root_driven = false;
    let (orch, info) = Orchestrator::resume(config, model, &root.id().to_string()).await?;
    for notice in &info.notices {
        eprintln!("notice: {notice}");
    }
    let mode = mode_of(&args.run);
    let console = Console::attach(&orch, mode);
    orch.finish_owed();
    let sent = orch
        .send_from_user(&args.target, MailKind::Followup, &args.message)
        .await;
    let mail = match sent {
        Ok(mail) => mail,
        Err(message) => {
            console.close(&orch).await;
            return Err(CliError::usage(message));
        }
    };
    let interrupted = console.run_until(&orch, orch.wait_quiescent()).await;
    if interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let target = orch.agent(&mail.recipient).await;
    let status = target.map_or(AgentStatus::NotFound, |agent| agent.status);
    match status {
        AgentStatus::Completed(answer) => {
            if mode == crate::output::Mode::Human {
                println!("{}", crate::output::answer(&answer.unwrap_or_default()));
            }
            Ok(0)
        }
        status => {
            eprintln!("{}: {status}", mail.recipient);
            Ok(1)
        }
    }
}
