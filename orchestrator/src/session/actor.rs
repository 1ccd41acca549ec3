//! The session task: the one owner of the session's state ([`Core`]). It takes [`Msg`]s from
//! turns, tools, the facade and other processes (the log's lines of theirs), feeds them to the
//! core, and carries out the effects in order: runtimes installed, revived and evicted, turns
//! told to go or to stop, status lines appended, events emitted, requests answered.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use arbor_protocol::{
    AgentClosed, AgentStatus, Event, RolloutItem, RolloutLine, StatusChanged, ThreadId,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::handle::{Msg, Spawned};
use super::nicknames::Nicknames;
use super::{revive, spawn};
use crate::agent::{AgentMsg, Grant, TurnControl};
use crate::ctx::Ctx;
use crate::error::OrchestratorError;
use crate::turn::agent_task;
use crate::worktrees::close::release;
use crate::worktrees::hooks::ingest;
use arbor_tree::{Answer, Core, Effect, Input, Ticket, TurnEnd};

/// A resident agent's task, as the session task reaches it.
struct Resident {
    tx: mpsc::UnboundedSender<AgentMsg>,
    task: CancellationToken,
}

/// The session task's own state around the core.
pub struct Actor {
    ctx: Arc<Ctx>,
    core: Core,
    replies: HashMap<Ticket, oneshot::Sender<Answer>>,
    /// Spawns answered once their agent is installed.
    spawns: HashMap<Ticket, (oneshot::Sender<Result<Spawned, OrchestratorError>>, Spawned)>,
    residents: HashMap<ThreadId, Resident>,
    turns: HashMap<ThreadId, Arc<TurnControl>>,
    pub(super) nicknames: Nicknames,
    /// Inputs the effects of an input gave rise to, handled after it.
    queue: VecDeque<Input>,
}

impl Actor {
    pub fn new(ctx: Arc<Ctx>, core: Core) -> Self {
        let seed = Nicknames::seed_of(ctx.session_id);
        Self {
            ctx,
            core,
            replies: HashMap::new(),
            spawns: HashMap::new(),
            residents: HashMap::new(),
            turns: HashMap::new(),
            nicknames: Nicknames::new(seed),
            queue: VecDeque::new(),
        }
    }

