//! Making an agent, inside the session task: its nickname, its header (written in one append
//! with its worktree, the history it starts with and its parent's task for it), its handle, and its
//! registration. The session then installs it once it holds a residency slot.

use std::sync::Arc;

use arbor_protocol::{
    AgentStatus, Mail, ROLLOUT_FORMAT_VERSION, RolloutItem, SessionMeta, ThreadId, Timestamp,
};
use arbor_rollout::rollout_path;

use super::handle::{SpawnSpec, Spawned};
use super::nicknames::Nicknames;
use crate::agent::{Agent, Identity};
use crate::ctx::Ctx;
use crate::error::OrchestratorError;
use crate::worktrees::worktree::instructions;
use arbor_tree::Registration;

/// An agent made: what the spawner gets, how the session registers it, and its task.
pub struct Made {
    pub spawned: Spawned,
    pub registration: Registration,
    pub task: Option<Mail>,
}

/// Makes the agent `spec` describes. Fails, leaving nothing behind, when its path is taken or
/// its lines cannot be appended.
pub fn make(
    ctx: &Ctx,
    nicknames: &mut Nicknames,
    spec: SpawnSpec,
) -> Result<Made, OrchestratorError> {
    if ctx.registry.path_taken(&spec.path) {
        return Err(taken(&spec.path));
    }
    let nickname = spec.nickname.then(|| nicknames.draw(&spec.role));
    let id = spec.id;
    let parent_id = spec.parent.as_ref().map(|parent| parent.id());
    let meta = SessionMeta {
        thread_id: id,
        session_id: if parent_id.is_some() {
            ctx.session_id
        } else {
            id
        },
        parent_id,
        path: spec.path.clone(),
        depth: spec.path.depth() as u32,
        nickname: nickname.clone(),
        role: spec.role.name.clone(),
        model: spec.model,
        provider: spec.provider,
        effort: spec.effort,
        sandbox: spec.caps.sandbox.as_str().to_string(),
        cwd: spec.cwd.display().to_string(),
        format_version: ROLLOUT_FORMAT_VERSION,
        repository: parent_id.is_none().then(|| ctx.repository.record()),
        handle: parent_id.is_none().then(|| ctx.handle.clone()).flatten(),
    };
    // The header's stamp names the rollout file, so the path is known before it exists.
    let stamp = spec.stamp.unwrap_or_else(Timestamp::now);
    let token = match &spec.parent {
        Some(parent) => parent.token.child_token(),
        None => ctx.root_token.child_token(),
    };
    let identity = Identity {
        meta: meta.clone(),
        caps: spec.caps,
        rollout_path: rollout_path(&ctx.config.home, stamp, id),
        instructions: instructions(spec.instructions, spec.worktree.as_deref()),
        internal: spec.internal,
        worktree: spec.worktree.clone(),
    };
    let agent = Agent::new(identity, token, ctx.log.clone());
    if !ctx.registry.insert(Arc::clone(&agent)) {
        return Err(taken(&spec.path));
    }
    let mut lines: Vec<(ThreadId, RolloutItem)> =
        vec![(id, RolloutItem::SessionMeta(Box::new(meta)))];
    if let Some(worktree) = &spec.worktree {
        lines.push((id, RolloutItem::Worktree(Box::new(worktree.created()))));
    }
    lines.extend(
        spec.history
            .iter()
            .map(|item| (id, RolloutItem::ResponseItem(item.clone()))),
    );
    if let (Some(parent), Some(task)) = (parent_id, &spec.task) {
        lines.push((parent, RolloutItem::MailSent(Box::new(task.clone()))));
    }
    match ctx.log.append_lines(stamp, lines) {
        Ok(lsn) => {
            agent.recorded(lsn);
            if let Some(parent) = &spec.parent {
                parent.recorded(lsn);
            }
        }
        Err(err) => {
            ctx.registry.remove(&agent);
            return Err(OrchestratorError::Refused(format!(
                "could not create the agent: {err}"
            )));
        }
    }
    agent.runtime().history.extend(spec.history);
    // The root's `agent.spawned` is emitted after `session.started`, by the facade.
    if let Some(parent) = &spec.parent {
        ctx.events.emit(arbor_protocol::Event::AgentSpawned {
            path: spec.path.clone(),
            nickname: nickname.clone(),
            role: spec.role.name.clone(),
            parent: Some(parent.path().clone()),
        });
    }
    let registration = Registration {
        id,
        path: spec.path,
        parent: parent_id,
        internal: spec.internal,
        status: AgentStatus::PendingInit,
        fresh: true,
        unread: Vec::new(),
        last_message: None,
        ticket: Some(ctx.session.next_ticket()),
    };
    Ok(Made {
        spawned: Spawned { agent, nickname },
        registration,
        task: spec.task,
    })
}

fn taken(path: &arbor_protocol::AgentPath) -> OrchestratorError {
    OrchestratorError::Refused(format!("agent path `{path}` already exists"))
}
