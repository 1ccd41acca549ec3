//! Context compaction (`docs/compaction.md`): when a request would pass `compact_at` of its
//! model's context window, the agent's own model is asked, with [`COMPACTION_PROMPT`], for a
//! summary of the work so far; a new history window starts with that summary and the most
//! recent user and mail inputs (bounded), and a `compacted` line records it. Nothing already
//! written is rewritten; revival replays from the last window.
//!
//! A request's size is the provider's reported usage of the last response plus an estimate
//! (four bytes a token) of what the history gained since; before any response of the window,
//! the estimate of the whole request.

use std::sync::Arc;

use arbor_model::window::{estimate_tokens, item_bytes, tool_bytes};
use arbor_model::{ModelEvent, ModelRequest, ModelResponse};
use arbor_protocol::{
    AgentPath, AgentStatus, Compacted, CompactionTrigger, Event, ResponseItem, RolloutItem,
    ToolSpec, Usage,
};
use tokio::sync::mpsc;

use crate::agent::{Agent, History, TurnSpan};
use crate::ctx::Ctx;
use arbor_tree::Input;

/// The fixed request for a summary, the last input of a compaction request.
pub const COMPACTION_PROMPT: &str = "Your conversation is about to be compacted: everything \
above will be replaced by a summary you write now, and you will continue your work from that \
summary alone. Write the summary for yourself, as plain text, without calling any tool. \
Include: the task you were given and by whom; the decisions you made and why; every file you \
read, created or changed, and how; the commands you ran that matter and what they showed; your \
children (agent paths), what each was asked and what each has reported; what you are doing \
right now and the open tasks that remain, in order. Be complete but concise.";

/// How the summary starts the new window (a user message).
pub use arbor_protocol::text::COMPACTION_SUMMARY_HEADER as SUMMARY_HEADER;

/// The most recent inputs a new window keeps after the summary.
pub const RECENT_INPUTS_MAX: usize = 8;
/// The most bytes they take, whatever the window.
pub const RECENT_INPUTS_MAX_BYTES: usize = 32 * 1024;

use arbor_protocol::text::is_compaction_summary as is_summary;

/// The estimated size, in tokens, of `agent`'s next request, offered `tools`.
pub fn request_tokens(agent: &Agent, tools: &[ToolSpec]) -> u64 {
    let runtime = agent.runtime();
    let history = &runtime.history;
    match runtime.measure {
        Some((tokens, at)) if at <= history.len() => {
            tokens + estimate_tokens(item_bytes(&history[at..]))
        }
        _ => estimate_tokens(
            agent.identity.instructions.len() + item_bytes(history) + tool_bytes(tools),
        ),
    }
}

/// Whether `agent`'s next request, offered `tools`, would pass its compaction threshold.
pub fn due(ctx: &Ctx, agent: &Agent, tools: &[ToolSpec]) -> bool {
    let meta = &agent.identity.meta;
    ctx.config
        .compaction_threshold(&meta.role, &meta.model)
        .is_some_and(|threshold| request_tokens(agent, tools) > threshold)
}

/// What a compaction by hand did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactReport {
    pub path: AgentPath,
    /// The estimated size of the history replaced, and of the new window, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub summary: String,
}

/// What a compaction starts from: the history and what the new line carries of the old.
pub struct Source {
    pub history: Arc<Vec<ResponseItem>>,
    pub tokens_before: u64,
    pub turn: u64,
    pub turn_end: Option<AgentStatus>,
    pub last_message: Option<String>,
    /// The agent's tokens so far.
    pub usage: Usage,
}

impl Source {
    /// A resident agent inside its running turn, offered `tools`.
    pub fn in_turn(agent: &Agent, tools: &[ToolSpec]) -> Self {
        let tokens_before = request_tokens(agent, tools);
        let runtime = agent.runtime();
        let last_message = runtime
            .turns
            .iter()
            .rev()
            .find_map(|span| span.final_answer.clone());
        Self {
            history: runtime.history.snapshot(),
            tokens_before,
            turn: runtime.turn_no,
            turn_end: None,
            last_message,
            usage: runtime.usage,
        }
    }
}

/// Compacts `agent`'s history from `source`: asks its model for a summary (one retry), then
/// records the compaction's usage and the `compacted` line. The caller puts the new window
/// into the runtime (see [`install`]) when the agent is resident. Errors are the reason of
/// `compaction failed: <reason>`.
pub async fn compact(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    source: Source,
    trigger: CompactionTrigger,
) -> Result<Compacted, String> {
    let request = summary_request(ctx, agent, &source.history);
    let mut used = Usage::default();
    let summary = match ask(ctx, agent, &request, &mut used).await {
        Ok(summary) => summary,
        Err(first) => {
            tracing::warn!(path = %agent.path(), "compaction failed, retrying once: {first}");
            ask(ctx, agent, &request, &mut used).await?
        }
    };
    drop(request);
    used.compaction_tokens = used.total();
    let mut usage = source.usage;
    usage.add(used);
    let window = new_window(ctx, agent, &summary, &source.history);
    let compacted = Compacted {
        summary,
        window,
        trigger,
        tokens_before: source.tokens_before,
        turn: source.turn,
        turn_end: source.turn_end,
        last_message: source.last_message,
        usage,
    };
    agent
        .record([
            RolloutItem::Usage(used.into()),
            RolloutItem::Compacted(Box::new(compacted.clone())),
        ])
        .map_err(|err| err.to_string())?;
    ctx.session.send(Input::Usage {
        agent: agent.id(),
        usage: used,
    });
    let tokens_after =
        estimate_tokens(agent.identity.instructions.len() + item_bytes(&compacted.window));
    ctx.events.emit(Event::AgentCompacted {
        path: agent.path().clone(),
        trigger,
        tokens_before: compacted.tokens_before,
        tokens_after,
    });
    Ok(compacted)
}

