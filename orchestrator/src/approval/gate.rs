//! The approval gate of `exec_command` (behaviour §7): the policy's verdict on the command,
//! then, when it must, a request decided by the user, the guardian or a rule; the launcher the
//! command runs with, or the text its model reads instead.

use std::path::Path;
use std::sync::Arc;

use arbor_agent_graph::{ApprovalOutcome, DecidedBy};
use arbor_protocol::{ApprovalPolicy, ThreadId};
use arbor_tools::{
    ExecArgs, GIT_HARDENING_ENV, Launcher, PlainLauncher, SandboxPermissions, WithEnv,
};

use super::broker::{self, Request, Settled};
use super::need::{self, GUARDIAN_CANNOT_ASK_SENTENCE};
use super::review;
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Decides whether `agent` may run the `exec_command` of `args` in `workdir`, asking for
/// approval when it must: the launcher to run it with, or the text its model reads instead.
pub async fn gate_exec(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    args: &ExecArgs,
    workdir: &Path,
) -> Result<Arc<dyn Launcher>, String> {
    let approvals = &ctx.approvals;
    let caps = &agent.identity.caps;
    let escalated = args.permissions() == SandboxPermissions::RequireEscalated;
    let evaluation = approvals.policy.evaluate(&args.cmd);
    let sandboxed: Arc<dyn Launcher> = approvals.launcher(caps.sandbox, agent.identity.cwd());
    let mut need = need::assess(&evaluation, caps.approval_policy, escalated);
    if caps.approval_policy == ApprovalPolicy::Untrusted && need == need::Need::Run {
        need = untrusted_git(&evaluation, workdir).await;
        if need == need::Need::Run {
            // Read-only git still reads the repository's config: run it with hooks, the
            // fsmonitor and pagers off.
            return Ok(Arc::new(WithEnv::new(sandboxed, GIT_HARDENING_ENV)));
        }
    }
    let reason = match need {
        need::Need::Run => return Ok(sandboxed),
        need::Need::Approval(reason) => reason,
        need::Need::Forbidden(rule) => {
            let request = new_request(agent, args, workdir, &format!("forbidden by {rule}"));
            return Err(refuse_forbidden(ctx, agent, &request, &rule).await);
        }
    };
    let request = new_request(agent, args, workdir, &reason);
    seek_approval(ctx, agent, &request).await?;
    Ok(if escalated {
        Arc::new(PlainLauncher)
    } else {
        sandboxed
    })
}

/// Under `untrusted`, a command judged read-only that runs git asks after all when the
/// repository's config could make git run a program.
async fn untrusted_git(evaluation: &arbor_tools::Evaluation, workdir: &Path) -> need::Need {
    let runs_git = evaluation.commands.iter().any(|words| {
        words
            .first()
            .is_some_and(|w| w.rsplit('/').next() == Some("git"))
    });
    if !runs_git {
        return need::Need::Run;
    }
    let (evaluation, workdir) = (evaluation.clone(), workdir.to_path_buf());
    let risk =
        tokio::task::spawn_blocking(move || arbor_tools::git_config_risk(&evaluation, &workdir))
            .await
            .unwrap_or_else(|err| Some(format!("the check failed: {err}")));
    match risk {
        None => need::Need::Run,
        Some(risk) => need::Need::Approval(format!(
            "approval policy untrusted: git could run a program its repository chose ({risk})"
        )),
    }
}

/// Records the refusal of an action a `forbidden` rule matches; the text its model reads.
pub(super) async fn refuse_forbidden(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    request: &Request,
    rule: &str,
) -> String {
    let message = need::forbidden_message(rule);
    let settled = Settled::refuse(
        ApprovalOutcome::Deny,
        DecidedBy::Policy,
        Some(format!("forbidden by {rule}")),
        message.clone(),
    );
    match broker::record_settled(ctx, agent, request, &settled).await {
        Ok(()) => message,
        Err(err) => err,
    }
}

/// Asks for approval of `request` (the guardian never asks): policy `never` refuses, the
/// user's approval for the session allows, otherwise the reviewer decides. `Err` is the text
/// the requester's model reads instead of the action's result.
pub(super) async fn seek_approval(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    request: &Request,
) -> Result<(), String> {
    let approvals = &ctx.approvals;
    if agent.identity.internal {
        return Err(GUARDIAN_CANNOT_ASK_SENTENCE.to_string());
    }
    if agent.identity.caps.approval_policy == ApprovalPolicy::Never {
        let settled = Settled::refuse(
            ApprovalOutcome::Deny,
            DecidedBy::Policy,
            Some("approval policy never".to_string()),
            arbor_guardian::policy_never_message(),
        );
        broker::record_settled(ctx, agent, request, &settled).await?;
        return Err(arbor_guardian::policy_never_message());
    }
    if approvals.cached_for_session(&request.key) {
        let settled = Settled::allow(DecidedBy::User, Some("approved for the session".into()));
        broker::record_settled(ctx, agent, request, &settled).await?;
        return Ok(());
    }
    let settled = review::decide(ctx, agent, request).await?;
    match settled.message {
        None => Ok(()),
        Some(message) => Err(message),
    }
}

fn new_request(agent: &Agent, args: &ExecArgs, workdir: &Path, reason: &str) -> Request {
    Request {
        id: ThreadId::new().to_string(),
        action: need::exec_action(args, workdir, agent.identity.caps.sandbox, reason),
        justification: args.justification.clone(),
        key: need::override_key(agent.path(), args, workdir),
        turn: agent.runtime().turn_no,
    }
}
