//! The `Agent` virtual object (key: `<session><agent path>`): one agent, with at most one
//! running turn (its handlers are exclusive). `wake` runs a turn (`turn.rs`); `close` marks it
//! closed; `history` (shared) reads its model history. An interrupt is the session's: it
//! marks the agent, and the running turn stops at its next model-request boundary (`drain`
//! says so), so there is no `interrupt` handler here to wait behind the turn.
//!
//! Mail does not go through an exclusive handler of the recipient: it would wait behind the
//! running turn. Mail is put in the recipient's inbox in the `Session` object, and the turn
//! takes its inbox at every model-request boundary (`Session/drain`).
//!
//! State keys: `history` (the model history after the last ended turn), `turns` (the ended
//! turns, `TurnMark`s: with the history they are the agent's rollout, which `arbor log` and
//! `arbor export` read), `meta` (who the agent is and its cwd, from its last wake), `served` (how many
//! model responses the path has consumed: the scripted model's cursor, which belongs to the
//! path, as on the local engine), `closed`, `thread` (the thread id of the agent the object
//! holds). A closed agent's path may be taken again by a new agent (behaviour §1): its first
//! wake carries another thread id, and the object starts it fresh (`turn::adopt`).

use std::sync::Arc;

use arbor_protocol::ResponseItem;
use restate_sdk::prelude::*;

use crate::wire::{AgentHistory, AgentMeta, TurnMark, WakeRequest};
use crate::worker::Worker;

pub(crate) const HISTORY: &str = "history";
pub(crate) const SERVED: &str = "served";
pub(crate) const CLOSED: &str = "closed";
pub(crate) const THREAD: &str = "thread";
pub(crate) const TURNS: &str = "turns";
pub(crate) const META: &str = "meta";

/// The `Agent` object, with the worker process's shared parts.
#[derive(Debug)]
pub struct Agent {
    worker: Arc<Worker>,
}

impl Agent {
    pub fn new(worker: Arc<Worker>) -> Self {
        Self { worker }
    }
}

#[restate_sdk::object(name = "Agent")]
impl Agent {
    /// Runs one turn: takes the inbox, asks the model, runs the calls, until an answer.
    #[handler]
    async fn wake(&self, ctx: ObjectContext<'_>, request: Json<WakeRequest>) -> HandlerResult<()> {
        crate::turn::run(&self.worker, &ctx, request.into_inner()).await
    }

    /// The agent is closed: later wakes do nothing.
    #[handler]
    async fn close(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        ctx.set(CLOSED, true);
        Ok(())
    }

    /// The agent's model history and response count.
    #[handler]
    async fn history(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<AgentHistory>> {
        let items = ctx
            .get::<Json<Vec<ResponseItem>>>(HISTORY)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let responses = ctx.get::<u64>(SERVED).await?.unwrap_or(0);
        let closed = ctx.get::<bool>(CLOSED).await?.unwrap_or(false);
        let turns = ctx
            .get::<Json<Vec<TurnMark>>>(TURNS)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let (meta, cwd) = match ctx.get::<Json<(AgentMeta, String)>>(META).await? {
            Some(held) => {
                let (meta, cwd) = held.into_inner();
                (Some(meta), Some(cwd))
            }
            None => (None, None),
        };
        Ok(Json(AgentHistory {
            items,
            responses: usize::try_from(responses).unwrap_or(usize::MAX),
            closed,
            turns,
            meta,
            cwd,
        }))
    }
}
