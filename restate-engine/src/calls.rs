//! The tools a turn runs on the Restate engine: the multi-agent tools as calls to the
//! `Session` object (it decides; the turn only asks), `wait_agent` on an awakeable the session
//! resolves, `exec_command` behind its approval gate (`exec.rs`) and `apply_patch` (`patch.rs`).

use std::time::Duration;

use arbor_protocol::{ResponseItem, ToolSpec};
use restate_sdk::prelude::*;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::turn::{Turn, caller};
use crate::wire::{CloseRequest, MailRequest, SpawnBatch, SpawnRequest, WaitNow, WaitRequest};

/// Runs one call and returns what the model reads; `history` is the turn's so far.
pub(crate) async fn dispatch(
    turn: &Turn<'_>,
    name: &str,
    arguments: &str,
    step: usize,
    history: &[ResponseItem],
) -> Result<String, HandlerError> {
    if !turn.meta.tools.iter().any(|tool| tool == name) {
        return Ok(format!("tool `{name}` is not available to this agent"));
    }
    let result = match name {
        "spawn_agent" => {
            let mut outputs = spawn_all(turn, &[arguments]).await?;
            Ok(outputs.pop().unwrap_or_default())
        }
        "send_message" => mail(turn, arguments, false).await?,
        "followup_task" => mail(turn, arguments, true).await?,
        "wait_agent" => wait_agent(turn, arguments).await?,
        "close_agent" => close_agent(turn, arguments, false).await?,
        "interrupt_agent" => close_agent(turn, arguments, true).await?,
        "list_agents" => list_agents(turn, arguments).await?,
        "exec_command" => crate::exec::exec_command(turn, arguments, step, history).await?,
        "apply_patch" => crate::patch::apply_patch(turn, arguments, step).await?,
        other => Err(format!(
            "tool `{other}` is not available on the Restate engine yet"
        )),
    };
    Ok(match result {
        Ok(output) | Err(output) => output,
    })
}

pub(crate) fn parse<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text).map_err(|error| format!("invalid arguments for {tool}: {error}"))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    task_name: String,
    message: String,
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    reasoning_effort: Option<String>,
    #[serde(default)]
    fork_turns: Option<String>,
}

/// A `spawn_agent` call's request, or the refusal the model reads.
fn spawn_request(turn: &Turn<'_>, arguments: &str) -> Result<SpawnRequest, String> {
    let args: SpawnArgs = parse("spawn_agent", arguments)?;
    if args.model.is_some() || args.reasoning_effort.is_some() {
        return Err(
            "model and reasoning_effort are not available on the Restate engine yet".to_string(),
        );
    }
    if args
        .fork_turns
        .as_deref()
        .is_some_and(|fork| fork != "none")
    {
        return Err("fork_turns is not available on the Restate engine yet".to_string());
    }
    Ok(SpawnRequest {
        caller: caller(turn),
        task_name: args.task_name,
        message: args.message,
        agent_type: args.agent_type,
        fresh: None,
    })
}

