//! Residency: at most `max_resident` loaded child runtimes. The least recently used idle child
//! is evicted (rollout synced, task stopped, runtime dropped; identity, status and mailbox
//! kept) when a slot is needed, and an evicted agent is revived from its rollout when a turn is
//! granted to it. The root and internal agents never count and are never evicted.

use std::sync::Arc;

use arbor_protocol::{AbortKind, AgentStatus, Event, RolloutItem, TurnAborted};
use arbor_rollout::{PROCESS_EXIT, Replay, RolloutWriter, cut_call_outputs, read_rollout};

use crate::agent::{Agent, TurnSpan, sync_writer};
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
    if counts_for_residency(agent) {
        make_room(inner, agent).await;
    }
    let path = agent.identity.rollout_path.clone();
    let store = inner.store.clone();
    let loaded = tokio::task::spawn_blocking(move || {
        let reopened = RolloutWriter::open_append(&path)?;
        let read = read_rollout(&path)?;
        let decided = crate::approval::undecided_lines(&store, &read);
        // The replay too: it is the CPU half of a revival, and the session's agents share
        // one worker thread.
        let replay = Replay::from_read(&read);
        Ok::<_, arbor_rollout::RolloutError>((reopened, read.notices, decided, replay))
    })
    .await
    .map_err(|err| format!("revival of {} failed: {err}", agent.path()));
    let (reopened, notices, decided, mut replay) = match loaded {
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
    for notice in notices.iter().chain(
        reopened
            .repair
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .iter(),
    ) {
        tracing::warn!(path = %agent.path(), "{notice}");
    }
    let mut writer = reopened.writer;
    // Approval requests answered by another process since this rollout was last written.
    if !decided.is_empty() {
        writer
            .append_batch(&decided)
            .map_err(|err| format!("revival of {} failed: {err}", agent.path()))?;
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
        writer
            .append_batch(&lines)
            .map_err(|err| format!("revival of {} failed: {err}", agent.path()))?;
    }
    let consumed_again = {
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
        state.mailbox.remove_ids(&replay.consumed)
    };
    for id in consumed_again {
        drop(inner.store.mark_mail_consumed(id));
    }
    let (task, go) = agent.install(writer);
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
    let (scheduled, running, settling, status) = {
        let state = agent.state();
        (
            state.scheduled,
            state.turn_token.is_some(),
            state.settling > 0,
            state.status.clone(),
        )
    };
    !running
        && !settling
        && status != AgentStatus::AwaitingApproval
        && (!scheduled || inner.is_queued(agent.id()))
}

/// Evicts an agent: sync its rollout, stop its task, drop its runtime. False when it could
/// not be evicted after all.
pub async fn evict(inner: &Arc<Inner>, agent: &Arc<Agent>) -> bool {
    let _guard = agent.residency_lock.lock().await;
    if !evictable(inner, agent) {
        return false;
    }
    let Some(rollout) = agent.uninstall() else {
        return false;
    };
    {
        let mut state = agent.state();
        state.history = Default::default();
        state.turns = Vec::new();
    }
    inner.forget_resident(agent);
    if let Err(err) = sync_writer(rollout).await {
        tracing::error!(path = %agent.path(), error = %err, "rollout sync before eviction failed");
    }
    inner.events.emit(Event::AgentEvicted {
        path: agent.path().clone(),
    });
    inner.bump();
    true
}
