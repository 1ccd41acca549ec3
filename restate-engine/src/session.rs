//! The `Session` virtual object (key: the session id): the spawn graph, the agents' inboxes,
//! the waits, the event list and quiescence. Each exclusive handler loads the `Tree`, applies
//! one operation and carries out its effects; agents reach it by request-response calls that it
//! answers without ever calling an agent back (it only sends), so no cycle of calls can block.
//!
//! State keys: `tree` (the `Tree`), `inbox<path>` (an agent's untaken inputs, in arrival
//! order), `event/<n>` (the n-th event line).

use std::collections::HashMap;

use arbor_protocol::{AgentPath, Event, EventLine, MailId, ThreadId, Timestamp};
use restate_sdk::prelude::*;

use crate::agent::AgentClient;
use crate::tree::{Effect, Fresh, Tree};
use crate::wire::{
    AgentMeta, AgentRow, CloseRequest, DrainReply, DrainRequest, EventsPage, EventsRequest, Input,
    MailRequest, SpawnRequest, StartRequest, ToolReply, TurnEnded, WaitNow, WaitRequest,
    WakeRequest,
};

const TREE: &str = "tree";

/// The key of the `Agent` object of `path` in `session`: `<session><path>`, e.g.
/// `0190…/root/worker_a`.
pub fn agent_key(session: &str, path: &AgentPath) -> String {
    format!("{session}{path}")
}

fn inbox_key(path: &AgentPath) -> String {
    format!("inbox{path}")
}

fn event_key(n: u64) -> String {
    format!("event/{n}")
}

/// The `Session` object.
#[derive(Debug, Default)]
pub struct Session;

/// A handler's refusal for a session that was never started.
fn unknown(session: &str) -> HandlerError {
    TerminalError::new_with_code(404, format!("unknown session {session}")).into()
}

async fn load(ctx: &ObjectContext<'_>) -> Result<Tree, HandlerError> {
    match ctx.get::<Json<Tree>>(TREE).await? {
        Some(tree) => Ok(tree.into_inner()),
        None => Err(unknown(ctx.key())),
    }
}

/// The fresh ids and time one operation may use, journaled so a retry sees the same ones.
async fn fresh(ctx: &ObjectContext<'_>) -> Result<Fresh, HandlerError> {
    let fresh = ctx
        .run(|| async {
            Ok(Json(Fresh {
                thread_id: ThreadId::new().as_string(),
                mail_id: MailId::new().to_string(),
                now_ms: Timestamp::now().as_millis(),
            }))
        })
        .name("fresh")
        .await?;
    Ok(fresh.into_inner())
}

/// What `Agent/wake` carries for `path`.
fn wake_request(tree: &Tree, path: &AgentPath) -> Option<WakeRequest> {
    let entry = tree.agents.get(path)?;
    let roles = arbor_roles::RoleSet::builtin();
    let instructions = roles
        .get(&entry.role)
        .map(|role| role.developer_instructions.clone())
        .unwrap_or_default();
    Some(WakeRequest {
        meta: AgentMeta {
            session: tree.session.clone(),
            thread_id: entry.thread_id.clone(),
            path: path.clone(),
            nickname: entry.nickname.clone(),
            role: entry.role.clone(),
            instructions,
            tools: entry.tools.clone(),
            sandbox: entry.sandbox,
        },
        config: tree.config.clone(),
    })
}

/// The inboxes `effects` append to, read before they are carried out, by key.
type Inboxes = HashMap<String, Vec<Input>>;

/// Reads the inboxes the effects will append to, so `apply` can write them whole.
async fn read_inboxes(
    ctx: &ObjectContext<'_>,
    effects: &[Effect],
) -> Result<Inboxes, HandlerError> {
    let mut read = Inboxes::new();
    for effect in effects {
        if let Effect::Deliver(path, _) = effect {
            let key = inbox_key(path);
            if read.contains_key(&key) {
                continue;
            }
            let inputs = ctx
                .get::<Json<Vec<Input>>>(&key)
                .await?
                .map(Json::into_inner)
                .unwrap_or_default();
            read.insert(key, inputs);
        }
    }
    Ok(read)
}

/// Carries out `effects` in order, then stores the inboxes and the tree.
fn apply(
    ctx: &ObjectContext<'_>,
    tree: &mut Tree,
    effects: Vec<Effect>,
    mut inboxes: Inboxes,
    now_ms: i64,
) {
    let mut touched = Vec::new();
    for effect in effects {
        match effect {
            Effect::Deliver(path, input) => {
                let key = inbox_key(&path);
                if !touched.contains(&key) {
                    touched.push(key.clone());
                }
                inboxes.entry(key).or_default().push(input);
            }
            Effect::Wake(path) => {
                if let Some(request) = wake_request(tree, &path) {
                    ctx.object_client::<AgentClient>(agent_key(&tree.session, &path))
                        .wake(Json(request))
                        .send();
                }
            }
            Effect::Close(path) => {
                ctx.object_client::<AgentClient>(agent_key(&tree.session, &path))
                    .close()
                    .send();
            }
            Effect::Resolve { awakeable, message } => {
                ctx.resolve_awakeable(&awakeable, message);
            }
            Effect::Event(event) => record(ctx, tree, event, now_ms),
        }
    }
    for key in touched {
        if let Some(inputs) = inboxes.remove(&key) {
            ctx.set(&key, Json(inputs));
        }
    }
    ctx.set(TREE, Json(tree.clone()));
}

