//! `arbor followup`, `mail` and `resume` with `--engine restate` (`send` is the engine seam's,
//! `acts.rs`). The tree lives in the server, which always drives it: `followup` wakes its target and,
//! unless a run of the root is in progress (then that run carries it on), follows the tree
//! until it is quiescent and prints the target's answer; `resume PROMPT` starts a new run of
//! the root and follows it like `exec`. The session keeps the script it started with: every
//! agent answers from it where it left off.

use std::io::Write;

use arbor_protocol::AgentStatus;
use arbor_restate::Ingress;
use arbor_restate::wire::ResumeReply;

use crate::args::{FollowupArgs, MailArgs, ResumeArgs, RunOptions, TreeFormat};
use crate::error::CliError;
use crate::output::{Mode, out};

use super::stream::{Until, finish_run, follow};

fn ingress(url: &str) -> Result<Ingress, CliError> {
    Ingress::new(url).map_err(super::failed)
}

/// Options that mean nothing to a session whose model and settings were fixed at its start.
fn refuse_run_options(run: &RunOptions) -> Result<(), CliError> {
    if run.script.is_some() || run.provider.is_some() || run.model.is_some() {
        return Err(CliError::usage(
            "--engine restate keeps the script the session started with: leave out --script, \
             --provider and --model",
        ));
    }
    Ok(())
}

/// `arbor followup SESSION TARGET MESSAGE --engine restate`.
pub async fn followup(args: &FollowupArgs) -> Result<u8, CliError> {
    refuse_run_options(&args.run)?;
    let url = args.engine.url();
    let ingress = ingress(&url)?;
    let sent = ingress
        .send(&args.session, &args.target, &args.message, true)
        .await
        .map_err(super::call_failed(&url, &args.session))?
        .map_err(CliError::usage)?;
    if sent.handed {
        eprintln!("handed to the run in progress of session {}", args.session);
        println!("{}", sent.id);
        return Ok(0);
    }
    let mode = mode_of(&args.run);
    if mode == Mode::Human {
        eprintln!("session: {}", args.session);
    }
    follow(&ingress, &args.session, sent.from, mode, Until::Quiescent).await?;
    let rows = super::read::rows(&url, &args.session).await?;
    let status = rows
        .iter()
        .find(|row| row.path == sent.recipient)
        .map_or(AgentStatus::NotFound, |row| row.status.clone());
    match status {
        AgentStatus::Completed(answer) => {
            if mode == Mode::Human {
                println!("{}", crate::output::answer(&answer.unwrap_or_default()));
            }
            Ok(0)
        }
        status => {
            eprintln!("{}: {status}", sent.recipient);
            Ok(1)
        }
    }
}

fn mode_of(run: &RunOptions) -> Mode {
    if run.json { Mode::Json } else { Mode::Human }
}

/// `arbor mail SESSION [TARGET] --engine restate [--json]`: the mail TARGET (default `/root`)
/// has not taken yet, in arrival order.
pub async fn mail(args: &MailArgs) -> Result<(), CliError> {
    let url = args.engine.url();
    let target = args.target.as_deref().unwrap_or("/root");
    let inbox = ingress(&url)?
        .inbox(&args.session, target)
        .await
        .map_err(super::call_failed(&url, &args.session))?
        .map_err(CliError::usage)?;
    crate::read::print_mail(&inbox.path, &inbox.mail, args.json)
}

/// `arbor resume SESSION [PROMPT] --engine restate`: without a prompt, the tree; with one, a
/// new run of the root, followed like `exec`.
pub async fn resume(args: &ResumeArgs) -> Result<u8, CliError> {
    if args.last {
        return Err(CliError::usage(
            "--last needs the local engine's sessions: name the session to resume",
        ));
    }
    let mut words = args.words.iter();
    let session = words
        .next()
        .cloned()
        .ok_or_else(|| CliError::usage("name a session to resume"))?;
    let prompt = words
        .next()
        .map(|p| crate::exec::read_prompt(p))
        .transpose()?;
    if words.next().is_some() {
        return Err(CliError::usage(
            "too many arguments: arbor resume <SESSION> [PROMPT]",
        ));
    }
    refuse_run_options(&args.run)?;
    let url = args.engine.url();
    let Some(prompt) = prompt else {
        let rows = super::read::rows(&url, &session).await?;
        eprintln!(
            "session: {session} ({})",
            arbor_protocol::text::count(rows.len(), "agent", "agents")
        );
        let text = super::read::draw(&session, &rows, false, TreeFormat::Text)?;
        let mut stdout = std::io::stdout().lock();
        out(write!(stdout, "{text}"))?;
        return Ok(0);
    };
    let ingress = ingress(&url)?;
    let reply = ingress
        .resume(&session, &prompt)
        .await
        .map_err(super::call_failed(&url, &session))?;
    let from = match reply {
        ResumeReply::Started { from } => from,
        // Like a session another process drives (exit 3).
        ResumeReply::Running { error } => {
            return Err(CliError {
                code: 3,
                message: error,
            });
        }
        ResumeReply::Refused { error } => return Err(CliError::usage(error)),
    };
    let mode = mode_of(&args.run);
    if mode == Mode::Human {
        eprintln!("session: {session}");
    }
    let page = follow(&ingress, &session, from, mode, Until::Completed).await?;
    Ok(finish_run(&page, mode))
}
