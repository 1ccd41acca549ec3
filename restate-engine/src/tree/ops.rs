//! The operations on a `Tree`, one per `Session` handler that changes it.

use arbor_protocol::{AgentPath, AgentStatus, Event, Mail, MailId, MailKind, Timestamp};
use arbor_roles::{Capabilities, NicknamePool, RoleSet, tool_name};
use serde_json::json;

use super::{Effect, Entry, Fresh, Tree, Wait};
use crate::wire::{
    CloseRequest, Input, MailRequest, SpawnRequest, ToolReply, TurnEnded, TurnOutcome, WaitNow,
    WaitRequest,
};

impl Tree {
    /// `spawn_agent`: checks every rule at the one place edges are made, registers the child
    /// (`pending_init`, owing its first turn), puts its task in its inbox and wakes it.
    pub fn spawn(&mut self, request: &SpawnRequest, fresh: &Fresh) -> (ToolReply, Vec<Effect>) {
        let mut effects = Vec::new();
        let reply = self.try_spawn(request, fresh, &mut effects);
        if reply.is_ok() {
            self.settle(&mut effects);
        }
        (reply, effects)
    }

    fn try_spawn(
        &mut self,
        request: &SpawnRequest,
        fresh: &Fresh,
        effects: &mut Vec<Effect>,
    ) -> ToolReply {
        let parent = self
            .open_agent(&request.caller)
            .ok_or_else(|| format!("agent {} is closed", request.caller))?
            .clone();
        if request.message.trim().is_empty() {
            return Err("Empty message can't be sent to an agent".to_string());
        }
        let path = request
            .caller
            .join(&request.task_name)
            .map_err(|error| error.to_string())?;
        if path.depth() > self.config.max_depth {
            return Err(format!(
                "agent depth limit reached: max depth is {}",
                self.config.max_depth
            ));
        }
        // The guardian's path is reserved, whether it exists yet or not.
        if self.open_agent(&path).is_some() || path == super::guardian_path() {
            return Err(format!("agent path `{path}` already exists"));
        }
        let roles = RoleSet::builtin();
        let role = roles
            .for_spawn(request.agent_type.as_deref())
            .map_err(|error| error.to_string())?;
        let parent_caps = Capabilities {
            tools: parent.tools.iter().filter_map(|t| tool_name(t)).collect(),
            sandbox: parent.sandbox,
            can_spawn: parent
                .tools
                .iter()
                .any(|tool| tool == arbor_roles::SPAWN_TOOL),
            approval_policy: self.config.approval_policy,
            mcp: Vec::new(),
        };
        let caps = parent_caps.narrow_for(role);
        let nickname = self.draw_nickname(role.nicknames());
        let entry = Entry {
            thread_id: fresh.thread_id.clone(),
            path: path.clone(),
            parent: Some(request.caller.clone()),
            nickname: Some(nickname.clone()),
            role: role.name.clone(),
            tools: caps.tools.iter().map(|t| t.to_string()).collect(),
            sandbox: caps.sandbox,
            status: AgentStatus::PendingInit,
            open: Some(true),
            busy: false,
            unread: super::Unread::default(),
            interrupt: false,
            internal: false,
            turns: 0,
            streak: (0, 0),
            busy_children: 0,
            inbox: (0, 0),
        };
        // A path a closed agent left is taken again: the old agent was counted idle.
        self.agents.insert(entry);
        self.agents.add_child(&request.caller, &path);
        self.set_busy(&path, true);
        effects.push(Effect::Event(Event::AgentSpawned {
            path: path.clone(),
            nickname: Some(nickname.clone()),
            role: role.name.clone(),
            parent: Some(request.caller.clone()),
        }));
        let mail = self.mail_of(
            request.caller.clone(),
            path.clone(),
            MailKind::Spawn,
            request.message.clone(),
            fresh,
        )?;
        self.deliver(mail, effects);
        effects.push(Effect::Wake(path.clone()));
        Ok(json!({"task_name": path.as_str(), "nickname": nickname}).to_string())
    }

