//! Reading one Responses event stream.
//!
//! Items are told apart by their item id (`item.id`, `item_id`), then by `output_index`, and
//! by arrival order when a server sends neither (llama.cpp's `/v1/responses` sends no
//! `output_index` at all). They are reported in the order the model produced them: an item
//! that is done waits for the items announced before it. A call whose id the response already
//! holds (a server repeating it, or listing it again in `response.completed`) is dropped, so it
//! runs once.

use arbor_protocol::{ResponseItem, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{convert, error_failure, text_field, usage};
use crate::retry::Failure;
use crate::sse::{SseEvent, excerpt};
use crate::stream::{CallIds, Decoder, Progress};
use crate::{Finish, ModelError, ModelResponse};

/// The fields of a Responses stream event that the decoder reads.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

/// Text and arguments streamed for one output item, for a server whose done item lacks them.
#[derive(Debug, Default)]
pub(super) struct Partial {
    pub(super) text: String,
    pub(super) arguments: String,
    pub(super) arguments_done: Option<String>,
    pub(super) call_id: Option<String>,
    pub(super) name: Option<String>,
}

/// One output item of the response, from its first event on.
#[derive(Debug, Default)]
struct Slot {
    id: Option<String>,
    index: Option<u64>,
    /// The item as `response.output_item.added` announced it.
    added: Option<Value>,
    partial: Partial,
    /// Set once the item is done; `Some(None)` for an item arbor does not keep.
    done: Option<Option<ResponseItem>>,
    reported: bool,
}

/// Where an event's item is looked for, and whether it may start a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Find {
    /// `output_item.added`: an unknown key is a new item.
    New,
    /// A delta: without a key, the newest item.
    Newest,
    /// `output_item.done`: without a key, the oldest item not yet done.
    OldestOpen,
}

/// Reads one Responses event stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// Every item so far, in the order the model produced them.
    slots: Vec<Slot>,
    calls: CallIds,
    usage: Option<Usage>,
    finish: Option<Finish>,
}

impl ResponsesDecoder {
    /// The slot of the item `id` / `index` names (created when there is none).
    fn slot(&mut self, id: Option<&str>, index: Option<u64>, find: Find) -> usize {
        let by_id = id.and_then(|id| self.slots.iter().position(|s| s.id.as_deref() == Some(id)));
        let by_index = || {
            let index = index?;
            self.slots
                .iter()
                .position(|s| s.index == Some(index) && (id.is_none() || s.id.is_none()))
        };
        let unkeyed = || match find {
            _ if id.is_some() || index.is_some() => None,
            Find::New => None,
            Find::Newest => self.slots.len().checked_sub(1),
            Find::OldestOpen => self.slots.iter().position(|s| s.done.is_none()),
        };
        if let Some(at) = by_id.or_else(by_index).or_else(unkeyed) {
            let slot = &mut self.slots[at];
            if slot.id.is_none() {
                slot.id = id.map(str::to_string);
            }
            if slot.index.is_none() {
                slot.index = index;
            }
            return at;
        }
        // A new item goes after every item with a lower (or no) index.
        let at = index
            .and_then(|index| {
                self.slots
                    .iter()
                    .position(|s| s.index.is_some_and(|i| i > index))
            })
            .unwrap_or(self.slots.len());
        self.slots.insert(
            at,
            Slot {
                id: id.map(str::to_string),
                index,
                ..Slot::default()
            },
        );
        at
    }

    /// Marks slot `at` done with `item` (unless it already is); a repeated call id is dropped.
    fn complete(&mut self, at: usize, item: &Value) {
        let slot = &mut self.slots[at];
        if slot.done.is_some() {
            return;
        }
        let partial = std::mem::take(&mut slot.partial);
        let converted = convert(item, partial).filter(|item| self.calls.first(item));
        self.slots[at].done = Some(converted);
    }

    /// Reports done items in model order, stopping at the first item still streaming.
    fn report(&mut self, done: &mut Vec<ResponseItem>) {
        for slot in self.slots.iter_mut().filter(|slot| !slot.reported) {
            let Some(item) = &slot.done else {
                break;
            };
            slot.reported = true;
            done.extend(item.iter().cloned());
        }
    }

    /// The end of the response (`completed` or `incomplete`): items only its `output` lists
    /// are added, items that never got their `done` are taken as streamed so far.
    fn end(&mut self, response: &Value, finish: Finish, done: &mut Vec<ResponseItem>) {
        self.usage = response.get("usage").map(usage);
        let output = response.get("output").and_then(Value::as_array);
        for (position, item) in output.into_iter().flatten().enumerate() {
            let position = u64::try_from(position).unwrap_or(u64::MAX);
            let at = self.listed(item, position);
            self.complete(at, item);
        }
        for at in 0..self.slots.len() {
            if self.slots[at].done.is_none() {
                let slot = &self.slots[at];
                let item = match &slot.added {
                    Some(added) => added.clone(),
                    None if !slot.partial.text.is_empty() => json!({"type": "message"}),
                    None => Value::Null,
                };
                self.complete(at, &item);
            }
        }
        self.report(done);
        self.finish = Some(finish);
    }

