//! The scripted model: a deterministic provider driven by a JSON script (see
//! `docs/scripted-model.md`).
//!
//! The whole script is validated when it is loaded (its calls too, against the tools the
//! caller names, with [`ScriptedModel::load_checked`]). Each agent path gets its own cursor over the
//! responses of the first entry that fits it; cursors and the record of requests live as long as
//! the `ScriptedModel` value.

mod calls;
mod parts;
mod script;
mod tally;
mod template;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use arbor_protocol::{AgentPath, ResponseItem, Usage};

use crate::{
    BoxFuture, ModelClient, ModelError, ModelEvent, ModelEvents, ModelRequest, ModelResponse,
};
pub use calls::ToolCatalog;
pub use parts::{NO_PART, ScriptParts, part_for};
use script::{Item, Script};
use template::Context;

/// A model provider that answers from a script: deterministic, offline, instant unless a
/// response asks for a delay.
#[derive(Debug)]
pub struct ScriptedModel {
    script: Script,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// How many responses each agent has consumed.
    served: HashMap<AgentPath, usize>,
    /// Every request, in arrival order.
    requests: Vec<ModelRequest>,
    /// Recording is on unless a benchmark turns it off.
    not_recording: bool,
    /// Running totals over each agent's history.
    tallies: HashMap<AgentPath, tally::Tally>,
    /// Bytes of each tool list seen.
    tool_bytes: tally::ToolBytes,
}