/// `spawn_agent` calls that follow each other in one response (their arguments, in order),
/// registered in one `Session/spawn_many` call with the ids of one journaled step; the
/// outputs the model reads, in order.
pub(crate) async fn spawn_all(
    turn: &Turn<'_>,
    arguments: &[&str],
) -> Result<Vec<String>, HandlerError> {
    let mut outputs: Vec<Option<String>> = Vec::new();
    let mut spawns = Vec::new();
    for arguments in arguments {
        if !turn.meta.tools.iter().any(|tool| tool == "spawn_agent") {
            outputs.push(Some(
                "tool `spawn_agent` is not available to this agent".to_string(),
            ));
            continue;
        }
        match spawn_request(turn, arguments) {
            Ok(request) => {
                outputs.push(None);
                spawns.push(request);
            }
            Err(error) => outputs.push(Some(error)),
        }
    }
    let mut replies = Vec::new().into_iter();
    if !spawns.is_empty() {
        let fresh = turn.fresh(spawns.len()).await?;
        for (spawn, fresh) in spawns.iter_mut().zip(fresh) {
            spawn.fresh = Some(fresh);
        }
        let batch = SpawnBatch {
            spawns,
            events: turn.take_events(),
        };
        replies = turn
            .session_client()
            .spawn_many(Json(batch))
            .call()
            .await?
            .into_inner()
            .into_iter();
    }
    Ok(outputs
        .into_iter()
        .map(|output| {
            output.unwrap_or_else(|| match replies.next() {
                Some(Ok(text) | Err(text)) => text,
                None => "the session gave no answer for this spawn".to_string(),
            })
        })
        .collect())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MailArgs {
    target: String,
    message: String,
}

async fn mail(
    turn: &Turn<'_>,
    arguments: &str,
    followup: bool,
) -> Result<Result<String, String>, HandlerError> {
    let tool = if followup {
        "followup_task"
    } else {
        "send_message"
    };
    let args: MailArgs = match parse(tool, arguments) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let request = MailRequest {
        author: caller(turn),
        target: args.target.trim().to_string(),
        content: args.message,
        followup,
    };
    Ok(turn
        .session()
        .mail(Json(request))
        .call()
        .await?
        .into_inner())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    #[serde(default)]
    targets: Option<Vec<String>>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// `wait_agent`: registers an awakeable with the session and sleeps on it (Restate suspends
/// the invocation; no worker holds anything meanwhile) or on a durable timer for the deadline.
async fn wait_agent(
    turn: &Turn<'_>,
    arguments: &str,
) -> Result<Result<String, String>, HandlerError> {
    let args: WaitArgs = match parse("wait_agent", arguments) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let all = match args.mode.as_deref() {
        None | Some("any") => false,
        Some("all") => true,
        Some(other) => {
            return Ok(Err(format!(
                "invalid arguments for wait_agent: unknown mode `{other}`, expected `any` or `all`"
            )));
        }
    };
    let config = &turn.config;
    let (timeout_ms, raised) = match args.timeout_ms {
        None => (config.wait_default_ms, None),
        Some(ms) if ms > config.wait_max_ms => {
            return Ok(Err(format!(
                "timeout_ms must be at most {}",
                config.wait_max_ms
            )));
        }
        Some(ms) if ms < config.wait_min_ms => (config.wait_min_ms, Some(ms)),
        Some(ms) => (ms, None),
    };
    let (awakeable, answer) = turn.ctx.awakeable::<String>();
    let request = WaitRequest {
        caller: caller(turn),
        targets: args.targets.unwrap_or_default(),
        all,
        awakeable,
        unread_from: Vec::new(),
    };
    let now = turn
        .session()
        .wait(Json(request))
        .call()
        .await?
        .into_inner();
    let (mut message, timed_out) = match now {
        WaitNow::Refused { error } => return Ok(Err(error)),
        WaitNow::Done { message } => (message, false),
        WaitNow::Registered => {
            restate_sdk::select! {
                message = answer => (message?, false),
                _ = turn.ctx.sleep(Duration::from_millis(timeout_ms)) => {
                    turn.session().unwait(Json(caller(turn))).send();
                    (format!("timed out after {timeout_ms}ms"), true)
                }
            }
        }
    };
    if let Some(requested) = raised {
        message.push_str(&format!(
            " Requested timeout of {requested}ms was raised to the minimum of {}ms.",
            config.wait_min_ms
        ));
    }
    Ok(Ok(
        json!({"message": message, "timed_out": timed_out}).to_string()
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetArgs {
    target: String,
}

/// `close_agent`, or `interrupt_agent` with `interrupt`.
async fn close_agent(
    turn: &Turn<'_>,
    arguments: &str,
    interrupt: bool,
) -> Result<Result<String, String>, HandlerError> {
    let tool = if interrupt {
        "interrupt_agent"
    } else {
        "close_agent"
    };
    let args: TargetArgs = match parse(tool, arguments) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let request = CloseRequest {
        caller: caller(turn),
        target: args.target.trim().to_string(),
    };
    let session = turn.session();
    let reply = if interrupt {
        session.interrupt(Json(request)).call().await?
    } else {
        session.close(Json(request)).call().await?
    };
    Ok(reply.into_inner())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path_prefix: Option<String>,
}

async fn list_agents(
    turn: &Turn<'_>,
    arguments: &str,
) -> Result<Result<String, String>, HandlerError> {
    let args: ListArgs = match parse("list_agents", arguments) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    let prefix = match args
        .path_prefix
        .as_deref()
        .map(|prefix| caller(turn).resolve(prefix))
    {
        None => None,
        Some(Ok(prefix)) => Some(prefix),
        Some(Err(error)) => return Ok(Err(error.to_string())),
    };
    let rows = turn.session().agents().call().await?.into_inner();
    let agents: Vec<_> = rows
        .iter()
        .filter(|row| row.role != arbor_roles::GUARDIAN_ROLE)
        .filter(|row| {
            prefix
                .as_ref()
                .is_none_or(|prefix| row.path.is_within(prefix))
        })
        .map(|row| {
            json!({
                "agent_name": row.path.as_str(),
                "agent_status": row.status,
                "nickname": row.nickname,
                "role": row.role,
                "resident": row.resident,
                "unread": row.unread,
            })
        })
        .collect();
    Ok(Ok(json!({"agents": agents}).to_string()))
}

/// The schema of a tool this engine offers (`None` for the ones it does not run yet).
pub(crate) fn spec(name: &str) -> Option<ToolSpec> {
    let object = |properties: serde_json::Value, required: &[&str]| {
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    };
    let text = json!({"type": "string"});
    let (description, parameters) = match name {
        "exec_command" => return Some(arbor_tools::exec_tool_spec()),
        "apply_patch" => return Some(arbor_tools::apply_patch_tool_spec()),
        "spawn_agent" => (
            "Spawn a child agent with a task; it starts working at once.",
            object(
                json!({"task_name": text, "message": text, "agent_type": text,
                       "model": text, "reasoning_effort": text, "fork_turns": text}),
                &["task_name", "message"],
            ),
        ),
        "send_message" => (
            "Queue a message for an agent; it does not wake the agent.",
            object(
                json!({"target": text, "message": text}),
                &["target", "message"],
            ),
        ),
        "followup_task" => (
            "Give an agent a follow-up task; it wakes the agent if idle.",
            object(
                json!({"target": text, "message": text}),
                &["target", "message"],
            ),
        ),
        "wait_agent" => (
            "Wait until a target's mail is waiting (any) or every target is idle (all).",
            object(
                json!({"targets": {"type": "array", "items": text},
                       "mode": {"type": "string", "enum": ["any", "all"]},
                       "timeout_ms": {"type": "integer"}}),
                &[],
            ),
        ),
        "list_agents" => (
            "List the agents of the session.",
            object(json!({"path_prefix": text}), &[]),
        ),
        "close_agent" => (
            "Close an agent and its descendants.",
            object(json!({"target": text}), &["target"]),
        ),
        "interrupt_agent" => (
            "Stop an agent's running turn; the agent stays available.",
            object(json!({"target": text}), &["target"]),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    })
}