    /// The slot of an item listed at `position` in the final `output`.
    fn listed(&mut self, item: &Value, position: u64) -> usize {
        let id = text_field(item, "id");
        let call_id = text_field(item, "call_id");
        let by_call = call_id.as_deref().and_then(|call_id| {
            self.slots.iter().position(|slot| {
                let announced = slot.added.as_ref().and_then(|a| text_field(a, "call_id"));
                let kept = match &slot.done {
                    Some(Some(ResponseItem::FunctionCall { call_id, .. })) => Some(call_id.clone()),
                    _ => None,
                };
                announced.or(kept).as_deref() == Some(call_id)
            })
        });
        if let Some(at) = id
            .as_deref()
            .and_then(|id| self.slots.iter().position(|s| s.id.as_deref() == Some(id)))
            .or(by_call)
        {
            return at;
        }
        // A server that gives neither ids nor indexes lists its items in stream order.
        let unkeyed = self
            .slots
            .iter()
            .all(|s| s.id.is_none() && s.index.is_none());
        match usize::try_from(position) {
            Ok(at) if unkeyed && id.is_none() && at < self.slots.len() => at,
            _ => self.slot(id.as_deref(), Some(position), Find::New),
        }
    }
}

impl Decoder for ResponsesDecoder {
    fn on_event(
        &mut self,
        event: SseEvent,
        done: &mut Vec<ResponseItem>,
    ) -> Result<Progress, Failure> {
        let parsed: Event = serde_json::from_str(&event.data).map_err(|error| {
            Failure::retry(format!(
                "invalid stream event ({error}): {}",
                excerpt(&event.data)
            ))
        })?;
        let kind = parsed
            .kind
            .as_deref()
            .or(event.event.as_deref())
            .unwrap_or("");
        let item_id = parsed
            .item_id
            .clone()
            .or_else(|| parsed.item.as_ref().and_then(|item| text_field(item, "id")));
        let (id, index) = (item_id.as_deref(), parsed.output_index);
        match kind {
            "response.output_item.added" => {
                let at = self.slot(id, index, Find::New);
                if let Some(item) = parsed.item {
                    let slot = &mut self.slots[at];
                    slot.partial.call_id = text_field(&item, "call_id");
                    slot.partial.name = text_field(&item, "name");
                    slot.added = Some(item);
                }
            }
            "response.output_text.delta" => {
                let at = self.slot(id, index, Find::Newest);
                let delta = parsed.delta.unwrap_or_default();
                self.slots[at].partial.text.push_str(&delta);
            }
            "response.function_call_arguments.delta" => {
                let at = self.slot(id, index, Find::Newest);
                let delta = parsed.delta.unwrap_or_default();
                self.slots[at].partial.arguments.push_str(&delta);
            }
            "response.function_call_arguments.done" => {
                let at = self.slot(id, index, Find::Newest);
                self.slots[at].partial.arguments_done = parsed.arguments;
            }
            "response.output_item.done" => {
                let at = self.slot(id, index, Find::OldestOpen);
                self.complete(at, parsed.item.as_ref().unwrap_or(&Value::Null));
                self.report(done);
            }
            "response.completed" | "response.incomplete" => {
                let response = parsed.response.unwrap_or_default();
                let incomplete = kind == "response.incomplete"
                    || response.get("status").and_then(Value::as_str) == Some("incomplete");
                let finish = if incomplete {
                    incomplete_finish(&response)?
                } else {
                    Finish::Completed
                };
                self.end(&response, finish, done);
                return Ok(Progress::Complete);
            }
            "response.failed" => {
                let error = parsed
                    .response
                    .as_ref()
                    .and_then(|response| response.get("error"))
                    .cloned()
                    .unwrap_or_default();
                return Err(error_failure(&error));
            }
            "error" => {
                let error = match parsed.error {
                    Some(error @ Value::Object(_)) => error,
                    _ => json!({"code": parsed.code, "message": parsed.message}),
                };
                return Err(error_failure(&error));
            }
            // `response.created`, `response.in_progress`, content parts, reasoning summary
            // deltas and whatever the API adds later.
            _ => {}
        }
        Ok(Progress::More)
    }

    fn finish(self) -> Result<ModelResponse, Failure> {
        let Some(finish) = self.finish else {
            return Err(Failure::retry("the stream ended before response.completed"));
        };
        Ok(ModelResponse {
            items: self
                .slots
                .into_iter()
                .filter_map(|slot| slot.done.flatten())
                .collect(),
            usage: self.usage,
            finish,
            served_by: None,
        })
    }
}

/// An incomplete response: cut at the output limit it keeps what it has; any other reason
/// (a content filter) is a failure retrying will not fix.
fn incomplete_finish(response: &Value) -> Result<Finish, Failure> {
    let reason = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    match reason {
        "max_output_tokens" | "max_tokens" | "length" => Ok(Finish::OutputLimit),
        other => Err(Failure::Fatal(ModelError::Failed(format!(
            "the response is incomplete ({other})"
        )))),
    }
}
