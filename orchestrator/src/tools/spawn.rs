//! `spawn_agent`: name and depth checks, role narrowing, the child's isolation (and worktree),
//! fork, the spawn mail.

use std::sync::Arc;

use arbor_protocol::{AgentPath, MailKind, ResponseItem, ThreadId};
use serde::Deserialize;
use serde_json::json;

use super::args::{ToolResult, parse_args};
use crate::agent::Agent;
use crate::config::GUARDIAN_NAME;
use crate::ctx::Ctx;
use crate::mail;
use crate::session::handle::SpawnSpec;
use crate::worktrees::spawn::{discard, prepare, started};

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
    #[serde(default)]
    isolation: Option<String>,
}

/// How much of the parent's history a child starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fork {
    None,
    All,
    Last(usize),
}

impl Fork {
    /// Parses `none`, `all` or a positive integer string.
    pub fn parse(text: Option<&str>) -> Result<Self, String> {
        match text.map(str::trim) {
            None | Some("none") => Ok(Self::None),
            Some("all") => Ok(Self::All),
            Some(n) => match n.parse::<usize>() {
                Ok(turns) if turns > 0 => Ok(Self::Last(turns)),
                _ => Err(format!(
                    "fork_turns must be \"none\", \"all\" or a positive integer, got `{n}`"
                )),
            },
        }
    }
}

pub async fn spawn_agent(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: SpawnArgs = parse_args("spawn_agent", arguments)?;
    AgentPath::validate_name(&args.task_name).map_err(|err| err.to_string())?;
    let path = caller
        .path()
        .join(&args.task_name)
        .map_err(|err| err.to_string())?;
    if caller.path().is_root() && args.task_name == GUARDIAN_NAME {
        return Err(format!("agent path `{path}` already exists"));
    }
    if !caller.identity.caps.can_spawn {
        return Err(format!(
            "role '{}' cannot spawn agents",
            caller.identity.meta.role
        ));
    }
    let depth = caller.identity.meta.depth + 1;
    if depth > ctx.config.max_depth {
        return Err(format!(
            "agent depth limit reached: max depth is {}",
            ctx.config.max_depth
        ));
    }
    if ctx.registry.path_taken(&path) {
        return Err(format!("agent path `{path}` already exists"));
    }
    let role = ctx
        .roles
        .for_spawn(args.agent_type.as_deref())
        .map_err(|err| err.to_string())?;
    mail::check_content(&args.message)?;
    let fork = Fork::parse(args.fork_turns.as_deref())?;
    check_settings(ctx, args.model.as_deref(), args.reasoning_effort.as_deref())?;
    let configured = ctx.config.role_models.get(&role.name);
    // A model named here, by the config or by the role (both checked at start) comes with its
    // provider; a child that names none runs on its parent's.
    let named = args
        .model
        .or_else(|| configured.and_then(|c| c.model.clone()))
        .or_else(|| role.model.clone());
    let (provider, model) = match named {
        Some(text) => {
            let found = ctx
                .config
                .resolve_model(&ctx.model.catalog(), &text)
                .map_err(|message| invalid("model", message))?;
            (Some(found.provider), found.model)
        }
        None => (
            caller.identity.meta.provider.clone(),
            caller.identity.meta.model.clone(),
        ),
    };
    let effort = args
        .reasoning_effort
        .or_else(|| configured.and_then(|c| c.reasoning_effort.clone()))
        .or_else(|| role.reasoning_effort.clone())
        .or_else(|| caller.identity.meta.effort.clone());
    let caps = caller.identity.caps.narrow_for(role);
    let prepared = prepare(ctx, caller, &path, role, &caps, args.isolation.as_deref()).await?;
    let cwd = prepared
        .worktree
        .as_ref()
        .map_or_else(|| caller.identity.cwd().to_path_buf(), |wt| wt.cwd());
    let task = mail::compose_to(caller, &path, MailKind::Spawn, &args.message);
    let instructions = ctx.project_docs.for_new_agent(role, &cwd, false).await;
    let spawned = ctx
        .session
        .spawn(SpawnSpec {
            id: ThreadId::new(),
            path,
            parent: Some(Arc::clone(caller)),
            role: role.clone(),
            model,
            provider,
            effort,
            caps,
            nickname: true,
            cwd,
            internal: false,
            instructions,
            stamp: None,
            history: forked_history(caller, fork),
            task: Some(task),
            worktree: prepared.worktree.clone(),
        })
        .await;
    let spawned = match spawned {
        Ok(spawned) => spawned,
        Err(err) => {
            if let Some(wt) = &prepared.worktree {
                discard(ctx, wt).await;
            }
            return Err(err.to_string());
        }
    };
    started(ctx, &spawned.agent);
    // The child takes its first step before its parent goes on: with a model that answers at
    // once (the scripted one), children start in spawn order and before the parent's next
    // request.
    tokio::task::yield_now().await;
    let mut output = json!({
        "task_name": spawned.agent.path().as_str(),
        "nickname": spawned.nickname,
    });
    if let Some(wt) = &prepared.worktree {
        output["worktree"] = json!({"path": wt.cwd().display().to_string(), "branch": wt.branch});
    }
    if let Some(notice) = prepared.notice {
        output["notice"] = json!(notice);
    }
    Ok(output.to_string())
}

/// A model and effort the model asked for, checked as a role file's are: a value the server
/// would refuse for every request of the child, or a provider the session does not have, is
/// refused here, and no child is made.
fn check_settings(ctx: &Ctx, model: Option<&str>, effort: Option<&str>) -> Result<(), String> {
    if let Some(effort) = effort {
        arbor_roles::check_effort(effort)
            .map_err(|message| invalid("reasoning_effort", message))?;
    }
    if let Some(model) = model {
        ctx.config
            .resolve_model(&ctx.model.catalog(), model)
            .map_err(|message| invalid("model", message))?;
    }
    Ok(())
}

/// The error of a bad `spawn_agent` argument.
fn invalid(field: &str, message: String) -> String {
    format!("invalid arguments for spawn_agent: field `{field}`: {message}")
}

/// The parent's last turns as a child sees them: user messages and final answers only.
fn forked_history(parent: &Agent, fork: Fork) -> Vec<ResponseItem> {
    let state = parent.runtime();
    let spans = &state.turns;
    let first = match fork {
        Fork::None => return Vec::new(),
        Fork::All => 0,
        // The running turn (the one spawning) is the last span; it counts as one of the N.
        Fork::Last(n) => spans.len().saturating_sub(n),
    };
    let mut items = Vec::new();
    for (index, span) in spans.iter().enumerate().skip(first) {
        let end = spans
            .get(index + 1)
            .map_or(state.history.len(), |next| next.start);
        for item in &state.history[span.start..end] {
            if let ResponseItem::Message { role, .. } = item
                && role == "user"
            {
                items.push(item.clone());
            }
        }
        if let Some(answer) = &span.final_answer {
            items.push(ResponseItem::Message {
                role: "assistant".to_string(),
                content: answer.clone(),
            });
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::Fork;

    #[test]
    fn fork_turns_parse() {
        assert_eq!(Fork::parse(None), Ok(Fork::None));
        assert_eq!(Fork::parse(Some("none")), Ok(Fork::None));
        assert_eq!(Fork::parse(Some("all")), Ok(Fork::All));
        assert_eq!(Fork::parse(Some("3")), Ok(Fork::Last(3)));
        assert!(Fork::parse(Some("0")).is_err());
        assert!(Fork::parse(Some("-1")).is_err());
        assert!(Fork::parse(Some("some")).is_err());
    }
}
