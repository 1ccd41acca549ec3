//! What every `Session` handler shares: loading the `Tree` (its small part, the root, and
//! each agent an operation reads, run again until it misses none: `tree/agents.rs`), reading
//! the inbox counters its effects append to, and carrying the effects out in order (inboxes,
//! wakes, closes, awakeables, timers, events) before storing the tree and the changed agents.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use arbor_protocol::{AgentPath, Event, EventLine, Timestamp};
use restate_sdk::prelude::*;

use super::{SessionClient, TREE, agent_key};
use crate::agent::AgentClient;
use crate::events::{EventsClient, chunk_key};
use crate::tree::{Effect, Entry, Fresh, Misses, Tree};
use crate::wire::{AgentMeta, Input, WakeRequest};

/// A handler's refusal for a session that was never started.
pub(super) fn unknown(session: &str) -> HandlerError {
    TerminalError::new_with_code(404, format!("unknown session {session}")).into()
}

/// The state key of the agent at `path`.
pub(super) fn entry_key(path: &AgentPath) -> String {
    format!("agent{path}")
}

/// The state key of the children of the agent at `path`.
fn children_key(path: &AgentPath) -> String {
    format!("children{path}")
}

/// The state key naming the path of thread `id`.
fn thread_key(id: &str) -> String {
    format!("thread{id}")
}

/// The state key of the `n`-th input of an agent's inbox.
pub(super) fn input_key(path: &AgentPath, n: u64) -> String {
    format!("inbox{path}#{n}")
}

/// The tree's small part with the root loaded, and the agents of `hints` (those the
/// operation will read, when the request names them): one round trip, every read sent
/// before the first answer is awaited.
pub(super) async fn load(
    ctx: &ObjectContext<'_>,
    key: &str,
    hints: &[&AgentPath],
) -> Result<Tree, HandlerError> {
    let tree = ctx.get::<Json<Tree>>(TREE);
    let mut paths: BTreeSet<AgentPath> = [AgentPath::root()].into();
    paths.extend(hints.iter().map(|path| (*path).clone()));
    let keys: Vec<String> = paths.iter().map(entry_key).collect();
    let entries: Vec<_> = keys.iter().map(|key| ctx.get::<Json<Entry>>(key)).collect();
    let mut tree = match tree.await? {
        Some(tree) => tree.into_inner(),
        None => return Err(unknown(key)),
    };
    for (path, entry) in paths.into_iter().zip(entries) {
        tree.agents.load(path, entry.await?.map(Json::into_inner));
    }
    Ok(tree)
}

/// Loads what an operation missed: the paths of thread ids first (an agent they name is
/// missed by the next run), then the children lists and the agents, every read of the batch
/// sent before the first answer is awaited (one round trip).
pub(super) async fn load_misses(
    ctx: &ObjectContext<'_>,
    tree: &mut Tree,
    misses: Misses,
) -> Result<(), HandlerError> {
    let Misses {
        paths,
        threads,
        children,
    } = misses;
    let thread_keys: Vec<String> = threads.iter().map(|id| thread_key(id)).collect();
    let children_keys: Vec<String> = children.iter().map(children_key).collect();
    let entry_keys: Vec<String> = paths.iter().map(entry_key).collect();
    let thread_gets: Vec<_> = thread_keys
        .iter()
        .map(|key| ctx.get::<Json<AgentPath>>(key))
        .collect();
    let children_gets: Vec<_> = children_keys
        .iter()
        .map(|key| ctx.get::<Json<Vec<AgentPath>>>(key))
        .collect();
    let entry_gets: Vec<_> = entry_keys
        .iter()
        .map(|key| ctx.get::<Json<Entry>>(key))
        .collect();
    for (thread, get) in threads.into_iter().zip(thread_gets) {
        tree.agents
            .load_thread(thread, get.await?.map(Json::into_inner));
    }
    for (path, get) in children.into_iter().zip(children_gets) {
        let children = get.await?.map(Json::into_inner).unwrap_or_default();
        tree.agents.load_children(path, children);
    }
    for (path, get) in paths.into_iter().zip(entry_gets) {
        tree.agents.load(path, get.await?.map(Json::into_inner));
    }
    Ok(())
}

/// Runs a read on the tree until it misses nothing it needs.
pub(super) async fn read<R>(
    ctx: &ObjectContext<'_>,
    tree: &mut Tree,
    op: impl Fn(&Tree) -> R,
) -> Result<R, HandlerError> {
    loop {
        let answer = op(tree);
        let misses = tree.agents.take_misses();
        if misses.is_empty() {
            return Ok(answer);
        }
        load_misses(ctx, tree, misses).await?;
    }
}

