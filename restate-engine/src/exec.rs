//! `exec_command` on the Restate engine: the approval gate (behaviour §7), then the command
//! as a journaled step, run once and replayed on a retry.
//!
//! The gate judges as the local engine does, without command rules (workers load none yet):
//! a command that asks for escalation needs approval, and under `untrusted` so does every
//! command that is not known read-only (or a read-only git whose repository could make it run
//! a program). A command that needs approval goes to the `Session` object, which decides it
//! now or leaves it pending for the guardian or a human; the turn then waits on an awakeable,
//! suspended by Restate, for as long as it takes. An approved escalation runs outside the
//! sandbox, any other command inside it.

use std::path::Path;
use std::sync::Arc;

use arbor_guardian::{Budgets, ReviewRequest};
use arbor_protocol::{ApprovalPolicy, ApprovalsReviewer, ResponseItem};
use arbor_tools::{
    ExecArgs, ExecConfig, ExecRequest, GIT_HARDENING_ENV, Launcher, PlainLauncher, Policy,
    SandboxLauncher, SandboxPermissions, WithEnv, run_exec,
};
use restate_sdk::prelude::*;
use serde_json::{Value, json};

use crate::approval::{ApprovalKey, GUARDIAN_CANNOT_ASK};
use crate::turn::{Turn, caller};
use crate::wire::{ApprovalReply, ApprovalRequest, Decided};

/// How an allowed command is launched.
#[derive(Debug, Clone, Copy)]
enum Launch {
    /// In the agent's sandbox; `hardened` with git's hooks, fsmonitor and pagers off.
    Sandboxed { hardened: bool },
    /// Outside it: an approved escalation.
    Plain,
}

/// Runs `exec_command` for the turn, after the gate; `history` is the turn's transcript (the
/// guardian is shown its recent part).
pub(crate) async fn exec_command(
    turn: &Turn<'_>,
    arguments: &str,
    step: usize,
    history: &[ResponseItem],
) -> Result<Result<String, String>, HandlerError> {
    let args = match ExecArgs::parse(arguments) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error.to_string())),
    };
    let workdir = args.resolve_workdir(Path::new(&turn.config.cwd));
    let escalated = args.permissions() == SandboxPermissions::RequireEscalated;
    let untrusted = turn.config.approval_policy == ApprovalPolicy::Untrusted;
    let launch = match need(turn, &args, &workdir, escalated).await? {
        None => Launch::Sandboxed {
            hardened: untrusted,
        },
        Some(reason) => {
            if turn.meta.role == arbor_roles::GUARDIAN_ROLE {
                return Ok(Err(GUARDIAN_CANNOT_ASK.to_string()));
            }
            let decided = ask(turn, &args, &workdir, &reason, history).await?;
            if !decided.allow {
                return Ok(Err(decided.message.unwrap_or_default()));
            }
            if escalated {
                Launch::Plain
            } else {
                Launch::Sandboxed { hardened: false }
            }
        }
    };
    run(turn, args, launch, step).await
}

/// Why the command needs approval, or `None` when it runs as it is.
async fn need(
    turn: &Turn<'_>,
    args: &ExecArgs,
    workdir: &Path,
    escalated: bool,
) -> Result<Option<String>, HandlerError> {
    let evaluation = Policy::empty().evaluate(&args.cmd);
    let untrusted = turn.config.approval_policy == ApprovalPolicy::Untrusted;
    let mut reasons = Vec::new();
    if escalated {
        reasons.push("it asks to run outside the sandbox".to_string());
    }
    if untrusted && !arbor_tools::is_known_read_only(&evaluation) {
        reasons.push(
            "approval policy untrusted: it is not a known read-only command or allowed by a rule"
                .to_string(),
        );
    }
    if !reasons.is_empty() {
        return Ok(Some(reasons.join("; ")));
    }
    let runs_git = evaluation.commands.iter().any(|words| {
        words
            .first()
            .is_some_and(|word| word.rsplit('/').next() == Some("git"))
    });
    if !untrusted || !runs_git {
        return Ok(None);
    }
    // It reads the repository's config, which a retry on another worker must not read anew.
    let workdir = workdir.to_path_buf();
    let risk = turn
        .ctx
        .run(|| async move { Ok(Json(arbor_tools::git_config_risk(&evaluation, &workdir))) })
        .name("git_config_risk")
        .await?
        .into_inner();
    Ok(risk.map(|risk| {
        format!("approval policy untrusted: git could run a program its repository chose ({risk})")
    }))
}

/// The exact planned action, as the local engine shows it to approvers.
fn action(turn: &Turn<'_>, args: &ExecArgs, workdir: &Path, reason: &str) -> Value {
    let mut action = json!({
        "tool": "exec_command",
        "command": args.cmd,
        "cwd": workdir.display().to_string(),
        "sandbox_permissions": args.permissions().as_str(),
        "sandbox": turn.meta.sandbox.as_str(),
        "approval_reason": reason,
    });
    if let Some(timeout_ms) = args.timeout_ms {
        action["timeout_ms"] = json!(timeout_ms);
    }
    action
}

/// Asks the session for approval and waits for its decision.
async fn ask(
    turn: &Turn<'_>,
    args: &ExecArgs,
    workdir: &Path,
    reason: &str,
    history: &[ResponseItem],
) -> Result<Decided, HandlerError> {
    let action = action(turn, args, workdir, reason);
    let review = (turn.config.reviewer == ApprovalsReviewer::Guardian).then(|| {
        ReviewRequest {
            action: action.clone(),
            requester: caller(turn),
            justification: args.justification.clone(),
            root_task: turn.config.root_task.clone(),
            transcript: history.to_vec(),
        }
        .render(&Budgets::default())
    });
    let key = ApprovalKey {
        command: arbor_tools::canonical(&args.cmd),
        cwd: workdir.display().to_string(),
        escalated: args.permissions() == SandboxPermissions::RequireEscalated,
    };
    let (awakeable, decision) = turn.ctx.awakeable::<Json<Decided>>();
    let request = ApprovalRequest {
        path: caller(turn),
        action,
        justification: args.justification.clone(),
        key,
        review,
        awakeable,
    };
    let reply = turn
        .session()
        .request_approval(Json(request))
        .call()
        .await?
        .into_inner();
    Ok(match reply {
        ApprovalReply::Decided { decided } => decided,
        ApprovalReply::Pending { .. } => decision.await?.into_inner(),
    })
}

/// The command as a journaled step.
async fn run(
    turn: &Turn<'_>,
    args: ExecArgs,
    launch: Launch,
    step: usize,
) -> Result<Result<String, String>, HandlerError> {
    turn.tool_step("exec_command", step, move |cwd, sandbox| async move {
        let request = ExecRequest::from_args(&args, &cwd, &ExecConfig::default())
            .map_err(|error| error.to_string())?;
        let launcher: Arc<dyn Launcher> = match launch {
            Launch::Plain => Arc::new(PlainLauncher),
            Launch::Sandboxed { hardened } => {
                let sandboxed: Arc<dyn Launcher> =
                    Arc::new(SandboxLauncher::new(sandbox, cwd.clone(), false));
                if hardened {
                    Arc::new(WithEnv::new(sandboxed, GIT_HARDENING_ENV))
                } else {
                    sandboxed
                }
            }
        };
        Ok(run_exec(request.with_launcher(launcher))
            .await
            .to_model_output())
    })
    .await
}