    /// Runs until [`Msg::Shutdown`]: messages in arrival order, other processes' lines as the
    /// log's writer reads them back.
    pub async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Msg>,
        mut external: mpsc::UnboundedReceiver<RolloutLine>,
    ) {
        let mut batch = Vec::with_capacity(64);
        let mut lines_open = true;
        loop {
            tokio::select! {
                biased;
                count = rx.recv_many(&mut batch, 64) => {
                    if count == 0 {
                        return;
                    }
                    for msg in batch.drain(..) {
                        if matches!(msg, Msg::Shutdown) {
                            return;
                        }
                        self.on(msg);
                    }
                }
                line = external.recv(), if lines_open => match line {
                    Some(line) => {
                        self.external(line);
                        self.ctx.ingested.send_modify(|applied| *applied += 1);
                    }
                    None => lines_open = false,
                },
            }
        }
    }

    fn on(&mut self, msg: Msg) {
        match msg {
            Msg::Input(input) => self.feed(input),
            Msg::Ask {
                input,
                ticket,
                reply,
            } => {
                self.replies.insert(ticket, reply);
                self.feed(input);
            }
            Msg::Spawn { spec, reply } => {
                match spawn::make(&self.ctx, &mut self.nicknames, *spec) {
                    Err(err) => {
                        let _ = reply.send(Err(err));
                    }
                    Ok(made) => {
                        let ticket = made.registration.ticket.unwrap_or_default();
                        self.spawns.insert(ticket, (reply, made.spawned.clone()));
                        self.feed(arbor_tree::Input::Register(made.registration));
                        if let Some(task) = made.task {
                            crate::mail::announce(&self.ctx, &task);
                            self.feed(Input::Mail {
                                recipient: made.spawned.agent.id(),
                                mail: task,
                            });
                        }
                    }
                }
            }
            Msg::Close {
                target,
                closer,
                reply,
            } => {
                let result = self.close(target, closer);
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
            }
            Msg::Restore(tree) => {
                for restored in tree {
                    if let Some(nickname) = &restored.agent.identity.meta.nickname {
                        self.nicknames.mark_used(&restored.role, nickname);
                    }
                    self.feed(Input::Register(restored.registration));
                }
            }
            Msg::Shutdown => {}
        }
    }

    /// Closes `target`: its close line (a line of the closer's), then the decision.
    fn close(
        &mut self,
        target: ThreadId,
        closer: Option<ThreadId>,
    ) -> Result<AgentStatus, OrchestratorError> {
        let entry = self
            .core
            .entry(target)
            .ok_or_else(|| OrchestratorError::Refused(format!("agent `{target}` not found")))?;
        if entry.closed {
            return Err(OrchestratorError::Refused(format!(
                "agent {} is closed",
                entry.path
            )));
        }
        let previous = entry.status.clone();
        if let Some(closer) = closer.and_then(|id| self.ctx.registry.get(id)) {
            closer.record([RolloutItem::AgentClosed(AgentClosed {
                target_id: target,
                target: entry.path.clone(),
                previous_status: previous.clone(),
            })])?;
        }
        self.feed(Input::Close { target });
        Ok(previous)
    }

    /// What another process appended to the log: mail, closes, interrupts, answers, worktree
    /// merges.
    fn external(&mut self, line: RolloutLine) {
        match line.item {
            RolloutItem::UserMail(user) if self.ctx.registry.get(user.recipient_id).is_some() => {
                crate::mail::announce(&self.ctx, &user.mail);
                self.feed(Input::Mail {
                    recipient: user.recipient_id,
                    mail: user.mail,
                });
            }
            RolloutItem::UserClose(target) => {
                let open = self.core.entry(target.target_id).is_some_and(|e| !e.closed);
                if open {
                    match self.close(target.target_id, None) {
                        Ok(_) => self.release_worktrees(target.target_id),
                        Err(err) => {
                            tracing::error!(error = %err, "close from another process failed");
                        }
                    }
                }
            }
            RolloutItem::UserInterrupt(target) => self.feed(Input::Interrupt {
                target: target.target_id,
                reason: "interrupted".to_string(),
                ticket: None,
            }),
            RolloutItem::UserAnswer(answer) => {
                if answer.approve && answer.for_session {
                    crate::approval::approve_for_session(&self.ctx, &answer.request_id);
                }
                crate::approval::answered(&self.ctx, &answer.request_id, answer.approve);
            }
            RolloutItem::Worktree(fact) => {
                if let Some(thread) = line.thread {
                    ingest(&self.ctx, thread, &fact);
                }
            }
            // Other lines of other processes carry nothing this process acts on.
            _ => {}
        }
    }

    /// Releases the worktrees of an agent another process closed (`arbor close`), as
    /// `close_agent` does: git work, so on a task of its own, never in the session task.
    fn release_worktrees(&self, target: ThreadId) {
        let Some(agent) = self.ctx.registry.get(target) else {
            return;
        };
        let ctx = Arc::clone(&self.ctx);
        self.ctx.tracker.spawn(async move {
            release(&ctx, &agent).await;
        });
    }

    /// Feeds an input, and then the inputs its effects gave rise to.
    fn feed(&mut self, input: Input) {
        self.queue.push_back(input);
        while let Some(input) = self.queue.pop_front() {
            match &input {
                Input::TurnEnded { agent, .. } => {
                    self.turns.remove(agent);
                }
                Input::Revived {
                    agent,
                    result: Ok(_),
                } => {
                    self.install(*agent);
                    if let Some(agent) = self.ctx.registry.get(*agent) {
                        self.ctx.events.emit(Event::AgentRevived {
                            path: agent.path().clone(),
                        });
                    }
                }
                _ => {}
            }
            for effect in self.core.handle(input) {
                self.execute(effect);
            }
        }
    }

    fn execute(&mut self, effect: Effect) {
        let ctx = Arc::clone(&self.ctx);
        match effect {
            Effect::Install { agent } => self.install(agent),
            Effect::Revive { agent } => {
                let Some(handle) = ctx.registry.get(agent) else {
                    return;
                };
                let task_ctx = Arc::clone(&ctx);
                ctx.tracker.spawn(async move {
                    let result = revive::load(&task_ctx, &handle)
                        .await
                        .map_err(|err| err.to_string());
                    task_ctx.session.send(Input::Revived { agent, result });
                });
            }
            Effect::Evict { agent } => {
                if let Some(resident) = self.residents.remove(&agent) {
                    resident.task.cancel();
                }
                if let Some(handle) = ctx.registry.get(agent) {
                    let mut runtime = handle.runtime();
                    runtime.history = Default::default();
                    runtime.turns = Vec::new();
                    drop(runtime);
                    ctx.events.emit(Event::AgentEvicted {
                        path: handle.path().clone(),
                    });
                }
            }
            Effect::Go {
                agent,
                input,
                mails,
            } => self.go(agent, input, mails),
            Effect::Hand { agent, mails } => {
                if let Some(resident) = self.residents.get(&agent) {
                    for mail in mails {
                        let _ = resident.tx.send(AgentMsg::Mail(Box::new(mail)));
                    }
                }
            }
            Effect::Cancel { agent, reason } => {
                if let Some(control) = self.turns.get(&agent) {
                    control.cancel(&reason);
                }
            }
            Effect::Close { agent } => {
                if let Some(handle) = ctx.registry.get(agent) {
                    ctx.registry.release_path(&handle);
                    handle.token.cancel();
                }
            }
            Effect::StopAll => ctx.root_token.cancel(),
            Effect::Status { agent, status } => {
                let line = RolloutItem::Status(StatusChanged {
                    status: status.clone(),
                });
                if let Err(err) = ctx.log.append(agent, [line]) {
                    tracing::error!(error = %err, "status not recorded");
                }
                if let Some(handle) = ctx.registry.get(agent) {
                    ctx.events.emit(Event::AgentStatus {
                        path: handle.path().clone(),
                        status,
                    });
                }
            }
            Effect::Emit(event) => ctx.events.emit(event),
            Effect::BudgetSpent => ctx.spend_budget(),
            Effect::Reply { ticket, answer } => {
                if let Some((reply, spawned)) = self.spawns.remove(&ticket) {
                    let _ = reply.send(Ok(spawned));
                } else if let Some(reply) = self.replies.remove(&ticket) {
                    let _ = reply.send(answer);
                }
            }
        }
    }

    /// Gives an agent its task.
    fn install(&mut self, id: ThreadId) {
        let Some(agent) = self.ctx.registry.get(id) else {
            return;
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let task = agent.token.child_token();
        self.ctx
            .tracker
            .spawn(agent_task(Arc::clone(&self.ctx), agent, rx, task.clone()));
        self.residents.insert(id, Resident { tx, task });
    }

    /// Tells an agent's task to run its granted turn; a task that is gone ends it unstarted.
    fn go(
        &mut self,
        id: ThreadId,
        input: Vec<arbor_protocol::ResponseItem>,
        mails: Vec<arbor_protocol::Mail>,
    ) {
        let sent = match (self.residents.get(&id), self.ctx.registry.get(id)) {
            (Some(resident), Some(agent)) => {
                let control = TurnControl::new(&agent.token);
                self.turns.insert(id, Arc::clone(&control));
                resident
                    .tx
                    .send(AgentMsg::Go(Box::new(Grant {
                        control,
                        input,
                        mails,
                    })))
                    .is_ok()
            }
            _ => false,
        };
        if !sent {
            let path = self.ctx.registry.get(id).map(|a| a.path().to_string());
            let reason = format!(
                "{} stopped before its turn could start",
                path.unwrap_or_default()
            );
            tracing::error!(error = %reason, "turn could not start");
            self.queue.push_back(Input::TurnEnded {
                agent: id,
                end: TurnEnd {
                    status: AgentStatus::Errored(reason),
                    completed: None,
                    result: None,
                    started: false,
                },
            });
        }
    }
}
