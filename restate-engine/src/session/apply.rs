//! What every `Session` handler shares: loading the `Tree` (with the operation's fresh ids
//! and time, journaled), reading the inboxes its effects append to, and carrying the effects
//! out in order (inboxes, wakes, closes, awakeables, timers, events) before storing the tree.

use std::collections::HashMap;
use std::time::Duration;

use arbor_protocol::{AgentPath, Event, EventLine, Timestamp};
use restate_sdk::prelude::*;

use super::{SUMMARY, SessionClient, TREE, agent_key, inbox_key};
use crate::agent::AgentClient;
use crate::events::{EventsClient, chunk_key};
use crate::tree::{Effect, Fresh, Tree};
use crate::wire::{AgentMeta, Input, WakeRequest};

/// A handler's refusal for a session that was never started.
pub(super) fn unknown(session: &str) -> HandlerError {
    TerminalError::new_with_code(404, format!("unknown session {session}")).into()
}

pub(super) async fn load(ctx: &ObjectContext<'_>) -> Result<Tree, HandlerError> {
    match ctx.get::<Json<Tree>>(TREE).await? {
        Some(tree) => Ok(tree.into_inner()),
        None => Err(unknown(ctx.key())),
    }
}

/// The fresh ids and time one operation may use, journaled so a retry sees the same ones.
pub(super) async fn fresh(ctx: &ObjectContext<'_>) -> Result<Fresh, HandlerError> {
    let fresh = ctx
        .run(|| async { Ok(Json(Fresh::now())) })
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
pub(super) type Inboxes = HashMap<String, Vec<Input>>;

/// Reads the inboxes the effects will append to, so `apply` can write them whole.
pub(super) async fn read_inboxes(
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
pub(super) fn apply(
    ctx: &ObjectContext<'_>,
    tree: &mut Tree,
    effects: Vec<Effect>,
    mut inboxes: Inboxes,
    now_ms: i64,
) {
    let mut touched = Vec::new();
    let mut lines = Vec::new();
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
            Effect::Decide { awakeable, decided } => {
                ctx.resolve_awakeable(&awakeable, Json(decided));
            }
            Effect::Later { after_ms, timer } => {
                ctx.object_client::<SessionClient>(tree.session.clone())
                    .timer(Json(timer))
                    .send_after(Duration::from_millis(after_ms));
            }
            Effect::Event(event) => lines.push(line(tree, event, now_ms)),
        }
    }
    send_lines(ctx, &tree.session, lines);
    for key in touched {
        if let Some(inputs) = inboxes.remove(&key) {
            ctx.set(&key, Json(inputs));
        }
    }
    ctx.set(TREE, Json(tree.clone()));
    ctx.set(SUMMARY, Json(tree.summary()));
}

/// The next event line of the session.
fn line(tree: &mut Tree, event: Event, now_ms: i64) -> EventLine {
    let line = EventLine {
        event,
        ts: Timestamp::from_millis(now_ms),
        lsn: tree.events,
    };
    tree.events += 1;
    line
}

/// Sends `lines` (numbered in order) to their chunks, one one-way call per chunk.
fn send_lines(ctx: &ObjectContext<'_>, session: &str, lines: Vec<EventLine>) {
    let mut batch: Vec<(u64, EventLine)> = Vec::new();
    for line in lines {
        if let Some((first, _)) = batch.first()
            && chunk_key(session, *first) != chunk_key(session, line.lsn)
        {
            let key = chunk_key(session, *first);
            ctx.object_client::<EventsClient>(key)
                .append(Json(std::mem::take(&mut batch)))
                .send();
        }
        batch.push((line.lsn, line));
    }
    if let Some((first, _)) = batch.first() {
        ctx.object_client::<EventsClient>(chunk_key(session, *first))
            .append(Json(batch))
            .send();
    }
}

/// Loads the tree, runs `op`, carries out its effects.
pub(super) async fn operate<R>(
    ctx: &ObjectContext<'_>,
    op: impl FnOnce(&mut Tree, &Fresh) -> (R, Vec<Effect>),
) -> Result<R, HandlerError> {
    operate_given(ctx, None, Vec::new(), op).await
}

/// [`operate`] with the fresh values the caller's journaled step made (when it sent them: no
/// step of the session's own then) and the caller's events, recorded first.
pub(super) async fn operate_given<R>(
    ctx: &ObjectContext<'_>,
    given: Option<Fresh>,
    events: Vec<Event>,
    op: impl FnOnce(&mut Tree, &Fresh) -> (R, Vec<Effect>),
) -> Result<R, HandlerError> {
    let mut tree = load(ctx).await?;
    let fresh = match given {
        Some(fresh) => fresh,
        None => fresh(ctx).await?,
    };
    tree.now = Timestamp::from_millis(fresh.now_ms);
    let (reply, effects) = op(&mut tree, &fresh);
    let effects: Vec<Effect> = events
        .into_iter()
        .map(Effect::Event)
        .chain(effects)
        .collect();
    let inboxes = read_inboxes(ctx, &effects).await?;
    apply(ctx, &mut tree, effects, inboxes, fresh.now_ms);
    Ok(reply)
}
