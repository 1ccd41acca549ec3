//! The turn loop: take input, ask the model, run the tool calls, repeat until a final answer.
//! The first request of a turn carries the input and mail it was granted with; every later one
//! takes what was handed over meanwhile, in the phases the turn's inbox keeps.

use std::sync::Arc;

use arbor_model::{Finish, ModelRequest};
use arbor_protocol::{
    AbortKind, CompactionTrigger, Event, Mail, MailConsumed, ResponseItem, RolloutItem, UsageLine,
};

use super::end::Outcome;
use arbor_mailbox::Inbox;
use tokio::sync::mpsc;

use crate::agent::{Agent, AgentMsg};
use crate::compaction;
use crate::ctx::Ctx;
use crate::sampling::{self, output_limit};
use crate::tools::{self, Call};
use arbor_tree::Input;

/// What one turn works with.
pub(super) struct Turn<'a> {
    pub ctx: &'a Arc<Ctx>,
    pub agent: &'a Arc<Agent>,
    /// The agent's channel: mail handed over while the turn runs.
    pub rx: &'a mut mpsc::UnboundedReceiver<AgentMsg>,
    pub inbox: &'a mut Inbox,
}

pub(super) async fn turn_body(
    turn: Turn<'_>,
    input: Vec<ResponseItem>,
    first: Vec<Mail>,
) -> Outcome {
    let Turn {
        ctx,
        agent,
        rx,
        inbox,
    } = turn;
    let mut granted = Some((input, first));
    // The agent's MCP servers are listed before its first request (its tool list needs them).
    tools::mcp::prepare(ctx, agent).await;
    // Responses cut at the output limit without a call, one after another.
    let mut cut_in_a_row = 0;
    let mut just_compacted = false;
    for _ in 0..ctx.config.max_turn_responses {
        if ctx.budget_spent() {
            let limit = ctx.config.budget_tokens.unwrap_or_default();
            return Outcome::Aborted(
                AbortKind::Errored,
                format!("token budget of {limit} reached"),
            );
        }
        let (input, mails) = match granted.take() {
            Some(first) => first,
            None => {
                // Mail handed over since the last request joins this one, phases allowing.
                while let Ok(message) = rx.try_recv() {
                    match message {
                        AgentMsg::Mail(mail) => inbox.arrive(*mail),
                        AgentMsg::Go(_) => {
                            tracing::error!(path = %agent.path(), "a turn was granted to a running turn");
                        }
                    }
                }
                (Vec::new(), inbox.take_for_request())
            }
        };
        if let Err(err) = take_input(ctx, agent, input, mails) {
            return Outcome::Aborted(AbortKind::Errored, err);
        }
        // A window that is itself over the threshold is sent once before compacting again.
        let offered = tools::specs_for(ctx, agent);
        if !just_compacted && compaction::due(ctx, agent, &offered) {
            let source = compaction::Source::in_turn(agent, &offered);
            match compaction::compact(ctx, agent, source, CompactionTrigger::Auto).await {
                Ok(compacted) => compaction::install(agent, &compacted),
                Err(reason) => {
                    return Outcome::Aborted(
                        AbortKind::Errored,
                        format!("compaction failed: {reason}"),
                    );
                }
            }
            just_compacted = true;
        } else {
            just_compacted = false;
        }
        let request = build_request(ctx, agent);
        let sampled = sampling::sample(ctx, agent, &request).await;
        // The request shares the history: let go of it before appending, so the append
        // happens in place instead of copying the whole history.
        drop(request);
        let response = match sampled {
            Ok(response) => response,
            Err(failure) => {
                let reason = failure.to_string();
                agent.runtime().last_model_error = failure.into_model_error();
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
            lines.push(RolloutItem::Usage(UsageLine {
                usage,
                served_by: response.served_by.clone().map(Box::new),
            }));
        }
        if let Err(err) = agent.record(lines) {
            return Outcome::Aborted(AbortKind::Errored, err.to_string());
        }
        {
            let mut runtime = agent.runtime();
            runtime.history.extend(rest.iter().cloned());
            if let Some(usage) = response.usage {
                runtime.usage.add(usage);
                runtime.measure = Some((usage.total(), runtime.history.len()));
            }
        }
        if let Some(usage) = response.usage {
            ctx.session.send(Input::Usage {
                agent: agent.id(),
                usage,
            });
            if ctx.config.budget_tokens.is_some() {
                // The next request is made only once the session has counted these tokens.
                ctx.session.ask(|ticket| Input::Sync { ticket }).await;
            }
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
                        sampling::emit_message(ctx, agent, content);
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
                        sampling::emit_call(ctx, agent, &call);
                    }
                    calls.push(call);
                }
                ResponseItem::Message { .. }
                | ResponseItem::FunctionCallOutput { .. }
                | ResponseItem::Reasoning { .. } => {}
            }
        }
        let cut = response.finish == Finish::OutputLimit;
        let limit = ctx
            .config
            .output_limit(&agent.identity.meta.role, &agent.identity.meta.model);
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
            inbox.final_answer(false);
            if let Some(span) = agent.runtime().turns.last_mut() {
                span.final_answer = last_text.clone();
            }
            return Outcome::Completed(last_text);
        }
        if last_text.is_some() {
            // A commentary preamble before tool calls is same-turn work: delivery stays open.
            inbox.reopen();
        }
        let outputs = tools::run_calls(ctx, agent, &calls, response.early).await;
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
        if let Err(err) = agent.record(lines) {
            return Outcome::Aborted(AbortKind::Errored, err.to_string());
        }
        agent.runtime().history.extend(items.iter().cloned());
        for (call, item) in calls.iter().zip(&items) {
            if let ResponseItem::FunctionCallOutput { output, .. } = item {
                ctx.events.emit(Event::ToolResult {
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

/// Moves the turn's input and its mail into history: the log's lines first (`mail_consumed`
/// for each mail), then the session hears the mail is taken, then the `mail.delivered` events.
fn take_input(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    inputs: Vec<ResponseItem>,
    mails: Vec<Mail>,
) -> Result<(), String> {
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
            .map(|mail| RolloutItem::MailConsumed(Box::new(MailConsumed { mail: mail.clone() }))),
    );
    agent.record(lines).map_err(|err| err.to_string())?;
    {
        let mut runtime = agent.runtime();
        runtime.history.extend(inputs);
        runtime
            .history
            .extend(mails.iter().map(|mail| ResponseItem::Message {
                role: "user".to_string(),
                content: mail.model_text(),
            }));
    }
    if !mails.is_empty() {
        ctx.session.send(Input::Consumed {
            agent: agent.id(),
            ids: mails.iter().map(|mail| mail.id).collect(),
        });
    }
    for mail in &mails {
        ctx.events.emit(Event::MailDelivered {
            id: mail.id,
            recipient: mail.recipient.clone(),
        });
    }
    Ok(())
}

fn build_request(ctx: &Ctx, agent: &Agent) -> ModelRequest {
    let identity = &agent.identity;
    ModelRequest {
        agent: identity.for_model(),
        provider: identity.meta.provider.clone(),
        model: identity.meta.model.clone(),
        reasoning_effort: identity.meta.effort.clone(),
        instructions: identity.instructions.clone(),
        input: agent.runtime().history.snapshot(),
        tools: tools::specs_for(ctx, agent),
        parallel_tool_calls: true,
        max_output_tokens: ctx
            .config
            .output_limit(&identity.meta.role, &identity.meta.model),
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
        .record([RolloutItem::ResponseItem(note.clone())])
        .map_err(|err| err.to_string())?;
    agent.runtime().history.extend([note]);
    Ok(())
}
