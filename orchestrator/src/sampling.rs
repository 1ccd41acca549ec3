//! One model response, streamed: output items are recorded (rollout, then history) as they
//! complete, and a slow tool call (`exec_command`, `apply_patch`, `wait_agent`) starts as soon
//! as its item is done rather than at the end of the stream. A provider retry after output
//! began cancels what had started and records why, so history stays true and well formed.

use std::collections::HashMap;
use std::sync::Arc;

use arbor_model::{ModelEvent, ModelRequest};
use arbor_protocol::{Event, ModelFallback, ResponseItem, RolloutItem, ServedBy, Usage};
use tokio::sync::mpsc;

pub mod output_limit;

use crate::agent::Agent;
use crate::ctx::Ctx;
use crate::tools::{self, Call, Started};

/// Why a response could not be had.
#[derive(Debug)]
pub enum SampleFailure {
    /// The model failed (after the provider's own retries).
    Model(arbor_model::ModelError),
    /// Recording what streamed in failed.
    Record(String),
}

impl SampleFailure {
    /// The model's error, when that is what failed.
    pub fn into_model_error(self) -> Option<arbor_model::ModelError> {
        match self {
            Self::Model(err) => Some(err),
            Self::Record(_) => None,
        }
    }
}

impl std::fmt::Display for SampleFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Model(err) => write!(f, "{err}"),
            Self::Record(reason) => f.write_str(reason),
        }
    }
}

impl From<String> for SampleFailure {
    fn from(reason: String) -> Self {
        Self::Record(reason)
    }
}

/// A finished response.
pub struct Sampled {
    /// Every item of the final response, in order.
    pub items: Vec<ResponseItem>,
    pub usage: Option<Usage>,
    /// The provider and model that answered, when the client says.
    pub served_by: Option<ServedBy>,
    /// How the response ended (cut at the output limit or not).
    pub finish: arbor_model::Finish,
    /// How many leading `items` are already recorded (rollout and history).
    pub recorded: usize,
    /// Calls already running, by call id; their `tool.call` events are already out.
    pub early: HashMap<String, Started>,
}

/// What a call cancelled by a provider retry reads as its output.
pub const CANCELLED_BY_RETRY: &str =
    "this call was cancelled: the model's response was interrupted and requested again";

/// Streams one response for `agent`.
pub async fn sample(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    request: &ModelRequest,
) -> Result<Sampled, SampleFailure> {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let respond = ctx.model.respond(request, &events_tx);
    tokio::pin!(respond);
    let mut done: Vec<ResponseItem> = Vec::new();
    let mut recorded = 0usize;
    let mut early: HashMap<String, Started> = HashMap::new();
    let outcome = loop {
        tokio::select! {
            biased;
            Some(event) = events_rx.recv() => match event {
                ModelEvent::ItemDone(item) => {
                    let starts = matches!(&item, ResponseItem::FunctionCall { name, .. } if tools::is_slow(name));
                    done.push(item);
                    if starts {
                        record(agent, &done[recorded..])?;
                        // What the model wrote before this call is announced before it.
                        for item in &done[recorded..done.len() - 1] {
                            announce(ctx, agent, item);
                        }
                        recorded = done.len();
                        if let Some(ResponseItem::FunctionCall { call_id, name, arguments }) = done.last() {
                            let call = Call { call_id: call_id.clone(), name: name.clone(), arguments: arguments.clone() };
                            emit_call(ctx, agent, &call);
                            let (ctx, agent) = (Arc::clone(ctx), Arc::clone(agent));
                            early.insert(call.call_id.clone(), Started(tokio::spawn(async move {
                                tools::dispatch(&ctx, &agent, &call).await
                            })));
                        }
                    }
                }
                ModelEvent::Retrying { reason, retry_in_ms } => {
                    ctx.events.emit(Event::AgentRetrying {
                        path: agent.path().clone(),
                        reason,
                        retry_in_ms,
                    });
                    if recorded > 0 {
                        cancel_started(agent, &mut early)?;
                    }
                    done.clear();
                    recorded = 0;
                }
                ModelEvent::Fallback(fallback) => {
                    if recorded > 0 {
                        cancel_started(agent, &mut early)?;
                    }
                    done.clear();
                    recorded = 0;
                    fell_back(ctx, agent, fallback)?;
                }
            },
            result = &mut respond => break result,
        }
    };
    let response = match outcome {
        Ok(response) => response,
        Err(err) => {
            cancel_started(agent, &mut early)?;
            return Err(SampleFailure::Model(err));
        }
    };
    // The stream reported its items in order: the recorded ones lead the final list.
    let leads = recorded <= response.items.len() && response.items[..recorded] == done[..recorded];
    if !leads && recorded > 0 {
        cancel_started(agent, &mut early)?;
        recorded = 0;
    }
    Ok(Sampled {
        items: response.items,
        usage: response.usage,
        served_by: response.served_by,
        finish: response.finish,
        recorded,
        early,
    })
}

