//! `wait_agent`: block (spending no tokens) until a target's mail is waiting (`any`), every
//! target is idle (`all`), or the deadline passes. A target waiting for an approval does not
//! end the wait (the user or the guardian answers it, not the caller); the result names it.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::AgentPath;
use serde::Deserialize;
use serde_json::json;

use super::args::{ToolResult, parse_args, resolve_target};
use crate::agent::Agent;
use crate::ctx::Ctx;
use arbor_tree::{Answer, Input, WaitDone, WaitMode as Mode, WaitReply};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    #[serde(default)]
    targets: Option<Vec<String>>,
    #[serde(default)]
    mode: Option<WaitMode>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum WaitMode {
    Any,
    All,
}

pub async fn wait_agent(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: WaitArgs = parse_args("wait_agent", arguments)?;
    let (timeout_ms, raised) = effective_timeout(ctx, args.timeout_ms)?;
    let mode = match args.mode.unwrap_or(WaitMode::Any) {
        WaitMode::Any => Mode::Any,
        WaitMode::All => Mode::All,
    };
    let targets = match &args.targets {
        Some(names) if !names.is_empty() => {
            let mut targets = Vec::new();
            for name in names {
                let target = resolve_target(ctx, caller, name)?;
                if caller.path().is_within(target.path()) {
                    return Err(format!(
                        "wait_agent cannot wait on the caller itself or an ancestor: {}",
                        target.path()
                    ));
                }
                targets.push(target.id());
            }
            Some(targets)
        }
        // The caller's open children, as the session knows them.
        _ => None,
    };
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
    let caller_id = caller.id();
    let (ticket, mut answer) = ctx.session.ask_later(|ticket| Input::Wait {
        ticket,
        caller: caller_id,
        targets,
        mode,
    });
    let done = tokio::select! {
        answer = &mut answer => answer.ok(),
        () = tokio::time::sleep_until(deadline) => {
            // The session ends the wait (the caller back to running) and answers it.
            ctx.session.send(Input::WaitEnded { ticket });
            answer.await.ok()
        }
    };
    let reply = match done {
        Some(Answer::Wait(reply)) => reply,
        _ => WaitReply {
            done: None,
            awaiting_approval: Vec::new(),
        },
    };
    let (mut message, timed_out) = match reply.done {
        Some(done) => (describe(done), false),
        None => (format!("timed out after {timeout_ms}ms"), true),
    };
    if !reply.awaiting_approval.is_empty() {
        message.push_str(&approval_note(ctx, &reply.awaiting_approval));
    }
    if let Some(requested) = raised {
        message.push_str(&format!(
            " Requested timeout of {requested}ms was raised to the minimum of {}ms.",
            ctx.config.wait_min_ms
        ));
    }
    let mut output = json!({"message": message, "timed_out": timed_out});
    if !reply.awaiting_approval.is_empty() {
        output["awaiting_approval"] = json!(reply.awaiting_approval);
    }
    Ok(output.to_string())
}

/// `; /root/a is waiting for the user to answer an approval request`: who is still held by an
/// approval when the wait ends, and who answers it.
fn approval_note(ctx: &Ctx, paths: &[AgentPath]) -> String {
    let names = paths
        .iter()
        .map(AgentPath::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let verb = if paths.len() == 1 { "is" } else { "are" };
    let who = match ctx.config.reviewer {
        arbor_protocol::ApprovalsReviewer::User => "the user to answer an approval request",
        arbor_protocol::ApprovalsReviewer::Guardian => "the guardian to review an approval request",
    };
    format!("; {names} {verb} waiting for {who}")
}

/// The timeout to use, and the requested value when it was raised to the minimum.
fn effective_timeout(ctx: &Ctx, requested: Option<u64>) -> Result<(u64, Option<u64>), String> {
    let config = &ctx.config;
    match requested {
        None => Ok((config.wait_default_ms, None)),
        Some(ms) if ms > config.wait_max_ms => {
            Err(format!("timeout_ms must be at most {}", config.wait_max_ms))
        }
        Some(ms) if ms < config.wait_min_ms => Ok((config.wait_min_ms, Some(ms))),
        Some(ms) => Ok((ms, None)),
    }
}

fn describe(done: WaitDone) -> String {
    match done {
        WaitDone::NoTargets => "no agents to wait for".to_string(),
        WaitDone::Mail(from) => format!(
            "mail is waiting from {}",
            from.iter()
                .map(AgentPath::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        WaitDone::AllIdle(targets) => format!(
            "all targets are idle: {}",
            targets
                .iter()
                .map(|(path, status)| format!("{path} {status}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}
