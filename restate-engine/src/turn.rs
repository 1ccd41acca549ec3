//! One turn of an agent, inside `Agent/wake`. At each model-request boundary the turn takes its
//! inbox from the session; the model request and every command run are journaled steps
//! (`ctx.run`), so a retried invocation (on this worker or another) replays their results and
//! repeats none that completed. The history is rebuilt by that replay and stored when the turn
//! ends; the session learns the end by a one-way `turn_ended`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_model::{AgentIdentity, ModelClient, ModelRequest};
use arbor_protocol::{AgentPath, Event, ResponseItem, SandboxMode, ThreadId, ToolSpec};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use crate::agent::{CLOSED, HISTORY, META, SERVED, THREAD, TURNS};
use crate::session::{SessionClient, agent_key};
use crate::wire::{
    AgentMeta, DrainReply, DrainRequest, Fresh, Input, SessionConfig, TurnEnded, TurnMark,
    TurnOutcome, WakeRequest,
};
use crate::worker::Worker;

/// What one model step journals.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Step {
    Answer {
        items: Vec<ResponseItem>,
    },
    /// The model refused for good (a scripted model's exhausted script): the turn errs.
    Failed {
        reason: String,
    },
}

/// What a turn needs while it runs.
pub(crate) struct Turn<'a> {
    pub worker: &'a Arc<Worker>,
    pub ctx: &'a ObjectContext<'a>,
    pub meta: AgentMeta,
    pub config: SessionConfig,
    pub key: String,
    /// Events not yet sent to the session: they ride on the turn's next call to it.
    pub pending: Mutex<Vec<Event>>,
}

impl Turn<'_> {
    /// The session, for a call that carries no events: the pending ones go first (one-way,
    /// in order with the call).
    pub fn session(&self) -> SessionClient<'_> {
        let events = self.take_events();
        if !events.is_empty() {
            self.session_client().record(Json(events)).send();
        }
        self.session_client()
    }

    /// The session, for a call that carries the pending events itself ([`Turn::take_events`]).
    pub fn session_client(&self) -> SessionClient<'_> {
        self.ctx
            .object_client::<SessionClient>(self.meta.session.clone())
    }

    /// Keeps events for the turn's next call to the session.
    pub fn report(&self, events: Vec<Event>) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(events);
    }

    /// The events kept for the session, for the call that carries them.
    pub fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `count` fresh thread and mail ids with the time, as one journaled step.
    pub async fn fresh(&self, count: usize) -> Result<Vec<Fresh>, HandlerError> {
        let fresh = self
            .ctx
            .run(move || async move { Ok(Json((0..count).map(|_| Fresh::now()).collect())) })
            .name("fresh")
            .await?;
        Ok(fresh.into_inner())
    }

    /// One [`Turn::fresh`] value.
    pub async fn fresh_one(&self) -> Result<Fresh, HandlerError> {
        Ok(self.fresh(1).await?.pop().unwrap_or_else(Fresh::now))
    }

    /// The tool call `name` as journaled step number `step`: `body` runs once, given the
    /// session's cwd and the agent's sandbox mode, and its answer is replayed on a retry.
    pub async fn tool_step<F, Fut>(
        &self,
        name: &'static str,
        step: usize,
        body: F,
    ) -> Result<Result<String, String>, HandlerError>
    where
        F: FnOnce(PathBuf, SandboxMode) -> Fut + Send + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        let cwd = PathBuf::from(&self.config.cwd);
        let sandbox = self.meta.sandbox;
        let worker = Arc::clone(self.worker);
        let key = self.key.clone();
        let answer = self
            .ctx
            .run(|| async move {
                worker.log_step(name, &key, step, "ask");
                Ok(Json(body(cwd, sandbox).await))
            })
            .name(name)
            .await?;
        Ok(answer.into_inner())
    }
}

