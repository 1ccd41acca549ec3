//! The `Session` virtual object (key: the session id): the spawn graph, the agents' inboxes,
//! the waits, the event list and quiescence. Each exclusive handler loads the `Tree`, applies
//! one operation and carries out its effects; agents reach it by request-response calls that it
//! answers without ever calling an agent back (it only sends), so no cycle of calls can block.
//!
//! State keys: `tree` (the `Tree`'s small part: the waits, the approval requests, the event
//! count and the tail of lines not sent to their `Events` chunk yet), `agent<path>` (an agent's
//! `Entry`, with its inbox counters), `children<path>`, `thread<id>` (the path of a thread id),
//! `nicknames`, `inbox<path>#<n>` (an untaken input), `script#<n>` (the n-th entry of the
//! session's script). The session sets itself timers (the approval wait, the guardian's review
//! deadline) as delayed calls of its `timer` handler.

mod apply;

use arbor_protocol::{AgentPath, Event, Mail, Timestamp};
use restate_sdk::prelude::*;

use crate::tree::{Effect, Tree};
use crate::wire::{
    AgentRow, AnswerReply, AnswerRequest, ApprovalReply, ApprovalRequest, ApprovalRow,
    CloseRequest, DrainReply, DrainRequest, InboxReply, Input, MailRequest, OutsideMail,
    ResumeReply, ResumeRequest, SentMail, SpawnBatch, StartRequest, Summary, Timer, ToolReply,
    TurnEnded, WaitNow, WaitRequest,
};
use apply::{
    Reads, apply, entry_key, fresh, inbox, input_key, load, load_all, load_misses, operate,
    operate_given, operate_loaded, part_key, read, reads, unknown, wanted,
};

const TREE: &str = "tree";
/// The nicknames drawn so far (read and written by registrations only).
const NICKNAMES: &str = "nicknames";

/// The key of the `Agent` object of `path` in `session`: `<session><path>`, e.g.
/// `0190…/root/worker_a`.
pub fn agent_key(session: &str, path: &AgentPath) -> String {
    format!("{session}{path}")
}

/// The `Session` object.
#[derive(Debug, Default)]
pub struct Session;

#[restate_sdk::object(name = "Session", lazy_state)]
impl Session {
    /// Starts the session: registers the root and gives it the prompt. Starting a session
    /// that exists already is refused.
    #[handler]
    async fn start(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<StartRequest>,
    ) -> HandlerResult<()> {
        if ctx.get::<Json<Tree>>(TREE).await?.is_some() {
            return Err(TerminalError::new_with_code(
                409,
                format!("session {} exists already", ctx.key()),
            )
            .into());
        }
        let mut request = request.into_inner();
        // The script is kept entry by entry: an agent's wake carries only the part it reads.
        let parts = match request.config.script.take() {
            Some(text) => arbor_model::ScriptParts::split(&text)
                .map_err(|error| TerminalError::new_with_code(400, error.to_string()))?,
            None => arbor_model::ScriptParts {
                matches: Vec::new(),
                parts: Vec::new(),
            },
        };
        let fresh = fresh(&ctx).await?;
        let (mut tree, effects) = Tree::start(ctx.key(), request.prompt, request.config, &fresh);
        // The inboxes read before the parts are named: the parts are at hand, not to be read.
        let mut reads = reads(&ctx, wanted(&tree, &effects)).await?;
        tree.script = parts.matches;
        for (n, part) in parts.parts.into_iter().enumerate() {
            ctx.set(&part_key(n), part.clone());
            reads.parts.insert(n, part);
        }
        apply(&ctx, &mut tree, effects, reads, fresh.now_ms);
        Ok(())
    }

    /// The `spawn_agent` calls of one response that follow each other, in one call.
    #[handler]
    async fn spawn_many(
        &self,
        ctx: ObjectContext<'_>,
        batch: Json<SpawnBatch>,
    ) -> HandlerResult<Json<Vec<ToolReply>>> {
        let SpawnBatch { spawns, events } = batch.into_inner();
        let given = spawns.first().and_then(|spawn| spawn.fresh.clone());
        let drawn: Vec<String> = ctx
            .get::<Json<Vec<String>>>(NICKNAMES)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let mut nicknames = Vec::new();
        let caller = spawns.first().map(|spawn| spawn.caller.clone());
        let hints: Vec<&AgentPath> = caller.iter().collect();
        let replies = operate_given(&ctx, given, events, &hints, |tree, fresh| {
            // Each run of the operation (again after a miss) starts from the names stored.
            tree.nicknames = drawn.clone();
            let mut replies = Vec::new();
            let mut effects = Vec::new();
            for spawn in &spawns {
                let (reply, more) = tree.spawn(spawn, spawn.fresh.as_ref().unwrap_or(fresh));
                replies.push(reply);
                effects.extend(more);
            }
            nicknames = tree.nicknames.clone();
            (replies, effects)
        })
        .await?;
        ctx.set(NICKNAMES, Json(nicknames));
        Ok(Json(replies))
    }

