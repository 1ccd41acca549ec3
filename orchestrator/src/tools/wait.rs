//! `wait_agent`: block (spending no tokens) until a target's mail is waiting (`any`), every
//! target is idle (`all`), a target starts waiting for an approval, or the deadline passes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::{AgentPath, AgentStatus};
use serde::Deserialize;
use serde_json::json;

use super::{ToolResult, parse_args, resolve_target};
use crate::agent::Agent;
use crate::runtime::Inner;

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

/// Why a wait ended before its deadline.
enum Done {
    Mail(Vec<AgentPath>),
    AllIdle(Vec<(AgentPath, AgentStatus)>),
    Approval(AgentPath),
    NoTargets,
}

pub async fn wait_agent(inner: &Arc<Inner>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: WaitArgs = parse_args("wait_agent", arguments)?;
    let (timeout_ms, raised) = effective_timeout(inner, args.timeout_ms)?;
    let mode = args.mode.unwrap_or(WaitMode::Any);
    let targets = match &args.targets {
        Some(names) if !names.is_empty() => {
            let mut targets = Vec::new();
            for name in names {
                let target = resolve_target(inner, caller, name)?;
                if caller.path().is_within(target.path()) {
                    return Err(format!(
                        "wait_agent cannot wait on the caller itself or an ancestor: {}",
                        target.path()
                    ));
                }
                targets.push(target);
            }
            targets
        }
        _ => inner
            .registry
            .children(caller.id())
            .into_iter()
            .filter(|child| !child.identity.internal && !child.state().closed)
            .collect(),
    };
    let mut changes = inner.changed.subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
    let previous = caller.status();
    inner.set_status(caller, AgentStatus::Waiting);
    let done = loop {
        changes.borrow_and_update();
        if let Some(done) = check(caller, &targets, mode) {
            break Some(done);
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { break None },
            () = tokio::time::sleep_until(deadline) => break None,
        }
    };
    if matches!(previous, AgentStatus::Running) || caller.status() == AgentStatus::Waiting {
        inner.set_status(caller, AgentStatus::Running);
    }
    let (mut message, timed_out) = match done {
        Some(done) => (describe(done), false),
        None => (format!("timed out after {timeout_ms}ms"), true),
    };
    if let Some(requested) = raised {
        message.push_str(&format!(
            " Requested timeout of {requested}ms was raised to the minimum of {}ms.",
            inner.config.wait_min_ms
        ));
    }
    Ok(json!({"message": message, "timed_out": timed_out}).to_string())
}

/// The timeout to use, and the requested value when it was raised to the minimum.
fn effective_timeout(inner: &Inner, requested: Option<u64>) -> Result<(u64, Option<u64>), String> {
    let config = &inner.config;
    match requested {
        None => Ok((config.wait_default_ms, None)),
        Some(ms) if ms > config.wait_max_ms => {
            Err(format!("timeout_ms must be at most {}", config.wait_max_ms))
        }
        Some(ms) if ms < config.wait_min_ms => Ok((config.wait_min_ms, Some(ms))),
        Some(ms) => Ok((ms, None)),
    }
}

fn check(caller: &Agent, targets: &[Arc<Agent>], mode: WaitMode) -> Option<Done> {
    if targets.is_empty() {
        return Some(Done::NoTargets);
    }
    if let Some(waiting) = targets
        .iter()
        .find(|t| t.status() == AgentStatus::AwaitingApproval)
    {
        return Some(Done::Approval(waiting.path().clone()));
    }
    match mode {
        WaitMode::Any => {
            // One pass over the mailbox, then one lookup per target.
            let state = caller.state();
            let authors: HashSet<&AgentPath> = state.mailbox.pending().map(|m| &m.author).collect();
            let from: Vec<AgentPath> = targets
                .iter()
                .map(|t| t.path())
                .filter(|path| authors.contains(path))
                .cloned()
                .collect();
            (!from.is_empty()).then_some(Done::Mail(from))
        }
        WaitMode::All => {
            let idle = targets.iter().all(|t| !t.state().active());
            idle.then(|| {
                Done::AllIdle(
                    targets
                        .iter()
                        .map(|t| (t.path().clone(), t.status()))
                        .collect(),
                )
            })
        }
    }
}

fn describe(done: Done) -> String {
    match done {
        Done::NoTargets => "no agents to wait for".to_string(),
        Done::Mail(from) => format!(
            "mail is waiting from {}",
            from.iter()
                .map(AgentPath::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Done::AllIdle(targets) => format!(
            "all targets are idle: {}",
            targets
                .iter()
                .map(|(path, status)| format!("{path} {status}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Done::Approval(path) => format!("{path} is waiting for an approval"),
    }
}