/// Runs one turn for `request`.
pub async fn run(
    worker: &Arc<Worker>,
    ctx: &ObjectContext<'_>,
    request: WakeRequest,
) -> HandlerResult<()> {
    if !adopt(ctx, &request.meta.thread_id).await? {
        return Ok(());
    }
    let mut history = ctx
        .get::<Json<Vec<ResponseItem>>>(HISTORY)
        .await?
        .map(Json::into_inner)
        .unwrap_or_default();
    let mut served = usize::try_from(ctx.get::<u64>(SERVED).await?.unwrap_or(0)).unwrap_or(0);
    let WakeRequest {
        meta,
        config,
        inputs,
    } = request;
    let turn = Turn {
        worker,
        ctx,
        key: agent_key(&meta.session, &meta.path),
        meta,
        config,
        pending: Mutex::new(Vec::new()),
    };
    let mut turns = ctx
        .get::<Json<Vec<TurnMark>>>(TURNS)
        .await?
        .map(Json::into_inner)
        .unwrap_or_default();
    let started_ms = clock(ctx).await?;
    let start = history.len();
    let mut mails = Vec::new();
    let outcome = turn_loop(&turn, inputs, &mut history, &mut served, &mut mails).await?;
    let end = turn.fresh_one().await?;
    if outcome.is_some() || history.len() > start {
        turns.push(TurnMark {
            number: turns.len() as u64 + 1,
            start,
            end: history.len(),
            mails,
            outcome: outcome.clone(),
            started_ms,
            ended_ms: end.now_ms,
        });
        ctx.set(TURNS, Json(turns));
    }
    ctx.set(HISTORY, Json(history));
    ctx.set(SERVED, u64::try_from(served).unwrap_or(u64::MAX));
    ctx.set(META, Json((turn.meta.clone(), turn.config.cwd.clone())));
    if let Some(outcome) = outcome {
        turn.session_client()
            .turn_ended(Json(TurnEnded {
                path: turn.meta.path.clone(),
                outcome,
                events: turn.take_events(),
                fresh: Some(end),
            }))
            .send();
    }
    Ok(())
}

/// Makes the object hold the agent `thread_id`; `false` when that agent is closed. A wake
/// for another thread than the one held is a new agent at a path a closed one left: its
/// history and closed mark are dropped (the response count stays, it is the path's cursor).
/// An object from before thread ids were kept holds its agent's history under no id; a wake
/// reaching it closed is a new agent too (the session wakes no closed agent).
pub(crate) async fn adopt(ctx: &ObjectContext<'_>, thread_id: &str) -> Result<bool, HandlerError> {
    let held = ctx.get::<String>(THREAD).await?;
    let closed = ctx.get::<bool>(CLOSED).await?.unwrap_or(false);
    let same = match &held {
        Some(held) => held == thread_id,
        None => !closed,
    };
    if same {
        if held.is_none() {
            ctx.set(THREAD, thread_id.to_string());
        }
        return Ok(!closed);
    }
    ctx.clear(HISTORY);
    ctx.clear(TURNS);
    ctx.clear(CLOSED);
    ctx.set(THREAD, thread_id.to_string());
    Ok(true)
}

/// The time, journaled (a retry sees the same).
async fn clock(ctx: &ObjectContext<'_>) -> Result<i64, HandlerError> {
    let now = ctx
        .run(|| async { Ok(arbor_protocol::Timestamp::now().as_millis()) })
        .name("clock")
        .await?;
    Ok(now)
}