/// A request went to a fallback model: a `model_fallback` line of the agent's, and its event.
pub fn fell_back(ctx: &Ctx, agent: &Agent, fallback: ModelFallback) -> Result<(), String> {
    tracing::warn!(
        path = %agent.path(),
        from = %fallback.from,
        to = %fallback.to,
        reason = %fallback.reason,
        "model request falls back"
    );
    ctx.events.emit(Event::ModelFallback {
        path: agent.path().clone(),
        from: fallback.from.clone(),
        to: fallback.to.clone(),
        reason: fallback.reason.clone(),
        note: fallback.note.clone(),
    });
    agent
        .record([RolloutItem::ModelFallback(Box::new(fallback))])
        .map(|_| ())
        .map_err(|err| err.to_string())
}

/// Records items of the response in progress: rollout first, then history.
fn record(agent: &Agent, items: &[ResponseItem]) -> Result<(), String> {
    if items.is_empty() {
        return Ok(());
    }
    let lines: Vec<RolloutItem> = items
        .iter()
        .cloned()
        .map(RolloutItem::ResponseItem)
        .collect();
    agent.record(lines).map_err(|err| err.to_string())?;
    agent.runtime().history.extend(items.iter().cloned());
    Ok(())
}

/// Stops calls started from a response that will not stand, and records their outputs.
fn cancel_started(agent: &Agent, early: &mut HashMap<String, Started>) -> Result<(), String> {
    let mut outputs: Vec<ResponseItem> = Vec::new();
    let mut ids: Vec<String> = early.keys().cloned().collect();
    ids.sort();
    for call_id in ids {
        // Dropping the handle stops the call.
        drop(early.remove(&call_id));
        outputs.push(ResponseItem::FunctionCallOutput {
            call_id,
            output: CANCELLED_BY_RETRY.to_string(),
        });
    }
    record(agent, &outputs)
}

/// Emits the event of a recorded output item: `agent.message` for text, `tool.call` for a
/// call (which runs once the response is complete).
fn announce(ctx: &Ctx, agent: &Agent, item: &ResponseItem) {
    match item {
        ResponseItem::Message { role, content } if role == "assistant" => {
            if !content.trim().is_empty() {
                emit_message(ctx, agent, content);
            }
        }
        ResponseItem::FunctionCall {
            call_id,
            name,
            arguments,
        } => emit_call(
            ctx,
            agent,
            &Call {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
        ),
        ResponseItem::Message { .. }
        | ResponseItem::FunctionCallOutput { .. }
        | ResponseItem::Reasoning { .. } => {}
    }
}

/// Emits `agent.message` for text the model wrote.
pub fn emit_message(ctx: &Ctx, agent: &Agent, text: &str) {
    ctx.events.emit(Event::AgentMessage {
        path: agent.path().clone(),
        text: text.to_string(),
    });
}

/// Emits `tool.call` for a call about to run.
pub fn emit_call(ctx: &Ctx, agent: &Agent, call: &Call) {
    ctx.events.emit(Event::ToolCall {
        path: agent.path().clone(),
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        arguments: serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone())),
    });
}