/// Every agent of the tree loaded (for the listings).
pub(super) async fn load_all(ctx: &ObjectContext<'_>, tree: &mut Tree) -> Result<(), HandlerError> {
    let paths = ctx
        .get_keys()
        .await?
        .into_iter()
        .filter_map(|key| {
            key.strip_prefix("agent")
                .and_then(|path| AgentPath::parse(path).ok())
        })
        .collect();
    let misses = Misses {
        paths,
        ..Misses::default()
    };
    load_misses(ctx, tree, misses).await
}

/// The fresh ids and time one operation may use, journaled so a retry sees the same ones.
pub(super) async fn fresh(ctx: &ObjectContext<'_>) -> Result<Fresh, HandlerError> {
    let fresh = ctx
        .run(|| async { Ok(Json(Fresh::now())) })
        .name("fresh")
        .await?;
    Ok(fresh.into_inner())
}

/// The state key of the `n`-th entry of the session's script (a script of that entry alone).
pub(super) fn part_key(n: usize) -> String {
    format!("script#{n}")
}

/// Which entry of the session's script the agent at `path` reads, when it is loaded.
fn part_of(tree: &Tree, path: &AgentPath) -> Option<usize> {
    let entry = tree.agents.get(path)?;
    arbor_model::part_for(&tree.script, path, &entry.role)
}

/// What `Agent/wake` carries for `path`: the session's settings, with the agent's part of
/// the script (not the whole script) when the session has one.
fn wake_request(
    tree: &Tree,
    path: &AgentPath,
    inputs: Vec<Input>,
    parts: &Parts,
) -> Option<WakeRequest> {
    let entry = tree.agents.get(path)?;
    let mut config = tree.config.clone();
    if !tree.script.is_empty() {
        let part = part_of(tree, path).and_then(|n| parts.get(&n));
        config.script = Some(
            part.map_or(arbor_model::NO_PART, String::as_str)
                .to_string(),
        );
    }
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
        config,
        inputs,
    })
}

/// The parts of the script the agents that `effects` wake read, by entry.
pub(super) type Parts = HashMap<usize, String>;

/// What carrying out an operation's effects needs read first (the inboxes' counters are in
/// the agents' entries, loaded already).
#[derive(Debug, Default)]
pub(super) struct Reads {
    pub parts: Parts,
}

/// The untaken inputs of the agent at `path`, whose inbox counters are `(head, tail)`, in
/// arrival order: every read sent before the first answer is awaited.
pub(super) async fn inbox(
    ctx: &ObjectContext<'_>,
    path: &AgentPath,
    (head, tail): (u64, u64),
) -> Result<Vec<Input>, HandlerError> {
    let keys: Vec<String> = (head..tail).map(|n| input_key(path, n)).collect();
    let gets: Vec<_> = keys.iter().map(|key| ctx.get::<Json<Input>>(key)).collect();
    let mut inputs = Vec::new();
    for get in gets {
        if let Some(input) = get.await? {
            inputs.push(input.into_inner());
        }
    }
    Ok(inputs)
}

/// What carrying out an operation's effects needs read first: the script parts of the agents
/// they wake.
#[derive(Debug, Default)]
pub(super) struct Wanted {
    parts: BTreeSet<usize>,
}

/// What carrying out `effects` on `tree` needs read.
pub(super) fn wanted(tree: &Tree, effects: &[Effect]) -> Wanted {
    let mut wanted = Wanted::default();
    for effect in effects {
        if let Effect::Wake(path) = effect {
            wanted.parts.extend(part_of(tree, path));
        }
    }
    wanted
}

/// Reads what is [`wanted`], every read sent before the first answer is awaited.
pub(super) async fn reads(ctx: &ObjectContext<'_>, wanted: Wanted) -> Result<Reads, HandlerError> {
    let Wanted { parts } = wanted;
    let part_keys: Vec<String> = parts.iter().map(|n| part_key(*n)).collect();
    let part_gets: Vec<_> = part_keys.iter().map(|key| ctx.get::<String>(key)).collect();
    let mut read = Reads::default();
    for (n, get) in parts.into_iter().zip(part_gets) {
        if let Some(part) = get.await? {
            read.parts.insert(n, part);
        }
    }
    Ok(read)
}

