//! The agent task and the turn loop: take input, ask the model, run the tool calls, repeat
//! until a final answer; then end the turn (`turn_end`).

use std::sync::Arc;

use arbor_model::{AgentIdentity, Finish, ModelRequest};
use arbor_protocol::{
    AbortKind, AgentStatus, Event, MailConsumed, ResponseItem, RolloutItem, TurnStarted,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, TurnSpan};
use crate::runtime::Inner;
use crate::sampling::{self, output_limit};
use crate::tools::{self, Call};
use crate::turn_end::{Outcome, finish_turn};

/// The task of one resident agent: runs a turn each time it is told to, until cancelled.
/// Boxed, because tools the turn runs may create agents (whose tasks are this function).
pub fn agent_task(
    inner: Arc<Inner>,
    agent: Arc<Agent>,
    go: mpsc::UnboundedReceiver<()>,
    task: CancellationToken,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(agent_loop(inner, agent, go, task))
}

async fn agent_loop(
    inner: Arc<Inner>,
    agent: Arc<Agent>,
    mut go: mpsc::UnboundedReceiver<()>,
    task: CancellationToken,
) {
    loop {
        tokio::select! {
            biased;
            () = task.cancelled() => break,
            message = go.recv() => match message {
                Some(()) => run_turn(&inner, &agent).await,
                None => break,
            },
        }
    }
    if !agent.token.is_cancelled() {
        // Evicted: a queued turn stays queued and revives the agent when it is granted.
        return;
    }
    // Closed or shutting down: nothing its commands started may outlive it.
    agent.live.kill_all();
    // Closed or shutting down: a turn granted or queued but never started will not run now.
    let abandoned = {
        let mut state = agent.state();
        let abandoned = state.scheduled && state.turn_token.is_none();
        state.scheduled &= !abandoned;
        abandoned
    };
    if abandoned {
        inner.abandon_turn(&agent);
    }
}

async fn run_turn(inner: &Arc<Inner>, agent: &Arc<Agent>) {
    let token = agent.token.child_token();
    inner.touch(agent);
    let turn = {
        let mut state = agent.state();
        state.turn_no += 1;
        state.turn_token = Some(token.clone());
        state.cancel_reason = None;
        state.last_model_error = None;
        state.approvals_open = 0;
        state.mailbox.start_turn();
        let start = state.history.len();
        state.turns.push(TurnSpan {
            start,
            final_answer: None,
        });
        state.turn_no
    };
    let outcome = match agent.record(&[RolloutItem::TurnStarted(TurnStarted { turn })]) {
        Err(err) => Outcome::Aborted(AbortKind::Errored, err.to_string()),
        Ok(_) => {
            inner.events.emit(Event::TurnStarted {
                path: agent.path().clone(),
            });
            inner.set_status(agent, AgentStatus::Running);
            tokio::select! {
                outcome = turn_body(inner, agent) => outcome,
                () = token.cancelled() => {
                    let reason = agent.state().cancel_reason.take();
                    Outcome::Aborted(AbortKind::Interrupted, reason.unwrap_or_else(|| inner.stop_reason()))
                }
            }
        }
    };
    if matches!(outcome, Outcome::Aborted(AbortKind::Interrupted, _)) {
        // An interrupted turn leaves no process of its agent's running.
        agent.live.kill_all();
    }
    finish_turn(inner, agent, turn, outcome);
}