fn record(ctx: &ObjectContext<'_>, tree: &mut Tree, event: Event, now_ms: i64) {
    let line = EventLine {
        event,
        ts: Timestamp::from_millis(now_ms),
        lsn: tree.events,
    };
    ctx.set(&event_key(tree.events), Json(line));
    tree.events += 1;
}

/// Loads the tree, runs `op`, carries out its effects.
async fn operate<R>(
    ctx: &ObjectContext<'_>,
    op: impl FnOnce(&mut Tree, &Fresh) -> (R, Vec<Effect>),
) -> Result<R, HandlerError> {
    let mut tree = load(ctx).await?;
    let fresh = fresh(ctx).await?;
    let (reply, effects) = op(&mut tree, &fresh);
    let inboxes = read_inboxes(ctx, &effects).await?;
    apply(ctx, &mut tree, effects, inboxes, fresh.now_ms);
    Ok(reply)
}

#[restate_sdk::object(name = "Session")]
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
        let request = request.into_inner();
        let fresh = fresh(&ctx).await?;
        let (mut tree, effects) = Tree::start(ctx.key(), request.prompt, request.config, &fresh);
        let inboxes = read_inboxes(&ctx, &effects).await?;
        apply(&ctx, &mut tree, effects, inboxes, fresh.now_ms);
        Ok(())
    }

    #[handler]
    async fn spawn(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<SpawnRequest>,
    ) -> HandlerResult<Json<ToolReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, |tree, fresh| tree.spawn(&request, fresh)).await?;
        Ok(Json(reply))
    }

    #[handler]
    async fn mail(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<MailRequest>,
    ) -> HandlerResult<Json<ToolReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, |tree, fresh| tree.mail(&request, fresh)).await?;
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
        let mut tree = load(&ctx).await?;
        let closed = tree
            .agents
            .get(&request.path)
            .is_none_or(|entry| entry.status == arbor_protocol::AgentStatus::Closed);
        if closed {
            return Ok(Json(DrainReply {
                inputs: Vec::new(),
                closed,
                interrupted: false,
            }));
        }
        let interrupted = tree.take_interrupt(&request.path);
        let key = inbox_key(&request.path);
        let inputs = if interrupted {
            Vec::new()
        } else {
            let inputs = ctx
                .get::<Json<Vec<Input>>>(&key)
                .await?
                .map(Json::into_inner)
                .unwrap_or_default();
            ctx.clear(&key);
            inputs
        };
        let fresh = fresh(&ctx).await?;
        let effects = tree.drained(&request.path, &inputs, request.turn_start);
        let inboxes = read_inboxes(&ctx, &effects).await?;
        apply(&ctx, &mut tree, effects, inboxes, fresh.now_ms);
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
        operate(&ctx, |_, _| {
            ((), events.into_iter().map(Effect::Event).collect())
        })
        .await
    }

    #[handler]
    async fn turn_ended(
        &self,
        ctx: ObjectContext<'_>,
        ended: Json<TurnEnded>,
    ) -> HandlerResult<()> {
        let ended = ended.into_inner();
        operate(&ctx, |tree, fresh| ((), tree.turn_ended(&ended, fresh))).await
    }

    #[handler]
    async fn wait(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<WaitRequest>,
    ) -> HandlerResult<Json<WaitNow>> {
        let request = request.into_inner();
        let now = operate(&ctx, |tree, _| tree.wait(&request)).await?;
        Ok(Json(now))
    }

    #[handler]
    async fn unwait(&self, ctx: ObjectContext<'_>, caller: Json<AgentPath>) -> HandlerResult<()> {
        let caller = caller.into_inner();
        operate(&ctx, |tree, _| {
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
        let reply = operate(&ctx, |tree, _| tree.close(&request)).await?;
        Ok(Json(reply))
    }

    #[handler]
    async fn interrupt(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<CloseRequest>,
    ) -> HandlerResult<Json<ToolReply>> {
        let request = request.into_inner();
        let reply = operate(&ctx, |tree, _| tree.interrupt(&request)).await?;
        Ok(Json(reply))
    }

    /// Events from number `from` on, with whether the session has completed.
    #[handler]
    async fn events(
        &self,
        ctx: SharedObjectContext<'_>,
        request: Json<EventsRequest>,
    ) -> HandlerResult<Json<EventsPage>> {
        let request = request.into_inner();
        let Some(tree) = ctx.get::<Json<Tree>>(TREE).await? else {
            return Err(unknown(ctx.key()));
        };
        let tree = tree.into_inner();
        let end = tree.events.min(request.from.saturating_add(request.limit));
        let mut events = Vec::new();
        for n in request.from..end {
            if let Some(line) = ctx.get::<Json<EventLine>>(&event_key(n)).await? {
                events.push(line.into_inner());
            }
        }
        let root_status = tree
            .agents
            .get(&AgentPath::root())
            .map(|root| root.status.clone())
            .filter(|status| status.is_final());
        Ok(Json(EventsPage {
            events,
            next: end.max(request.from),
            completed: tree.completed && end == tree.events,
            final_message: tree.final_message.clone(),
            root_status,
        }))
    }

    /// The agents, as `arbor agents --json` lists them.
    #[handler]
    async fn agents(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Vec<AgentRow>>> {
        let Some(tree) = ctx.get::<Json<Tree>>(TREE).await? else {
            return Err(unknown(ctx.key()));
        };
        Ok(Json(tree.into_inner().rows()))
    }
}