    #[handler]
    async fn mail(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<MailRequest>,
    ) -> HandlerResult<Json<ToolReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[&request.author], |tree, fresh| {
            tree.mail(&request, fresh)
        })
        .await?;
        Ok(Json(reply))
    }

    /// A turn takes its inbox (at each model-request boundary). An interrupted turn takes
    /// nothing: its mail waits for the next turn.
    #[handler]
    async fn drain(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<DrainRequest>,
    ) -> HandlerResult<Json<DrainReply>> {
        let request = request.into_inner();
        let mut base = load(&ctx, ctx.key(), &[&request.path]).await?;
        let fresh = match request.fresh.clone() {
            Some(fresh) => fresh,
            None => fresh(&ctx).await?,
        };
        base.now = Timestamp::from_millis(fresh.now_ms);
        // The inputs taken, and the end of the inbox they were taken up to.
        let mut taken: Option<(Vec<Input>, u64)> = None;
        let (mut tree, effects, inputs, interrupted) = loop {
            let mut tree = base.clone();
            let closed = tree.agents.get(&request.path).is_none_or(|entry| {
                entry.status == arbor_protocol::AgentStatus::Closed
                    || request
                        .thread_id
                        .as_ref()
                        .is_some_and(|thread| *thread != entry.thread_id)
            });
            let misses = tree.agents.take_misses();
            if !misses.is_empty() {
                load_misses(&ctx, &mut base, misses).await?;
                continue;
            }
            if closed {
                if !request.events.is_empty() {
                    let events = request.events.into_iter().map(Effect::Event).collect();
                    apply(&ctx, &mut tree, events, Reads::default(), fresh.now_ms);
                }
                return Ok(Json(DrainReply {
                    inputs: Vec::new(),
                    closed,
                    interrupted: false,
                }));
            }
            let interrupted = tree.take_interrupt(&request.path);
            let inputs = if interrupted {
                Vec::new()
            } else {
                if taken.is_none() {
                    let counters = tree
                        .agents
                        .get(&request.path)
                        .map_or((0, 0), |entry| entry.inbox);
                    let inputs = inbox(&ctx, &request.path, counters).await?;
                    taken = Some((inputs, counters.1));
                }
                taken
                    .as_ref()
                    .map(|(inputs, _)| inputs.clone())
                    .unwrap_or_default()
            };
            let effects: Vec<Effect> = request
                .events
                .iter()
                .cloned()
                .map(Effect::Event)
                .chain(tree.drained(&request.path, &inputs, request.turn_start))
                .collect();
            let misses = tree.agents.take_misses();
            if misses.is_empty() {
                break (tree, effects, inputs, interrupted);
            }
            load_misses(&ctx, &mut base, misses).await?;
        };
        if !interrupted
            && let Some((_, tail)) = taken
            && let Some(entry) = tree.agents.get_mut(&request.path)
        {
            for n in entry.inbox.0..tail {
                ctx.clear(&input_key(&request.path, n));
            }
            entry.inbox.0 = tail;
        }
        let reads = reads(&ctx, wanted(&tree, &effects)).await?;
        apply(&ctx, &mut tree, effects, reads, fresh.now_ms);
        Ok(Json(DrainReply {
            inputs,
            closed: false,
            interrupted,
        }))
    }

    /// Events a turn reports (its messages, tool calls and results).
    #[handler]
    async fn record(&self, ctx: ObjectContext<'_>, events: Json<Vec<Event>>) -> HandlerResult<()> {
        let events = events.into_inner();
        operate_given(&ctx, None, events, &[], |_, _| ((), Vec::new())).await
    }

    #[handler]
    async fn turn_ended(
        &self,
        ctx: ObjectContext<'_>,
        ended: Json<TurnEnded>,
    ) -> HandlerResult<()> {
        let mut ended = ended.into_inner();
        let (given, events) = (ended.fresh.take(), std::mem::take(&mut ended.events));
        let path = ended.path.clone();
        let parent = path.parent();
        let mut hints = vec![&path];
        hints.extend(parent.as_ref());
        operate_given(&ctx, given, events, &hints, |tree, fresh| {
            ((), tree.turn_ended(&ended, fresh))
        })
        .await
    }

    #[handler]
    async fn wait(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<WaitRequest>,
    ) -> HandlerResult<Json<WaitNow>> {
        let mut request = request.into_inner();
        let base = load(&ctx, ctx.key(), &[&request.caller]).await?;
        // Whose mail already waits: read from the caller's inbox, once, not kept in the tree.
        let counters = base
            .agents
            .get(&request.caller)
            .map_or((0, 0), |entry| entry.inbox);
        let inputs = inbox(&ctx, &request.caller, counters).await?;
        request.unread_from = inputs
            .into_iter()
            .filter_map(|input| match input {
                Input::Mail { mail } => Some(mail.author),
                Input::User { .. } => None,
            })
            .collect();
        let now =
            operate_loaded(&ctx, base, None, Vec::new(), |tree, _| tree.wait(&request)).await?;
        Ok(Json(now))
    }

    #[handler]
    async fn unwait(&self, ctx: ObjectContext<'_>, caller: Json<AgentPath>) -> HandlerResult<()> {
        let caller = caller.into_inner();
        operate(&ctx, &[&caller], |tree, _| {
            tree.unwait(&caller);
            ((), Vec::new())
        })
        .await
    }

    #[handler]
    async fn close(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<CloseRequest>,
    ) -> HandlerResult<Json<ToolReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[&request.caller], |tree, _| tree.close(&request)).await?;
        Ok(Json(reply))
    }

    #[handler]
    async fn interrupt(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<CloseRequest>,
    ) -> HandlerResult<Json<ToolReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[&request.caller], |tree, _| tree.interrupt(&request)).await?;
        Ok(Json(reply))
    }

    /// How far the session is: its event count, whether its run completed, the root's
    /// answer; what the follower reads between pages of `Events`.
    #[handler]
    async fn summary(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Summary>> {
        let Some(tree) = ctx.get::<Json<Tree>>(TREE).await? else {
            return Err(unknown(ctx.key()));
        };
        let mut tree = tree.into_inner();
        let root = ctx
            .get::<Json<crate::tree::Entry>>(&entry_key(&AgentPath::root()))
            .await?
            .map(Json::into_inner);
        tree.agents.load(AgentPath::root(), root);
        Ok(Json(tree.summary()))
    }

    /// The agents, as `arbor agents --json` lists them.
    #[handler]
    async fn agents(&self, ctx: ObjectContext<'_>) -> HandlerResult<Json<Vec<AgentRow>>> {
        let mut tree = load(&ctx, ctx.key(), &[]).await?;
        load_all(&ctx, &mut tree).await?;
        Ok(Json(tree.rows()))
    }

    /// An `exec_command` that needs approval: decided now, or pending (the requester's turn
    /// waits on the awakeable it sent).
    #[handler]
    async fn request_approval(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<ApprovalRequest>,
    ) -> HandlerResult<Json<ApprovalReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[&request.path], |tree, fresh| {
            tree.request_approval(&request, fresh)
        })
        .await?;
        Ok(Json(reply))
    }

    /// `arbor approve|deny`.
    #[handler]
    async fn answer(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<AnswerRequest>,
    ) -> HandlerResult<Json<Result<AnswerReply, String>>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[], |tree, _| tree.answer(&request)).await?;
        Ok(Json(reply))
    }

    /// A timer the session set for itself.
    #[handler]
    async fn timer(&self, ctx: ObjectContext<'_>, timer: Json<Timer>) -> HandlerResult<()> {
        let timer = timer.into_inner();
        operate(&ctx, &[], |tree, _| ((), tree.timer(&timer))).await
    }

    /// `arbor send` and `arbor followup`: mail from `/root`.
    #[handler]
    async fn send(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<OutsideMail>,
    ) -> HandlerResult<Json<Result<SentMail, String>>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[], |tree, fresh| tree.send_outside(&request, fresh)).await?;
        Ok(Json(reply))
    }

    /// `arbor resume SESSION PROMPT`: a new run of the root.
    #[handler]
    async fn resume(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<ResumeRequest>,
    ) -> HandlerResult<Json<ResumeReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, &[], |tree, _| tree.resume(&request)).await?;
        Ok(Json(reply))
    }

    /// Every approval request and its decision, as `arbor approvals --json` lists them.
    #[handler]
    async fn approvals(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> HandlerResult<Json<Vec<ApprovalRow>>> {
        let Some(tree) = ctx.get::<Json<Tree>>(TREE).await? else {
            return Err(unknown(ctx.key()));
        };
        Ok(Json(tree.into_inner().approval_rows()))
    }

    /// The mail `target` (a path from `/root` or a thread id) has not taken yet, in arrival
    /// order.
    #[handler]
    async fn inbox(
        &self,
        ctx: ObjectContext<'_>,
        target: Json<String>,
    ) -> HandlerResult<Json<Result<InboxReply, String>>> {
        let mut tree = load(&ctx, ctx.key(), &[]).await?;
        let target = target.into_inner();
        let found = read(&ctx, &mut tree, |tree| {
            tree.find_agent(&target)
                .map(|entry| (entry.path.clone(), entry.inbox))
        })
        .await?;
        let (path, counters) = match found {
            Ok(found) => found,
            Err(error) => return Ok(Json(Err(error))),
        };
        let inputs = inbox(&ctx, &path, counters).await?;
        let mail: Vec<Mail> = inputs
            .into_iter()
            .filter_map(|input| match input {
                Input::Mail { mail } => Some(mail),
                Input::User { .. } => None,
            })
            .collect();
        Ok(Json(Ok(InboxReply { path, mail })))
    }
}
