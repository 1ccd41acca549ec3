//! An agent's rollout as the Restate engine keeps it: its `Agent` object's history and turn
//! marks (`Agent/history`) with its entry in the `Session` (`Session/agents`), turned into the
//! items a local rollout holds, in the local engine's order: the `session_meta` header, then
//! per turn `turn_started`, its items (mail it took as `mail_consumed`, the rest as
//! `response_item`), `turn_completed` or `turn_aborted`, and its `status`. Replaying them
//! (`arbor_rollout::Replay`) gives back the object's history exactly. Pure: tested without a
//! server.

use arbor_protocol::{
    AbortKind, AgentStatus, MailConsumed, ROLLOUT_FORMAT_VERSION, RolloutItem, SandboxMode,
    SessionMeta, StatusChanged, ThreadId, Timestamp, TurnAborted, TurnCompleted, TurnStarted,
};

use crate::wire::{AgentHistory, AgentRow, TurnMark, TurnOutcome};

/// The model name the local engine records for the scripted model.
pub const SCRIPTED_MODEL: &str = "scripted";

/// The header of `row`'s rollout in `session`; `cwd` when its object does not say.
pub fn header(session: &str, row: &AgentRow, history: &AgentHistory, cwd: &str) -> SessionMeta {
    let id = |text: &str| ThreadId::parse(text).unwrap_or_default();
    SessionMeta {
        thread_id: id(&row.id),
        session_id: id(session),
        parent_id: row.parent_id.as_deref().map(id),
        path: row.path.clone(),
        depth: u32::try_from(row.depth).unwrap_or(u32::MAX),
        nickname: row.nickname.clone(),
        role: row.role.clone(),
        model: row
            .model
            .clone()
            .unwrap_or_else(|| SCRIPTED_MODEL.to_string()),
        provider: None,
        effort: None,
        sandbox: history
            .meta
            .as_ref()
            .map_or(SandboxMode::WorkspaceWrite, |meta| meta.sandbox)
            .as_str()
            .to_string(),
        cwd: history.cwd.clone().unwrap_or_else(|| cwd.to_string()),
        format_version: ROLLOUT_FORMAT_VERSION,
        repository: None,
        handle: None,
    }
}

/// The items of `row`'s rollout, each with its time: the header (stamped when the agent's
/// first turn started, or `now`), its turns, and its status when the last turn left another.
pub fn items(
    session: &str,
    row: &AgentRow,
    history: &AgentHistory,
    cwd: &str,
    now: Timestamp,
) -> Vec<(Timestamp, RolloutItem)> {
    let stamp = history
        .turns
        .first()
        .map_or(now, |turn| Timestamp::from_millis(turn.started_ms));
    let mut out = vec![(
        stamp,
        RolloutItem::SessionMeta(Box::new(header(session, row, history, cwd))),
    )];
    let marks = if history.turns.is_empty() && !history.items.is_empty() {
        // Kept before turns were marked: one turn with everything, ended as the agent is.
        vec![TurnMark {
            number: 1,
            start: 0,
            end: history.items.len(),
            mails: Vec::new(),
            outcome: outcome_of(&row.status),
            started_ms: now.as_millis(),
            ended_ms: now.as_millis(),
        }]
    } else {
        history.turns.clone()
    };
    let mut last = None;
    for mark in &marks {
        turn(history, mark, &mut out);
        last = Some(status_after(mark));
    }
    let ended = marks
        .last()
        .map_or(now, |mark| Timestamp::from_millis(mark.ended_ms));
    if last.as_ref() != Some(&row.status) && row.status != AgentStatus::Closed {
        out.push((
            ended,
            RolloutItem::Status(StatusChanged {
                status: row.status.clone(),
            }),
        ));
    }
    out
}

fn turn(history: &AgentHistory, mark: &TurnMark, out: &mut Vec<(Timestamp, RolloutItem)>) {
    let started = Timestamp::from_millis(mark.started_ms);
    let ended = Timestamp::from_millis(mark.ended_ms);
    out.push((
        started,
        RolloutItem::TurnStarted(TurnStarted { turn: mark.number }),
    ));
    let end = mark.end.min(history.items.len());
    for index in mark.start.min(end)..end {
        let item = match mark.mails.iter().find(|(at, _)| *at == index) {
            Some((_, mail)) => {
                RolloutItem::MailConsumed(Box::new(MailConsumed { mail: mail.clone() }))
            }
            None => RolloutItem::ResponseItem(history.items[index].clone()),
        };
        out.push((started, item));
    }
    let end_item = match &mark.outcome {
        Some(TurnOutcome::Completed { last_message }) => {
            RolloutItem::TurnCompleted(TurnCompleted {
                turn: mark.number,
                last_message: last_message.clone(),
            })
        }
        Some(TurnOutcome::Errored { reason }) => RolloutItem::TurnAborted(TurnAborted {
            turn: mark.number,
            kind: AbortKind::Errored,
            reason: reason.clone(),
        }),
        Some(TurnOutcome::Interrupted { reason }) => RolloutItem::TurnAborted(TurnAborted {
            turn: mark.number,
            kind: AbortKind::Interrupted,
            reason: reason.clone(),
        }),
        None => RolloutItem::TurnAborted(TurnAborted {
            turn: mark.number,
            kind: AbortKind::Interrupted,
            reason: "closed".to_string(),
        }),
    };
    out.push((ended, end_item));
    out.push((
        ended,
        RolloutItem::Status(StatusChanged {
            status: status_after(mark),
        }),
    ));
}

fn status_after(mark: &TurnMark) -> AgentStatus {
    match &mark.outcome {
        Some(TurnOutcome::Completed { last_message }) => {
            AgentStatus::Completed(last_message.clone())
        }
        Some(TurnOutcome::Errored { reason }) => AgentStatus::Errored(reason.clone()),
        Some(TurnOutcome::Interrupted { reason }) => AgentStatus::Interrupted(reason.clone()),
        None => AgentStatus::Interrupted("closed".to_string()),
    }
}

fn outcome_of(status: &AgentStatus) -> Option<TurnOutcome> {
    Some(match status {
        AgentStatus::Completed(last_message) => TurnOutcome::Completed {
            last_message: last_message.clone(),
        },
        AgentStatus::Errored(reason) => TurnOutcome::Errored {
            reason: reason.clone(),
        },
        AgentStatus::Interrupted(reason) => TurnOutcome::Interrupted {
            reason: reason.clone(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
