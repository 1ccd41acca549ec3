//! Reviving an evicted agent: once the log's projections have written everything it recorded,
//! its rollout's last history window is read and replayed into its runtime (off the session's worker thread); a turn
//! the previous process died in is closed out first, so the history stays well formed.

use arbor_protocol::{AbortKind, RolloutItem, TurnAborted};
use arbor_rollout::log::Urgency;
use arbor_rollout::{PROCESS_EXIT, Replay, cut_call_outputs, read_last_window};

use crate::agent::{Agent, TurnSpan};
use crate::ctx::Ctx;
use crate::error::OrchestratorError;
use crate::worktrees::hooks::check_present;
use arbor_tree::Revival;

/// Loads `agent`'s runtime from its rollout; what the session learns from it.
pub async fn load(ctx: &Ctx, agent: &Agent) -> Result<Revival, OrchestratorError> {
    let failed = |err: String| {
        OrchestratorError::Refused(format!("revival of {} failed: {err}", agent.path()))
    };
    // It works in its worktree, which must still be there.
    check_present(agent).map_err(failed)?;
    // Everything the agent recorded is in its rollout once it is synced and projected.
    let recorded = agent.last_recorded();
    ctx.log
        .durable(recorded, Urgency::Now)
        .await
        .map_err(|err| failed(err.to_string()))?;
    ctx.projection
        .projected(recorded)
        .await
        .map_err(|err| failed(err.to_string()))?;
    let path = agent.identity.rollout_path.clone();
    let (notices, mut replay) = tokio::task::spawn_blocking(move || {
        // The last window is all a revival replays: a `compacted` line carries what it
        // needs of the lines before it.
        let read = read_last_window(&path)?;
        // The replay too: it is the CPU half of a revival, and the session's agents share
        // one worker thread.
        let replay = Replay::from_read(&read);
        Ok::<_, arbor_rollout::RolloutError>((read.notices, replay))
    })
    .await
    .map_err(|err| failed(err.to_string()))?
    .map_err(|err| failed(err.to_string()))?;
    for notice in &notices {
        tracing::warn!(path = %agent.path(), "{notice}");
    }
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
        agent.record(lines).map_err(|err| failed(err.to_string()))?;
    }
    let mut runtime = agent.runtime();
    runtime.history = replay.history.into();
    runtime.turns = replay
        .turns
        .iter()
        .map(|turn| TurnSpan {
            start: turn.start,
            final_answer: turn.final_answer.clone(),
        })
        .collect();
    runtime.turn_no = replay.turns.last().map_or(0, |turn| turn.number);
    runtime.measure = replay.measure;
    runtime.usage = replay.usage;
    Ok(Revival {
        last_message: replay.last_message.clone(),
        usage: replay.usage,
        consumed: replay.consumed.iter().copied().collect(),
    })
}