impl ScriptedModel {
    /// Parses and validates a script.
    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        Self::parse(text, None, None)
    }

    /// [`Self::from_json`], with every call checked against `tools`.
    pub fn from_json_checked(text: &str, tools: &ToolCatalog<'_>) -> Result<Self, ModelError> {
        Self::parse(text, None, Some(tools))
    }

    /// Reads, parses and validates the script at `path`; errors name the file.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        Self::parse(&Self::read(path)?, Some(path), None)
    }

    /// [`Self::load`], with every call checked against `tools`: an unknown tool or argument
    /// name is an error naming its JSON path.
    pub fn load_checked(path: &Path, tools: &ToolCatalog<'_>) -> Result<Self, ModelError> {
        Self::parse(&Self::read(path)?, Some(path), Some(tools))
    }

    fn read(path: &Path) -> Result<String, ModelError> {
        std::fs::read_to_string(path).map_err(|error| ModelError::ScriptRead {
            file: path.to_path_buf(),
            reason: error.to_string(),
        })
    }

    fn parse(
        text: &str,
        file: Option<&Path>,
        tools: Option<&ToolCatalog<'_>>,
    ) -> Result<Self, ModelError> {
        let file = file.map(Path::to_path_buf);
        let value: serde_json::Value = serde_json::from_str(text).map_err(|error| {
            let (line, column) = (error.line(), error.column());
            let full = error.to_string();
            let reason = full
                .strip_suffix(&format!(" at line {line} column {column}"))
                .unwrap_or(&full)
                .to_string();
            ModelError::ScriptSyntax {
                file: file.clone(),
                line,
                column,
                reason,
            }
        })?;
        let script = Script::from_value(&value)
            .and_then(|script| match tools {
                Some(tools) => calls::check(&value, tools).map(|()| script),
                None => Ok(script),
            })
            .map_err(|invalid| ModelError::ScriptInvalid {
                file,
                at: invalid.at,
                reason: invalid.reason,
            })?;
        Ok(Self {
            script,
            state: Mutex::default(),
        })
    }

    /// Turns request recording on or off (on by default). Benchmarks turn it off so that the
    /// copies of long histories do not count as the orchestrator's memory.
    pub fn set_recording(&self, on: bool) {
        self.lock().not_recording = !on;
    }

    /// Puts `path`'s cursor at `served`, the number of responses it has consumed. An engine
    /// that keeps that count durably (the Restate engine, where any worker process may run an
    /// agent's next request) sets it before each request, so the n-th request of an agent gets
    /// the n-th response whichever process asks.
    pub fn seek(&self, path: &AgentPath, served: usize) {
        self.lock().served.insert(path.clone(), served);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// The requests `path` sent, in arrival order.
    pub fn requests_for(&self, path: &AgentPath) -> Vec<ModelRequest> {
        self.lock()
            .requests
            .iter()
            .filter(|request| request.agent.path == *path)
            .cloned()
            .collect()
    }

    /// The state stays consistent after a panic elsewhere (every update is a single step), so a
    /// poisoned lock is simply taken over.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `request`, consumes the agent's next response and fills it in: the delay and the
    /// items to answer with.
    fn next_answer(&self, request: &ModelRequest) -> Result<Answer, ModelError> {
        let path = &request.agent.path;
        let (response, counted, tool_bytes) = {
            let mut state = self.lock();
            if !state.not_recording {
                state.requests.push(request.clone());
            }
            let entry = self
                .script
                .entry_for(&request.agent)
                .ok_or_else(|| ModelError::Script(format!("no script entry matches {path}")))?;
            let served = state.served.entry(path.clone()).or_insert(0);
            let count = entry.responses.len();
            let at = if *served < count {
                *served
            } else if entry.repeat {
                *served % count
            } else {
                return Err(ModelError::Script(format!("script exhausted for {path}")));
            };
            *served += 1;
            let response = entry
                .responses
                .get(at)
                .ok_or_else(|| ModelError::Script(format!("script exhausted for {path}")))?;
            let counted = state
                .tallies
                .entry(path.clone())
                .or_default()
                .count(&request.input);
            (response, counted, state.tool_bytes.of(&request.tools))
        };
        let context = Context::of(request);
        let prefix = call_prefix(path);
        // Call ids count on from the calls already in the history, so they stay unique within
        // it even across processes.
        let mut next_call = counted.calls;
        let items = response
            .items
            .iter()
            .map(|item| match item {
                Item::Say(text) => ResponseItem::Message {
                    role: "assistant".to_string(),
                    content: text.render(&context),
                },
                Item::Call { name, args } => {
                    let call_id = format!("{prefix}_{next_call}");
                    next_call += 1;
                    ResponseItem::FunctionCall {
                        call_id,
                        name: name.clone(),
                        arguments: args.render(&context).to_string(),
                    }
                }
            })
            .collect::<Vec<_>>();
        let input = request.instructions.len() + counted.bytes + tool_bytes;
        // The script's figures when it gives them, else the estimate.
        let usage = response.usage.unwrap_or(Usage {
            input_tokens: tokens(input),
            cached_input_tokens: 0,
            output_tokens: tokens(tally::item_bytes(&items)),
            ..Usage::default()
        });
        Ok(Answer {
            delay_ms: response.delay_ms,
            items,
            usage,
        })
    }
}

/// One scripted answer: the delay before it, its items and its estimated usage.
struct Answer {
    delay_ms: u64,
    items: Vec<ResponseItem>,
    usage: Usage,
}

impl ModelClient for ScriptedModel {
    fn provider(&self) -> &str {
        "script"
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let Answer {
                delay_ms,
                items,
                usage,
            } = self.next_answer(request)?;
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            for item in &items {
                // A dropped receiver only means nobody is watching the stream.
                let _ = events.send(ModelEvent::ItemDone(item.clone()));
            }
            Ok(ModelResponse {
                items,
                usage: Some(usage),
                finish: crate::Finish::Completed,
                served_by: None,
            })
        })
    }
}

/// `call_<12 hex digits of a hash of the agent path>`: the same for an agent in every process,
/// different across agents.
fn call_prefix(path: &AgentPath) -> String {
    // FNV-1a, 64 bits: stable across builds and platforms, unlike the std hasher.
    let hash = path
        .as_str()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    format!("call_{:012x}", hash & 0xffff_ffff_ffff)
}

/// About four characters per token, rounded up, for input (instructions, history, tools) and
/// output alike; nothing is cached.
fn tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod validation_tests;
