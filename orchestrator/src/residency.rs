//! Residency: at most `max_resident` loaded child runtimes. The least recently used idle child
//! is evicted (task stopped, history dropped; identity, status and mailbox kept) when a slot
//! is needed, and an evicted agent is revived from its rollout when a turn is granted to it,
//! once the log's projections have written everything it recorded. The root and internal
//! agents never count and are never evicted.

use std::sync::Arc;

use std::sync::atomic::Ordering;

use arbor_protocol::{AbortKind, AgentStatus, Event, RolloutItem, TurnAborted};
use arbor_rollout::log::Urgency;
use arbor_rollout::{PROCESS_EXIT, Replay, cut_call_outputs, read_rollout};

use crate::agent::{Agent, TurnSpan};
use crate::runtime::Inner;
use crate::turn::agent_task;

/// Whether an agent takes a residency slot.
pub fn counts_for_residency(agent: &Agent) -> bool {
    !agent.path().is_root() && !agent.identity.internal
}

/// Loads an agent's runtime from its rollout if it has none, first making room under
/// `max_resident`. Concurrent calls for one agent are serialised; the second finds it resident.
pub async fn ensure_resident(inner: &Arc<Inner>, agent: &Arc<Agent>) -> Result<(), String> {
    if agent.is_resident() {
        inner.touch(agent);
        return Ok(());
    }
    let _guard = agent.residency_lock.lock().await;
    if agent.is_resident() {
        inner.touch(agent);
        return Ok(());
    }
    crate::worktrees::check_present(agent)
        .map_err(|err| format!("revival of {} failed: {err}", agent.path()))?;
    if counts_for_residency(agent) {
        make_room(inner, agent).await;
    }
    // Everything the agent recorded is in its rollout once it is synced and projected.
    let recorded = agent.last_recorded.load(Ordering::Acquire);
    let caught_up = async {
        inner
            .log
            .durable(recorded, Urgency::Now)
            .await
            .map_err(|err| err.to_string())?;
        inner.projection.projected(recorded).await
    };
    if let Err(err) = caught_up.await {
        inner.forget_resident(agent);
        return Err(format!("revival of {} failed: {err}", agent.path()));
    }
    let path = agent.identity.rollout_path.clone();
    let loaded = tokio::task::spawn_blocking(move || {
        let read = read_rollout(&path)?;
        // The replay too: it is the CPU half of a revival, and the session's agents share
        // one worker thread.
        let replay = Replay::from_read(&read);
        Ok::<_, arbor_rollout::RolloutError>((read.notices, replay))
    })
    .await
    .map_err(|err| format!("revival of {} failed: {err}", agent.path()));
    let (notices, mut replay) = match loaded {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(err)) => {
            inner.forget_resident(agent);
            return Err(format!("revival of {} failed: {err}", agent.path()));
        }
        Err(err) => {
            inner.forget_resident(agent);
            return Err(err);
        }
    };
    for notice in &notices {
        tracing::warn!(path = %agent.path(), "{notice}");
    }
    // A turn the previous process died in is closed out now, so history stays well formed.
    if let Some(turn) = replay.in_flight() {
        let outputs = cut_call_outputs(&replay.dangling_calls);
        replay.history.extend(outputs.iter().cloned());
        let mut lines: Vec<RolloutItem> =
            outputs.into_iter().map(RolloutItem::ResponseItem).collect();
        lines.push(RolloutItem::TurnAborted(TurnAborted {
            turn,
            kind: AbortKind::Interrupted,
            reason: PROCESS_EXIT.to_string(),
        }));
        agent
            .record(&lines)
            .map_err(|err| format!("revival of {} failed: {err}", agent.path()))?;
    }
    {
        let mut state = agent.state();
        state.history = replay.history.into();
        state.turns = replay
            .turns
            .iter()
            .map(|turn| TurnSpan {
                start: turn.start,
                final_answer: turn.final_answer.clone(),
            })
            .collect();
        state.turn_no = replay.turns.last().map_or(0, |turn| turn.number);
        if state.last_message.is_none() {
            state.last_message = replay.last_message.clone();
        }
        state.usage = replay.usage;
        // Mail the rollout shows consumed is never delivered again.
        state.mailbox.remove_ids(&replay.consumed);
    }
    let (task, go) = agent.install();
    inner
        .tracker
        .spawn(agent_task(Arc::clone(inner), Arc::clone(agent), go, task));
    inner.touch(agent);
    inner.events.emit(Event::AgentRevived {
        path: agent.path().clone(),
    });
    inner.bump();
    Ok(())
}

/// Waits until `agent` holds a residency slot, evicting the least recently used idle child
/// when the cap is reached.
pub async fn make_room(inner: &Arc<Inner>, agent: &Arc<Agent>) {
    let mut changes = inner.changed.subscribe();
    loop {
        changes.borrow_and_update();
        match inner.claim_slot(agent.id()) {
            Claim::Granted => return,
            Claim::Evict(victim) => {
                evict(inner, &victim).await;
            }
            Claim::Wait => {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The outcome of asking for a residency slot.
pub enum Claim {
    Granted,
    Evict(Arc<Agent>),
    Wait,
}

/// Whether an agent can be evicted now: resident, idle (or only queued), no live subprocess,
/// no pending approval.
pub fn evictable(inner: &Inner, agent: &Agent) -> bool {
    if !counts_for_residency(agent) || !agent.is_resident() || agent.live.count() > 0 {
        return false;
    }
    let (scheduled, running, status) = {
        let state = agent.state();
        (
            state.scheduled,
            state.turn_token.is_some(),
            state.status.clone(),
        )
    };
    !running
        && status != AgentStatus::AwaitingApproval
        && (!scheduled || inner.is_queued(agent.id()))
}

/// Evicts an agent: stop its task, drop its history (its rollout will hold it). False when it
/// could not be evicted after all.
pub async fn evict(inner: &Arc<Inner>, agent: &Arc<Agent>) -> bool {
    let _guard = agent.residency_lock.lock().await;
    if !evictable(inner, agent) {
        return false;
    }
    if !agent.uninstall() {
        return false;
    }
    {
        let mut state = agent.state();
        state.history = Default::default();
        state.turns = Vec::new();
    }
    inner.forget_resident(agent);
    inner.events.emit(Event::AgentEvicted {
        path: agent.path().clone(),
    });
    inner.bump();
    true
}