/// The request loop; `None` when the agent was closed (the session knows already). Its first
/// request takes the inputs handed over with the wake, when there are any (the session has
/// started the turn then); every other request takes the inbox from the session.
async fn turn_loop(
    turn: &Turn<'_>,
    handed: Vec<Input>,
    history: &mut Vec<ResponseItem>,
    served: &mut usize,
    mails: &mut Vec<(usize, arbor_protocol::Mail)>,
) -> Result<Option<TurnOutcome>, HandlerError> {
    let tools = Arc::new(tool_specs(&turn.meta.tools));
    let mut responses = 0;
    let mut handed = Some(handed).filter(|inputs| !inputs.is_empty());
    loop {
        let drained = match handed.take() {
            Some(inputs) => DrainReply {
                inputs,
                closed: false,
                interrupted: false,
            },
            None => drain(turn, responses == 0).await?,
        };
        if drained.closed {
            return Ok(None);
        }
        if drained.interrupted {
            return Ok(Some(TurnOutcome::Interrupted {
                reason: "interrupted".to_string(),
            }));
        }
        for input in drained.inputs {
            let content = match input {
                Input::User { text } => text,
                Input::Mail { mail } => {
                    let text = mail.model_text();
                    mails.push((history.len(), mail));
                    text
                }
            };
            history.push(ResponseItem::Message {
                role: "user".to_string(),
                content,
            });
        }
        if responses >= turn.config.max_turn_responses {
            return Ok(Some(TurnOutcome::Errored {
                reason: "turn response limit reached".to_string(),
            }));
        }
        responses += 1;
        let step = model_step(turn, history, &tools, *served).await?;
        *served += 1;
        let items = match step {
            Step::Answer { items } => items,
            Step::Failed { reason } => return Ok(Some(TurnOutcome::Errored { reason })),
        };
        let mut events = Vec::new();
        let mut calls = Vec::new();
        let mut last_message = None;
        for item in &items {
            match item {
                ResponseItem::Message { content, .. } => {
                    last_message = Some(content.clone());
                    events.push(Event::AgentMessage {
                        path: turn.meta.path.clone(),
                        text: content.clone(),
                    });
                }
                ResponseItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } => {
                    events.push(Event::ToolCall {
                        path: turn.meta.path.clone(),
                        call_id: call_id.clone(),
                        name: name.clone(),
                        arguments: serde_json::from_str(arguments)
                            .unwrap_or_else(|_| serde_json::Value::String(arguments.clone())),
                    });
                    calls.push((call_id.clone(), name.clone(), arguments.clone()));
                }
                ResponseItem::FunctionCallOutput { .. } | ResponseItem::Reasoning { .. } => {}
            }
        }
        history.extend(items);
        turn.report(events);
        if calls.is_empty() {
            return Ok(Some(TurnOutcome::Completed { last_message }));
        }
        let mut results = Vec::new();
        let mut index = 0;
        while index < calls.len() {
            // The spawns that follow each other are registered in one call.
            let run = calls[index..]
                .iter()
                .take_while(|(_, name, _)| name == "spawn_agent")
                .count();
            let outputs = if run > 0 {
                let arguments: Vec<&str> = calls[index..index + run]
                    .iter()
                    .map(|(_, _, arguments)| arguments.as_str())
                    .collect();
                crate::calls::spawn_all(turn, &arguments).await?
            } else {
                // How the step log names a command: the responses served so far × 1000 + the
                // call's place in its response (model steps are named by their response
                // number).
                let step_index = (*served) * 1000 + index;
                let (_, name, arguments) = &calls[index];
                vec![crate::calls::dispatch(turn, name, arguments, step_index, history).await?]
            };
            for output in outputs {
                let (call_id, name, _) = calls[index].clone();
                index += 1;
                results.push(Event::ToolResult {
                    path: turn.meta.path.clone(),
                    call_id: call_id.clone(),
                    name,
                    output: output.clone(),
                });
                history.push(ResponseItem::FunctionCallOutput { call_id, output });
            }
        }
        turn.report(results);
    }
}

/// Takes the inbox from the session (the turn's pending events ride along).
async fn drain(turn: &Turn<'_>, turn_start: bool) -> Result<DrainReply, HandlerError> {
    let fresh = turn.fresh_one().await?;
    let drained = turn
        .session_client()
        .drain(Json(DrainRequest {
            path: turn.meta.path.clone(),
            turn_start,
            thread_id: Some(turn.meta.thread_id.clone()),
            events: turn.take_events(),
            fresh: Some(fresh),
        }))
        .call()
        .await?
        .into_inner();
    Ok(drained)
}

