//! Creating agents: identity, the `session_meta` line in the log (its rollout and its rows
//! follow from it) written together with the history it starts with and its parent's task for
//! it, registration, task, and the `agent.spawned` event — in that order.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arbor_protocol::{
    AgentPath, AgentStatus, Event, Mail, ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem,
    SessionMeta, ThreadId, Timestamp,
};
use arbor_roles::{Capabilities, Role};
use arbor_rollout::rollout_path;

use crate::agent::{Agent, Identity};
use crate::residency::{counts_for_residency, make_room};
use crate::runtime::Inner;
use crate::turn::agent_task;

/// What a new agent is made of.
#[derive(Debug)]
pub struct NewAgent<'a> {
    pub id: ThreadId,
    pub path: AgentPath,
    pub parent: Option<&'a Arc<Agent>>,
    pub role: &'a Role,
    pub model: String,
    pub effort: Option<String>,
    pub caps: Capabilities,
    pub nickname: Option<String>,
    pub cwd: PathBuf,
    pub internal: bool,
    /// The header's stamp (a new session's root has one chosen with its log); now otherwise.
    pub stamp: Option<Timestamp>,
    /// History the agent starts with (a fork of its parent's), recorded with its header.
    pub history: Vec<ResponseItem>,
    /// Its parent's task for it, recorded (as the parent's `mail_sent`) in the same write as
    /// its header, so no crash leaves an agent without its task. The caller delivers it.
    pub task: Option<Mail>,
}

/// Creates, persists, registers and starts an agent. Its status is `pending_init`.
pub async fn create_agent(inner: &Arc<Inner>, new: NewAgent<'_>) -> Result<Arc<Agent>, String> {
    let id = new.id;
    let meta = SessionMeta {
        thread_id: id,
        session_id: if new.parent.is_some() {
            inner.session_id
        } else {
            id
        },
        parent_id: new.parent.map(|p| p.id()),
        path: new.path.clone(),
        depth: new.path.depth() as u32,
        nickname: new.nickname.clone(),
        role: new.role.name.clone(),
        model: new.model.clone(),
        effort: new.effort.clone(),
        sandbox: new.caps.sandbox.as_str().to_string(),
        cwd: new.cwd.display().to_string(),
        format_version: ROLLOUT_FORMAT_VERSION,
    };
    // The header's stamp names the rollout file, so the path is known before it exists.
    let stamp = new.stamp.unwrap_or_else(Timestamp::now);
    let rollout = rollout_path(&inner.config.home, stamp, id);
    let token = match new.parent {
        Some(parent) => parent.token.child_token(),
        None => inner.root_token.child_token(),
    };
    inner.project_docs.preload(vec![new.cwd.clone()]).await;
    let instructions = inner
        .project_docs
        .instructions(new.role, &new.cwd, new.internal);
    let identity = Identity {
        id,
        path: new.path.clone(),
        parent: new.parent.map(|p| p.id()),
        depth: meta.depth,
        nickname: new.nickname.clone(),
        role: new.role.name.clone(),
        model: new.model,
        effort: new.effort,
        caps: new.caps,
        cwd: new.cwd,
        rollout_path: rollout,
        instructions,
        internal: new.internal,
    };
    let agent = Agent::new(identity, token, AgentStatus::PendingInit, inner.log.clone());
    if !inner.registry.insert(Arc::clone(&agent)) {
        return Err(format!("agent path `{}` already exists", new.path));
    }
    let mut lines = vec![(id, RolloutItem::SessionMeta(meta))];
    lines.extend(
        new.history
            .iter()
            .map(|item| (id, RolloutItem::ResponseItem(item.clone()))),
    );
    if let (Some(parent), Some(task)) = (new.parent, &new.task) {
        lines.push((parent.id(), RolloutItem::MailSent(task.clone())));
    }
    match inner.log.append_lines(stamp, lines) {
        Ok(lsn) => {
            agent.last_recorded.fetch_max(lsn, Ordering::AcqRel);
            if let Some(parent) = new.parent {
                parent.last_recorded.fetch_max(lsn, Ordering::AcqRel);
            }
        }
        Err(err) => {
            inner.registry.remove(&agent);
            return Err(format!("could not create the agent: {err}"));
        }
    }
    agent.state().history.extend(new.history);
    if counts_for_residency(&agent) {
        make_room(inner, &agent).await;
    }
    let (task, go) = agent.install();
    inner
        .tracker
        .spawn(agent_task(Arc::clone(inner), Arc::clone(&agent), go, task));
    // The root's is emitted after `session.started`, once the session is known to all.
    if new.parent.is_some() {
        inner.events.emit(Event::AgentSpawned {
            path: new.path,
            nickname: new.nickname,
            role: new.role.name.clone(),
            parent: new.parent.map(|p| p.path().clone()),
        });
    }
    Ok(agent)
}

/// The instructions sent with every request of an agent of this role.
pub fn instructions_for(role: &Role) -> String {
    format!(
        "You are an agent in arbor, a tree of cooperating coding agents. Your path names you; \
         other agents reach you by it. Use the tools to do your task; your final answer (a reply \
         with no tool calls) ends your turn and is sent to your parent.\n\n{}",
        role.developer_instructions
    )
}