/// Puts a new window into a resident agent's runtime, as its replay would have it.
pub fn install(agent: &Agent, compacted: &Compacted) {
    let mut runtime = agent.runtime();
    runtime.history = History::from(compacted.window.clone());
    let final_answer = match &compacted.turn_end {
        Some(AgentStatus::Completed(answer)) => answer.clone(),
        _ => None,
    };
    runtime.turns = if compacted.turn > 0 {
        vec![TurnSpan {
            start: 0,
            final_answer,
        }]
    } else {
        Vec::new()
    };
    runtime.measure = None;
    runtime.usage = compacted.usage;
}

/// The compaction request: the agent's instructions and history, then the prompt; no tools.
fn summary_request(ctx: &Ctx, agent: &Agent, history: &[ResponseItem]) -> ModelRequest {
    let identity = &agent.identity;
    let mut input = history.to_vec();
    input.push(ResponseItem::Message {
        role: "user".to_string(),
        content: COMPACTION_PROMPT.to_string(),
    });
    ModelRequest {
        agent: identity.for_model(),
        provider: identity.meta.provider.clone(),
        model: identity.meta.model.clone(),
        reasoning_effort: identity.meta.effort.clone(),
        instructions: identity.instructions.clone(),
        input: Arc::new(input),
        tools: Arc::new(Vec::new()),
        parallel_tool_calls: false,
        max_output_tokens: ctx
            .config
            .output_limit(&identity.meta.role, &identity.meta.model),
    }
}

/// One compaction request: the summary, or why there is none. Its usage is added to `used`.
async fn ask(
    ctx: &Ctx,
    agent: &Agent,
    request: &ModelRequest,
    used: &mut Usage,
) -> Result<String, String> {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let respond = ctx.model.respond(request, &events_tx);
    tokio::pin!(respond);
    let result = loop {
        tokio::select! {
            biased;
            Some(event) = events_rx.recv() => match event {
                ModelEvent::Retrying { reason, retry_in_ms } => {
                    ctx.events.emit(Event::AgentRetrying {
                        path: agent.path().clone(),
                        reason,
                        retry_in_ms,
                    });
                }
                ModelEvent::Fallback(fallback) => {
                    crate::sampling::fell_back(ctx, agent, fallback)?;
                }
                ModelEvent::ItemDone(_) => {}
            },
            result = &mut respond => break result,
        }
    };
    let response: ModelResponse = result.map_err(|err| err.to_string())?;
    if let Some(usage) = response.usage {
        used.add(usage);
    }
    summary_of(&response.items)
}

/// The summary a response holds: its assistant text. A response with a call, or with no
/// text, holds none.
fn summary_of(items: &[ResponseItem]) -> Result<String, String> {
    if items
        .iter()
        .any(|item| matches!(item, ResponseItem::FunctionCall { .. }))
    {
        return Err("the model called a tool instead of writing a summary".to_string());
    }
    let text: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            ResponseItem::Message { role, content } if role == "assistant" => Some(content.trim()),
            _ => None,
        })
        .filter(|text| !text.is_empty())
        .collect();
    if text.is_empty() {
        return Err("the model answered without a summary".to_string());
    }
    Ok(text.join("\n\n"))
}

/// The new window: the summary, then the most recent user and mail inputs of `history`
/// (oldest first; at most [`RECENT_INPUTS_MAX`] of them within a tenth of the context window,
/// and never more than [`RECENT_INPUTS_MAX_BYTES`]; the newest is cut in the middle when it
/// alone is over).
fn new_window(
    ctx: &Ctx,
    agent: &Agent,
    summary: &str,
    history: &[ResponseItem],
) -> Vec<ResponseItem> {
    let meta = &agent.identity.meta;
    let budget = ctx
        .config
        .context_window(&meta.role, &meta.model)
        .map_or(RECENT_INPUTS_MAX_BYTES, |window| {
            usize::try_from(window.saturating_mul(4) / 10).unwrap_or(usize::MAX)
        })
        .min(RECENT_INPUTS_MAX_BYTES);
    let mut kept: Vec<ResponseItem> = Vec::new();
    let mut bytes = 0usize;
    for item in history.iter().rev() {
        let ResponseItem::Message { role, content } = item else {
            continue;
        };
        if role != "user" || is_summary(content) {
            continue;
        }
        if kept.len() == RECENT_INPUTS_MAX {
            break;
        }
        if bytes + content.len() > budget {
            if kept.is_empty() {
                kept.push(ResponseItem::Message {
                    role: role.clone(),
                    content: arbor_protocol::text::truncate_middle(content, budget),
                });
            }
            break;
        }
        bytes += content.len();
        kept.push(item.clone());
    }
    kept.reverse();
    let mut window = vec![ResponseItem::Message {
        role: "user".to_string(),
        content: format!("{SUMMARY_HEADER}{summary}"),
    }];
    window.extend(kept);
    window
}