async fn turn_body(inner: &Arc<Inner>, agent: &Arc<Agent>) -> Outcome {
    // The agent's MCP servers are listed before its first request (its tool list needs them).
    tools::mcp::prepare(inner, agent).await;
    // Responses cut at the output limit without a call, one after another.
    let mut cut_in_a_row = 0;
    for _ in 0..inner.config.max_turn_responses {
        if inner.over_budget() {
            let limit = inner.config.budget_tokens.unwrap_or_default();
            return Outcome::Aborted(
                AbortKind::Errored,
                format!("token budget of {limit} reached"),
            );
        }
        if let Err(err) = take_input(inner, agent) {
            return Outcome::Aborted(AbortKind::Errored, err);
        }
        let request = build_request(inner, agent);
        let sampled = sampling::sample(inner, agent, &request).await;
        // The request shares the history: let go of it before appending, so the append
        // happens in place instead of copying the whole history.
        drop(request);
        let response = match sampled {
            Ok(response) => response,
            Err(failure) => {
                let reason = failure.to_string();
                agent.state().last_model_error = failure.into_model_error();
                return Outcome::Aborted(AbortKind::Errored, reason);
            }
        };
        let rest = &response.items[response.recorded..];
        let mut lines: Vec<RolloutItem> = rest
            .iter()
            .cloned()
            .map(RolloutItem::ResponseItem)
            .collect();
        if let Some(usage) = response.usage {
            lines.push(RolloutItem::Usage(usage));
        }
        if let Err(err) = agent.record(&lines) {
            return Outcome::Aborted(AbortKind::Errored, err.to_string());
        }
        agent.state().history.extend(rest.iter().cloned());
        if let Some(usage) = response.usage {
            let (agent_total, tree_total) = inner.add_usage(agent, usage);
            inner.events.emit(Event::Usage {
                path: agent.path().clone(),
                usage,
                agent_total,
                tree_total,
            });
        }
        // Events in the order the model produced the items; those of the items recorded while
        // the response streamed are already out.
        let mut calls = Vec::new();
        let mut last_text = None;
        for (at, item) in response.items.iter().enumerate() {
            let announce = at >= response.recorded;
            match item {
                ResponseItem::Message { role, content } if role == "assistant" => {
                    if content.trim().is_empty() {
                        continue;
                    }
                    if announce {
                        sampling::emit_message(inner, agent, content);
                    }
                    last_text = Some(content.clone());
                }
                ResponseItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } => {
                    let call = Call {
                        call_id: call_id.clone(),
                        name: name.clone(),
                        arguments: arguments.clone(),
                    };
                    if announce && !response.early.contains_key(call_id) {
                        sampling::emit_call(inner, agent, &call);
                    }
                    calls.push(call);
                }
                ResponseItem::Message { .. }
                | ResponseItem::FunctionCallOutput { .. }
                | ResponseItem::Reasoning { .. } => {}
            }
        }
        let cut = response.finish == Finish::OutputLimit;
        let limit = inner
            .config
            .output_limit(&agent.identity.role, &agent.identity.model);
        cut_in_a_row = if cut && calls.is_empty() {
            cut_in_a_row + 1
        } else {
            0
        };
        if cut_in_a_row >= output_limit::MAX_CUT_IN_A_ROW {
            return Outcome::Aborted(AbortKind::Errored, output_limit::gave_up(limit));
        }
        if cut && calls.is_empty() {
            // Not a final answer: the model is told, and goes on.
            if let Err(err) = add_note(agent, output_limit::note(limit, false)) {
                return Outcome::Aborted(AbortKind::Errored, err);
            }
            continue;
        }
        if calls.is_empty() {
            let mut state = agent.state();
            let same_turn_input = !state.pending_input.is_empty();
            state.mailbox.final_answer(same_turn_input);
            if let Some(span) = state.turns.last_mut() {
                span.final_answer = last_text.clone();
            }
            return Outcome::Completed(last_text);
        }
        if last_text.is_some() {
            // A commentary preamble before tool calls is same-turn work: delivery stays open.
            agent.state().mailbox.reopen();
        }
        let outputs = tools::run_calls(inner, agent, &calls, response.early).await;
        let items: Vec<ResponseItem> = calls
            .iter()
            .zip(outputs)
            .map(|(call, output)| ResponseItem::FunctionCallOutput {
                call_id: call.call_id.clone(),
                output,
            })
            .collect();
        let lines: Vec<RolloutItem> = items
            .iter()
            .cloned()
            .map(RolloutItem::ResponseItem)
            .collect();
        if let Err(err) = agent.record(&lines) {
            return Outcome::Aborted(AbortKind::Errored, err.to_string());
        }
        agent.state().history.extend(items.iter().cloned());
        for (call, item) in calls.iter().zip(&items) {
            if let ResponseItem::FunctionCallOutput { output, .. } = item {
                inner.events.emit(Event::ToolResult {
                    path: agent.path().clone(),
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                    output: output.clone(),
                });
            }
        }
        if cut && let Err(err) = add_note(agent, output_limit::note(limit, true)) {
            return Outcome::Aborted(AbortKind::Errored, err);
        }
    }
    Outcome::Aborted(
        AbortKind::Errored,
        "turn response limit reached".to_string(),
    )
}

/// Moves the agent's pending input and its deliverable mail into history: the log's
/// `mail_consumed` lines first, then the `mail.delivered` events.
fn take_input(inner: &Arc<Inner>, agent: &Arc<Agent>) -> Result<(), String> {
    let (inputs, mails) = {
        let mut state = agent.state();
        (
            std::mem::take(&mut state.pending_input),
            state.mailbox.take_for_request(),
        )
    };
    if inputs.is_empty() && mails.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<RolloutItem> = inputs
        .iter()
        .cloned()
        .map(RolloutItem::ResponseItem)
        .collect();
    lines.extend(
        mails
            .iter()
            .map(|mail| RolloutItem::MailConsumed(MailConsumed { mail: mail.clone() })),
    );
    agent.record(&lines).map_err(|err| err.to_string())?;
    {
        let mut state = agent.state();
        state.history.extend(inputs);
        state
            .history
            .extend(mails.iter().map(|mail| ResponseItem::Message {
                role: "user".to_string(),
                content: mail.model_text(),
            }));
    }
    for mail in &mails {
        inner.events.emit(Event::MailDelivered {
            id: mail.id,
            recipient: mail.recipient.clone(),
        });
    }
    Ok(())
}

fn build_request(inner: &Inner, agent: &Agent) -> ModelRequest {
    let identity = &agent.identity;
    ModelRequest {
        agent: AgentIdentity {
            thread_id: identity.id,
            path: identity.path.clone(),
            nickname: identity.nickname.clone(),
            role: identity.role.clone(),
        },
        model: identity.model.clone(),
        reasoning_effort: identity.effort.clone(),
        instructions: identity.instructions.clone(),
        input: agent.state().history.snapshot(),
        tools: tools::specs_for(inner, agent),
        parallel_tool_calls: true,
        max_output_tokens: inner.config.output_limit(&identity.role, &identity.model),
    }
}

/// Cancels an agent's running turn with a reason. Returns false when no turn runs.
pub fn cancel_turn(agent: &Agent, reason: &str) -> bool {
    let mut state = agent.state();
    match state.turn_token.clone() {
        Some(token) => {
            state.cancel_reason = Some(reason.to_string());
            token.cancel();
            true
        }
        None => false,
    }
}

/// Adds a note from arbor to the agent's history as a user message (every server takes one
/// anywhere): rollout first, then history.
fn add_note(agent: &Agent, text: String) -> Result<(), String> {
    let note = ResponseItem::Message {
        role: "user".to_string(),
        content: text,
    };
    agent
        .record(&[RolloutItem::ResponseItem(note.clone())])
        .map_err(|err| err.to_string())?;
    agent.state().history.extend([note]);
    Ok(())
}