    /// A nickname from the role's candidates, drawn without replacement; the pool's seed is
    /// the session, so a retried handler draws the same one.
    fn draw_nickname(&mut self, candidates: Vec<String>) -> String {
        let seed = self
            .session
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
            });
        let mut pool = NicknamePool::new(candidates, seed);
        for used in &self.nicknames {
            pool.mark_used(used);
        }
        let nickname = pool.draw();
        self.nicknames.push(nickname.clone());
        nickname
    }

    fn mail_of(
        &self,
        author: AgentPath,
        recipient: AgentPath,
        kind: MailKind,
        content: String,
        fresh: &Fresh,
    ) -> Result<Mail, String> {
        let mut mail = Mail::new(author, recipient, kind, content);
        mail.id = MailId::parse(&fresh.mail_id).map_err(|error| error.to_string())?;
        mail.created_at = Timestamp::from_millis(fresh.now_ms);
        Ok(mail)
    }

    /// `send_message` (queue only) and `followup_task` (wakes the target if idle; joins its
    /// running turn at the next request otherwise).
    pub fn mail(&mut self, request: &MailRequest, fresh: &Fresh) -> (ToolReply, Vec<Effect>) {
        let mut effects = Vec::new();
        let reply = self.try_mail(request, fresh, &mut effects);
        self.settle(&mut effects);
        (reply, effects)
    }

    fn try_mail(
        &mut self,
        request: &MailRequest,
        fresh: &Fresh,
        effects: &mut Vec<Effect>,
    ) -> ToolReply {
        if request.content.trim().is_empty() {
            return Err("Empty message can't be sent to an agent".to_string());
        }
        let target = self.resolve(&request.author, &request.target)?.clone();
        if request.followup && target.path.is_root() {
            return Err("Follow-up tasks can't target the root agent".to_string());
        }
        if !target.is_open() || target.status == AgentStatus::Closed {
            return Err(format!("agent {} is closed", target.path));
        }
        let kind = if request.followup {
            MailKind::Followup
        } else {
            MailKind::Message
        };
        let mail = self.mail_of(
            request.author.clone(),
            target.path.clone(),
            kind,
            request.content.clone(),
            fresh,
        )?;
        self.deliver(mail, effects);
        Ok(String::new())
    }

    /// A turn took its inbox: the mail is no longer unread; the first take starts the turn.
    pub fn drained(&mut self, path: &AgentPath, inputs: &[Input], turn_start: bool) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.agents.get(path).is_none() {
            return effects;
        }
        if turn_start {
            self.turn_started(path, &mut effects);
        }
        self.taken(path, inputs, &mut effects);
        self.settle(&mut effects);
        effects
    }

    /// A turn ended: its result mail reaches the parent's inbox before its final status is
    /// set, then waits, wakes and quiescence are decided.
    pub fn turn_ended(&mut self, ended: &TurnEnded, fresh: &Fresh) -> Vec<Effect> {
        let mut effects = Vec::new();
        let Some(entry) = self.agents.get(&ended.path).cloned() else {
            return effects;
        };
        let (status, event, result) = match &ended.outcome {
            TurnOutcome::Completed { last_message } => (
                AgentStatus::Completed(last_message.clone()),
                Event::TurnCompleted {
                    path: ended.path.clone(),
                    last_message: last_message.clone(),
                },
                last_message.clone().unwrap_or_default(),
            ),
            TurnOutcome::Errored { reason } => (
                AgentStatus::Errored(reason.clone()),
                Event::TurnAborted {
                    path: ended.path.clone(),
                    reason: reason.clone(),
                },
                format!("errored: {reason}"),
            ),
            TurnOutcome::Interrupted { reason } => (
                AgentStatus::Interrupted(reason.clone()),
                Event::TurnAborted {
                    path: ended.path.clone(),
                    reason: reason.clone(),
                },
                format!("interrupted: {reason}"),
            ),
        };
        effects.push(Effect::Event(event));
        self.waits.remove(&ended.path);
        if entry.status == AgentStatus::Closed {
            // Closed while its turn ran: nothing more is said for it.
            self.settle(&mut effects);
            return effects;
        }
        // An internal agent's answer is not mail: the guardian's is its verdict.
        if let Some(parent) = &entry.parent
            && !entry.internal
            && self.open_agent(parent).is_some()
            && let Ok(mail) = self.mail_of(
                ended.path.clone(),
                parent.clone(),
                MailKind::Result,
                result,
                fresh,
            )
        {
            self.deliver(mail, &mut effects);
        }
        if let Some(entry) = self.agents.get_mut(&ended.path) {
            entry.status = status.clone();
            entry.interrupt = false;
        }
        self.set_busy(&ended.path, false);
        effects.push(Effect::Event(Event::AgentStatus {
            path: ended.path.clone(),
            status,
        }));
        if entry.internal {
            self.review_ended(&ended.outcome, &mut effects);
        }
        self.settle(&mut effects);
        effects
    }

    /// What the wait of `caller` is on: its targets, or its open children (the guardian
    /// aside).
    pub fn wait_targets(&self, caller: &AgentPath, wait: &Wait) -> Vec<AgentPath> {
        if !wait.children {
            return wait.targets.clone();
        }
        self.agents
            .children_of(caller)
            .iter()
            .filter_map(|child| self.agents.get(child))
            .filter(|entry| entry.is_open() && entry.role != arbor_roles::GUARDIAN_ROLE)
            .map(|entry| entry.path.clone())
            .collect()
    }

    /// `wait_agent`: over now, or registered for the session to answer later.
    pub fn wait(&mut self, request: &WaitRequest) -> (WaitNow, Vec<Effect>) {
        let mut targets = Vec::new();
        if request.targets.is_empty() {
            let children = Wait {
                targets: Vec::new(),
                children: true,
                all: request.all,
                awakeable: String::new(),
                busy: 0,
                approving: None,
                from: Vec::new(),
            };
            targets = self.wait_targets(&request.caller, &children);
        } else {
            for name in &request.targets {
                match self.resolve(&request.caller, name) {
                    Ok(entry) if request.caller.is_within(&entry.path) => {
                        let error = format!(
                            "wait_agent cannot wait on the caller itself or an ancestor: {}",
                            entry.path
                        );
                        return (WaitNow::Refused { error }, Vec::new());
                    }
                    Ok(entry) => targets.push(entry.path.clone()),
                    Err(error) => return (WaitNow::Refused { error }, Vec::new()),
                }
            }
        }
        if targets.is_empty() {
            let message = "no agents to wait for".to_string();
            return (WaitNow::Done { message }, Vec::new());
        }
        let busy = targets
            .iter()
            .filter(|target| self.agents.get(target).is_some_and(|entry| entry.busy))
            .count();
        let approving = targets
            .iter()
            .find(|target| {
                self.agents
                    .get(target)
                    .is_some_and(|entry| entry.status == AgentStatus::AwaitingApproval)
            })
            .cloned();
        let mut from: Vec<AgentPath> = Vec::new();
        for author in &request.unread_from {
            if targets.contains(author) && !from.contains(author) {
                from.push(author.clone());
            }
        }
        // A wait for the children keeps no list of them.
        let children = request.targets.is_empty();
        let wait = Wait {
            targets: if children { Vec::new() } else { targets },
            children,
            all: request.all,
            awakeable: request.awakeable.clone(),
            busy,
            approving,
            from,
        };
        if let Some(message) = self.wait_over(&request.caller, &wait) {
            return (WaitNow::Done { message }, Vec::new());
        }
        if let Some(entry) = self.agents.get_mut(&request.caller) {
            entry.status = AgentStatus::Waiting;
        }
        self.waits.insert(request.caller.clone(), wait);
        (WaitNow::Registered, Vec::new())
    }

    /// The caller's wait ran out: it is running again.
    pub fn unwait(&mut self, caller: &AgentPath) {
        if self.waits.remove(caller).is_some()
            && let Some(entry) = self.agents.get_mut(caller)
            && entry.status == AgentStatus::Waiting
        {
            entry.status = AgentStatus::Running;
        }
    }

    /// `interrupt_agent`: the target's running (or owed) turn stops at its next model-request
    /// boundary, a wait it is blocked in ends at once; an idle agent is left as it is.
    pub fn interrupt(&mut self, request: &CloseRequest) -> (ToolReply, Vec<Effect>) {
        let mut effects = Vec::new();
        let target = match self.resolve(&request.caller, &request.target) {
            Ok(entry) => entry.clone(),
            Err(error) => return (Err(error), effects),
        };
        let previous = target.status.clone();
        if target.busy && target.status != AgentStatus::Closed {
            if let Some(entry) = self.agents.get_mut(&target.path) {
                entry.interrupt = true;
                if matches!(
                    entry.status,
                    AgentStatus::Waiting | AgentStatus::AwaitingApproval
                ) {
                    entry.status = AgentStatus::Running;
                }
            }
            if let Some(wait) = self.waits.remove(&target.path) {
                effects.push(Effect::Resolve {
                    awakeable: wait.awakeable,
                    message: "interrupted".to_string(),
                });
            }
            self.release_waiters(&target.path, "interrupted", &mut effects);
        }
        self.settle(&mut effects);
        let reply = json!({"previous_status": previous}).to_string();
        (Ok(reply), effects)
    }

    /// Whether `path`'s turn must stop now (an interrupt it has not seen); clears it.
    pub fn take_interrupt(&mut self, path: &AgentPath) -> bool {
        self.agents
            .get_mut(path)
            .is_some_and(|entry| std::mem::take(&mut entry.interrupt))
    }

    /// `close_agent`: closes the target's edge and shuts down it and its open descendants.
    pub fn close(&mut self, request: &CloseRequest) -> (ToolReply, Vec<Effect>) {
        let mut effects = Vec::new();
        let target = match self.resolve(&request.caller, &request.target) {
            Ok(entry) => entry.clone(),
            Err(error) => return (Err(error), effects),
        };
        if target.path.is_root() {
            return (Err("root is not a spawned agent".to_string()), effects);
        }
        let previous = target.status.clone();
        // The branch, through each agent's children (the guardian under the root is only
        // closed by name).
        let mut closing = Vec::new();
        let mut stack = vec![target.path.clone()];
        while let Some(path) = stack.pop() {
            if let Some(entry) = self.agents.get(&path) {
                stack.extend(self.agents.children_of(&path).into_iter().rev());
                if entry.status != AgentStatus::Closed {
                    closing.push(path);
                }
            }
        }
        for path in closing {
            if let Some(entry) = self.agents.get_mut(&path) {
                entry.status = AgentStatus::Closed;
                if path == target.path {
                    entry.open = Some(false);
                }
            }
            self.set_busy(&path, false);
            self.waits.remove(&path);
            self.release_waiters(&path, "closed", &mut effects);
            if path == super::guardian_path() {
                self.guardian_closed(&mut effects);
            }
            effects.push(Effect::Close(path.clone()));
            effects.push(Effect::Event(Event::AgentStatus {
                path,
                status: AgentStatus::Closed,
            }));
        }
        self.settle(&mut effects);
        let reply = json!({"previous_status": previous}).to_string();
        (Ok(reply), effects)
    }
}
