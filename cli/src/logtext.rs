//! Rollout items as one readable line each, for `arbor log`: [`line`] is what is printed, the
//! description with every control character escaped (a message's line breaks too).

use arbor_protocol::text::{truncate_middle, visible};
use arbor_protocol::{ResponseItem, RolloutItem};

fn short(text: &str) -> String {
    truncate_middle(text, 2000)
}

/// The line `arbor log` prints for a rollout item.
pub fn line(item: &RolloutItem) -> String {
    visible(&describe(item)).into_owned()
}

/// A tool's JSON arguments or result as its fields on one line (`a: 1 · b: two`); other text
/// as it is.
fn readable(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => arbor_protocol::text::inline(&value),
        _ => text.to_string(),
    }
}

/// One line describing a rollout item.
fn describe(item: &RolloutItem) -> String {
    match item {
        RolloutItem::SessionMeta(meta) => format!(
            "agent {} ({}, role {}, model {}, sandbox {}) in {}",
            meta.path,
            meta.nickname.as_deref().unwrap_or("-"),
            meta.role,
            meta.model,
            meta.sandbox,
            meta.cwd
        ),
        RolloutItem::TurnStarted(t) => format!("turn {} started", t.turn),
        RolloutItem::TurnCompleted(t) => format!("turn {} completed", t.turn),
        RolloutItem::TurnAborted(t) => format!("turn {} aborted: {}", t.turn, t.status()),
        RolloutItem::ResponseItem(item) => match item {
            ResponseItem::Message { role, content } => format!("{role}: {}", short(content)),
            ResponseItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => format!("call {name} [{call_id}] {}", short(&readable(arguments))),
            ResponseItem::FunctionCallOutput { call_id, output } => {
                format!("output [{call_id}] {}", short(&readable(output)))
            }
            ResponseItem::Reasoning { summary, .. } => {
                format!("reasoning: {}", short(&summary.join(" ")))
            }
        },
        RolloutItem::MailSent(m) => format!(
            "mail sent {} {} → {}: {}",
            m.kind.as_str(),
            m.author,
            m.recipient,
            short(&m.content)
        ),
        RolloutItem::MailConsumed(c) => format!(
            "mail read {} from {}: {}",
            c.mail.kind.as_str(),
            c.mail.sender(),
            short(&c.mail.content)
        ),
        RolloutItem::AgentClosed(c) => format!("closed {} (was {})", c.target, c.previous_status),
        RolloutItem::ApprovalRequested(a) => {
            format!("approval {} requested: {}", a.request_id, a.action)
        }
        RolloutItem::ApprovalDecided(a) => {
            let mut text = format!("approval {} decided: {}", a.request_id, a.outcome);
            if let Some(by) = &a.decided_by {
                text.push_str(&format!(" by {by}"));
            }
            if let Some(rationale) = &a.rationale {
                text.push_str(&format!(" ({})", short(rationale)));
            }
            text
        }
        RolloutItem::Usage(line) => {
            let u = &line.usage;
            let mut text = format!(
                "usage{}: {} in ({} cached",
                if u.compaction_tokens > 0 {
                    " (compaction)"
                } else {
                    ""
                },
                u.input_tokens,
                u.cached_input_tokens
            );
            if u.cache_write_tokens > 0 {
                text.push_str(&format!(", {} written to the cache", u.cache_write_tokens));
            }
            text.push_str(&format!("), {} out", u.output_tokens));
            if let Some(by) = &line.served_by {
                text.push_str(&format!(", from {}/{}", by.provider, by.model));
            }
            text
        }
        RolloutItem::ModelFallback(f) => {
            let mut text = format!("fallback: {} -> {}: {}", f.from, f.to, short(&f.reason));
            if let Some(note) = &f.note {
                text.push_str(&format!(" ({note})"));
            }
            text
        }
        RolloutItem::Compacted(c) => format!(
            "compacted ({}, about {} tokens): a new window starts with the summary: {}",
            match c.trigger {
                arbor_protocol::CompactionTrigger::Auto => "automatic",
                arbor_protocol::CompactionTrigger::Manual => "arbor compact",
            },
            c.tokens_before,
            short(&c.summary)
        ),
        RolloutItem::Status(s) => format!("status: {}", s.status),
        RolloutItem::UserMail(m) => format!(
            "mail from the user {} → {}: {}",
            m.mail.kind.as_str(),
            m.mail.recipient,
            short(&m.mail.content)
        ),
        RolloutItem::UserClose(_) => "closed by the user".to_string(),
        RolloutItem::UserInterrupt(_) => "interrupted by the user".to_string(),
        RolloutItem::UserAnswer(a) => format!(
            "approval {} answered by the user: {}",
            a.request_id,
            if a.approve { "approve" } else { "deny" }
        ),
        RolloutItem::ApprovalOverride(o) => {
            format!("approval {}: the identical retry runs once", o.request_id)
        }
        RolloutItem::OverrideUsed(o) => {
            format!("approval {}: override used by {}", o.request_id, o.used_by)
        }
        RolloutItem::Worktree(fact) => match &**fact {
            arbor_protocol::WorktreeFact::Created(c) => format!(
                "worktree {} on branch {} from {} (base {})",
                c.path,
                c.branch,
                c.source,
                c.base.get(..12).unwrap_or(&c.base)
            ),
            arbor_protocol::WorktreeFact::Merged(m) => format!(
                "worktree merged into {}: {}",
                m.into,
                short(&m.files.join(", "))
            ),
            arbor_protocol::WorktreeFact::Removed => "worktree removed".to_string(),
        },
    }
}