/// One model request as a journaled step. The scripted model's cursor is set from the durable
/// count first, so whichever process runs the step asks for the same response; a session
/// without a script asks the worker's HTTP model for the session's model name, and a retry
/// replays the journaled answer instead of asking again.
async fn model_step(
    turn: &Turn<'_>,
    history: &[ResponseItem],
    tools: &Arc<Vec<ToolSpec>>,
    served: usize,
) -> Result<Step, HandlerError> {
    let meta = &turn.meta;
    let script = turn.config.script.clone();
    let model = match (&script, &turn.config.model) {
        (None, Some(name)) => name.clone(),
        _ => "script".to_string(),
    };
    let request = ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::parse(&meta.thread_id).unwrap_or_default(),
            path: meta.path.clone(),
            nickname: meta.nickname.clone(),
            role: meta.role.clone(),
        },
        // The worker's one model client serves every request (its default provider).
        provider: None,
        model,
        reasoning_effort: None,
        instructions: meta.instructions.as_str().into(),
        input: Arc::new(history.to_vec()),
        tools: tools.clone(),
        parallel_tool_calls: true,
        max_output_tokens: None,
    };
    let worker = turn.worker.clone();
    let named = turn.config.model.is_some();
    let session = meta.session.clone();
    let key = turn.key.clone();
    let ran_here = Arc::new(AtomicBool::new(false));
    let ran = ran_here.clone();
    let step = turn
        .ctx
        .run(|| async move {
            ran.store(true, Ordering::SeqCst);
            worker.log_step("model", &key, served, "ask");
            let step = match script.as_deref() {
                Some(script) => ask(&worker, &session, script, &request, served).await,
                None => ask_http(&worker, named, &request).await,
            };
            Ok(Json(step))
        })
        .name("model")
        .await?
        .into_inner();
    if ran_here.load(Ordering::SeqCst) {
        turn.worker.log_step("model", &turn.key, served, "acked");
    }
    Ok(step)
}

/// Why a session without a script gets no answer from a worker without an HTTP model.
pub(crate) const NO_HTTP_MODEL: &str = "this session has no script and its worker has no HTTP model: \
     start the workers with --provider openai|chat (and --model NAME), or run the session \
     with --script FILE";

async fn ask(
    worker: &Worker,
    session: &str,
    script: &str,
    request: &ModelRequest,
    served: usize,
) -> Step {
    let model = match worker.model(session, script) {
        Ok(model) => model,
        Err(reason) => return Step::Failed { reason },
    };
    model.seek(&request.agent.path, served);
    respond(model.as_ref(), request).await
}

/// Asks the worker's HTTP model (its key stays in the worker's environment).
async fn ask_http(worker: &Worker, named: bool, request: &ModelRequest) -> Step {
    let Some(model) = worker.http_model() else {
        return Step::Failed {
            reason: NO_HTTP_MODEL.to_string(),
        };
    };
    if !named {
        return Step::Failed {
            reason: "this session has no script and names no model: start it with --model NAME"
                .to_string(),
        };
    }
    respond(model.as_ref(), request).await
}

async fn respond(model: &dyn ModelClient, request: &ModelRequest) -> Step {
    let (events, _ignored) = tokio::sync::mpsc::unbounded_channel();
    match model.respond(request, &events).await {
        Ok(response) => Step::Answer {
            items: response.items,
        },
        Err(error) => Step::Failed {
            reason: error.to_string(),
        },
    }
}

/// The tool list an agent is offered: its tool names, each with its schema.
fn tool_specs(names: &[String]) -> Vec<ToolSpec> {
    names
        .iter()
        .filter_map(|name| crate::calls::spec(name))
        .collect()
}

/// The path of the agent a turn runs (for the tools).
pub(crate) fn caller(turn: &Turn<'_>) -> AgentPath {
    turn.meta.path.clone()
}
