//! Commands on an existing session: `resume`, `send`, `followup`, `interrupt`, `close`. They
//! work whether or not another process drives the session.

use std::path::PathBuf;
use std::sync::Arc;

use arbor_model::{BoxFuture, ModelClient, ModelError, ModelEvents, ModelRequest, ModelResponse};
use arbor_orchestrator::{Lease, Orchestrator, send_external};
use arbor_protocol::{AgentStatus, MailKind};

use crate::args::{FollowupArgs, ResumeArgs};
use crate::error::{CliError, EXIT_INTERRUPTED, external};
use crate::exec::{
    Console, Start, build_model, mode_of, read_prompt, run_config, run_root, terminal_attached,
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

pub async fn resume(home: PathBuf, args: ResumeArgs) -> Result<u8, CliError> {
    crate::store::open_store(&home)?;
    let mut words = args.words.iter();
    let session = if args.last {
        arbor_agent_graph::LAST_SESSION.to_string()
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
    let runs = prompt.is_some() || args.continue_interrupted;
    let file = crate::config::load(&home, &workspace_of(&args.run)?)?;
    let model: Arc<dyn ModelClient> = if runs {
        build_model(&args.run, &file)?
    } else {
        Arc::new(NoModel)
    };
    let terminal = runs && terminal_for_resume(&args.words);
    let config = run_config(home.clone(), &args.run, &file, terminal)?;
    let (orch, info) = Orchestrator::resume(config, model, &session).await?;
    for notice in &info.notices {
        eprintln!("notice: {notice}");
    }
    let hint = crate::hint::resume_continue(&home, &args.run, &crate::hint::session_name(&orch));
    if !runs {
        let label = crate::output::session_label(orch.session_id(), orch.handle());
        eprintln!(
            "session: {label}, {}",
            arbor_protocol::text::count(info.agents, "agent", "agents")
        );
        let interrupted = orch
            .agents()
            .await
            .into_iter()
            .filter(|agent| !agent.closed && matches!(agent.status, AgentStatus::Interrupted(_)))
            .count();
        if interrupted > 0 {
            let turns = arbor_protocol::text::count(interrupted, "turn was", "turns were");
            eprintln!("{turns} left interrupted; `{hint}` runs them again");
        }
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
        let view = arbor_orchestrator::SessionView::open(&home, &tree.session)?;
        crate::read::print_tree(&home, &view, &tree)?;
        return Ok(0);
    }
    // Turns the last run still owed (spawned or followed-up children that never started)
    // are granted first, within the running cap (with --continue, in the same step as the
    // interrupted ones).
    if !args.continue_interrupted {
        orch.finish_owed();
    }
    let start = match &prompt {
        Some(prompt) if !args.continue_interrupted => Start::Prompt(prompt),
        prompt => Start::Continue(prompt.as_deref()),
    };
    run_root(&orch, start, mode_of(&args.run), false, &hint).await
}

pub async fn followup(home: PathBuf, args: FollowupArgs) -> Result<u8, CliError> {
    crate::store::open_store(&home)?;
    let root = {
        let store = crate::store::open_store(&home)?;
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
    let mut config = run_config(home.clone(), &args.run, &file, terminal_attached(""))?;
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
        let hint =
            crate::hint::resume_continue(&home, &args.run, &crate::hint::session_name(&orch));
        eprintln!("interrupted: state saved; continue with `{hint}`");
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