/// Carries out `effects` in order, then stores the inboxes and the tree.
pub(super) fn apply(
    ctx: &ObjectContext<'_>,
    tree: &mut Tree,
    effects: Vec<Effect>,
    reads: Reads,
    now_ms: i64,
) {
    let Reads { parts } = reads;
    let mut lines = Vec::new();
    // Whose inbox held inputs before this operation (a wake hands over to the others).
    let stored: BTreeSet<AgentPath> = effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Wake(path) => Some(path),
            _ => None,
        })
        .filter(|path| {
            tree.agents
                .get(path)
                .is_some_and(|entry| entry.inbox.0 < entry.inbox.1)
        })
        .cloned()
        .collect();
    let effects = tree.hand_over(effects, |path| stored.contains(path));
    for effect in effects {
        match effect {
            Effect::Deliver(path, input) => {
                if let Some(entry) = tree.agents.get_mut(&path) {
                    ctx.set(&input_key(&path, entry.inbox.1), Json(input));
                    entry.inbox.1 += 1;
                }
            }
            Effect::Wake(path) => {
                if let Some(request) = wake_request(tree, &path, Vec::new(), &parts) {
                    ctx.object_client::<AgentClient>(agent_key(&tree.session, &path))
                        .wake(Json(request))
                        .send();
                }
            }
            Effect::HandOver(path, inputs) => {
                if let Some(request) = wake_request(tree, &path, inputs, &parts) {
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
    keep_lines(ctx, tree, lines);
    for entry in tree.agents.changed() {
        ctx.set(&entry_key(&entry.path), Json(entry.clone()));
    }
    for (path, children) in tree.agents.changed_children() {
        ctx.set(&children_key(path), Json(children.clone()));
    }
    for entry in tree.agents.inserted() {
        ctx.set(&thread_key(&entry.thread_id), Json(entry.path.clone()));
    }
    ctx.set(TREE, Json(tree.clone()));
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

/// A batch of lines sent to their chunks once it holds this many lines,
const TAIL_LINES: usize = 32;
/// or this many bytes.
const TAIL_BYTES: usize = 16 * 1024;

/// Keeps `lines` (numbered in order) in the tree's tail, and sends the tail to its chunks once
/// it is long enough: one send every few operations instead of one each.
fn keep_lines(ctx: &ObjectContext<'_>, tree: &mut Tree, lines: Vec<EventLine>) {
    for line in lines {
        tree.tail_bytes += serde_json::to_vec(&line).map_or(0, |bytes| bytes.len());
        tree.tail.push(line);
    }
    if tree.tail.len() >= TAIL_LINES || tree.tail_bytes >= TAIL_BYTES {
        let first = tree.events - tree.tail.len() as u64;
        let mut lines = std::mem::take(&mut tree.tail);
        for (n, line) in lines.iter_mut().enumerate() {
            line.lsn = first + n as u64;
        }
        tree.tail_bytes = 0;
        send_lines(ctx, &tree.session, lines);
    }
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

/// Loads the tree (with the agents of `hints`), runs `op` (again, with what it missed loaded, until it misses nothing),
/// carries out its effects.
pub(super) async fn operate<R>(
    ctx: &ObjectContext<'_>,
    hints: &[&AgentPath],
    op: impl FnMut(&mut Tree, &Fresh) -> (R, Vec<Effect>),
) -> Result<R, HandlerError> {
    operate_given(ctx, None, Vec::new(), hints, op).await
}

/// [`operate`] with the fresh values the caller's journaled step made (when it sent them: no
/// step of the session's own then) and the caller's events, recorded first. `hints` are the
/// agents the operation is known to read, loaded with the tree.
pub(super) async fn operate_given<R>(
    ctx: &ObjectContext<'_>,
    given: Option<Fresh>,
    events: Vec<Event>,
    hints: &[&AgentPath],
    op: impl FnMut(&mut Tree, &Fresh) -> (R, Vec<Effect>),
) -> Result<R, HandlerError> {
    let base = load(ctx, ctx.key(), hints).await?;
    operate_loaded(ctx, base, given, events, op).await
}

/// [`operate_given`] on a tree loaded already.
pub(super) async fn operate_loaded<R>(
    ctx: &ObjectContext<'_>,
    mut base: Tree,
    given: Option<Fresh>,
    events: Vec<Event>,
    mut op: impl FnMut(&mut Tree, &Fresh) -> (R, Vec<Effect>),
) -> Result<R, HandlerError> {
    let fresh = match given {
        Some(fresh) => fresh,
        None => fresh(ctx).await?,
    };
    base.now = Timestamp::from_millis(fresh.now_ms);
    let (mut tree, reply, effects) = loop {
        let mut tree = base.clone();
        let (reply, effects) = op(&mut tree, &fresh);
        let misses = tree.agents.take_misses();
        if misses.is_empty() {
            break (tree, reply, effects);
        }
        load_misses(ctx, &mut base, misses).await?;
    };
    let effects: Vec<Effect> = events
        .into_iter()
        .map(Effect::Event)
        .chain(effects)
        .collect();
    let reads = reads(ctx, wanted(&tree, &effects)).await?;
    apply(ctx, &mut tree, effects, reads, fresh.now_ms);
    Ok(reply)
}
