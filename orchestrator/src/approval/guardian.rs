//! Review by the guardian (behaviour §7): `/root/guardian`, an internal agent spawned on the
//! first review and kept, answers one review per turn. The orchestrator enforces the deadline,
//! retries once after an availability failure, and maps every failure to `review_unavailable`.

use std::sync::Arc;
use std::time::Duration;

use arbor_guardian::{Budgets, Decision, ReviewFailure, ReviewRequest, decide, parse_verdict};
use arbor_model::ModelError;
use arbor_protocol::{AgentPath, AgentStatus, ResponseItem, RolloutItem, ThreadId};

use super::broker::Request;
use crate::agent::Agent;
use crate::config::GUARDIAN_NAME;
use crate::ctx::Ctx;
use crate::session::handle::SpawnSpec;
use arbor_tree::Input;

/// Why a guardian turn is cancelled when its deadline passes.
const TIMED_OUT: &str = "review timed out";

/// Reviews `request` of `requester` with the guardian: the decision and the tokens it cost.
/// Reviews are serialised through the one guardian.
pub async fn review(
    ctx: &Arc<Ctx>,
    requester: &Arc<Agent>,
    request: &Request,
) -> (Decision, Option<u64>) {
    let _one_at_a_time = ctx.approvals.review.lock().await;
    let guardian = match ensure_guardian(ctx).await {
        Ok(guardian) => guardian,
        Err(reason) => return (decide(Err(ReviewFailure::ReviewerError(reason))), None),
    };
    let text = ReviewRequest {
        action: request.action.clone(),
        requester: requester.path().clone(),
        justification: request.justification.clone(),
        root_task: root_task(ctx).await,
        transcript: requester.runtime().history.to_vec(),
    }
    .render(&Budgets::default());
    let tokens_before = used_tokens(ctx, &guardian).await;
    let mut input = Some(text);
    let mut retries = 0;
    let result = loop {
        match attempt(ctx, &guardian, input.take(), ctx.config.review_deadline).await {
            Ok(answer) => break parse_verdict(&answer).map_err(ReviewFailure::from),
            // The review request stays the last input of the guardian's history, so a retry
            // is a new turn with no new input.
            Err(failure) if failure.may_retry(retries) => retries += 1,
            Err(failure) => break Err(failure),
        }
    };
    let tokens = used_tokens(ctx, &guardian)
        .await
        .saturating_sub(tokens_before);
    (decide(result), Some(tokens))
}

/// The guardian, created on first use. Its role is the session's `guardian` role; it inherits
/// the root's cwd and narrows the root's capabilities (read-only, no spawning).
async fn ensure_guardian(ctx: &Arc<Ctx>) -> Result<Arc<Agent>, String> {
    let path = AgentPath::root()
        .join(GUARDIAN_NAME)
        .map_err(|err| err.to_string())?;
    if let Some(guardian) = ctx.registry.open_at(&path) {
        return Ok(guardian);
    }
    let root = ctx
        .registry
        .open_at(&AgentPath::root())
        .ok_or("the session has no root")?;
    let role = ctx.roles.guardian();
    // Its model as `[roles.guardian]` or its role file names it (checked when the session
    // started), else the root's.
    let configured = ctx.config.role_models.get(&role.name);
    let named = configured
        .and_then(|c| c.model.as_ref())
        .or(role.model.as_ref());
    let (provider, model) = match named {
        Some(text) => {
            let found = ctx.config.resolve_model(&ctx.model.catalog(), text)?;
            (Some(found.provider), found.model)
        }
        None => (
            root.identity.meta.provider.clone(),
            root.identity.meta.model.clone(),
        ),
    };
    let spawned = ctx
        .session
        .spawn(SpawnSpec {
            id: ThreadId::new(),
            path,
            parent: Some(Arc::clone(&root)),
            role: role.clone(),
            model,
            provider,
            effort: configured
                .and_then(|c| c.reasoning_effort.clone())
                .or_else(|| role.reasoning_effort.clone()),
            caps: root.identity.caps.narrow_for(role),
            nickname: false,
            cwd: root.identity.cwd().to_path_buf(),
            internal: true,
            // Its role's only: the repository it reviews does not write its rules.
            instructions: crate::lifecycle::instructions_for(role).into(),
            stamp: None,
            history: Vec::new(),
            task: None,
            worktree: None,
        })
        .await?;
    Ok(spawned.agent)
}

/// One guardian turn on `input` (none: answer the history as it stands), bounded by `deadline`:
/// its final answer, or why there is none.
async fn attempt(
    ctx: &Arc<Ctx>,
    guardian: &Arc<Agent>,
    input: Option<String>,
    deadline: Duration,
) -> Result<String, ReviewFailure> {
    // A turn left over from a review whose requester stopped waiting ends first.
    let before = ctx
        .session
        .idle(guardian.id())
        .await
        .ok_or_else(|| ReviewFailure::ReviewerError("the session stopped".into()))?
        .turns_started;
    let items = input
        .map(|content| ResponseItem::Message {
            role: "user".to_string(),
            content,
        })
        .into_iter()
        .collect();
    ctx.session.send(Input::Prompt {
        agent: guardian.id(),
        items,
    });
    match tokio::time::timeout(deadline, turn_end(ctx, guardian, before)).await {
        Ok(result) => result,
        Err(_) => {
            // The turn stops, and is over before the next review begins.
            ctx.session.interrupt(guardian.id(), TIMED_OUT).await;
            ctx.session.idle(guardian.id()).await;
            Err(ReviewFailure::Timeout)
        }
    }
}

/// Waits until the guardian's turn after the `before`th has ended and reads its result.
async fn turn_end(ctx: &Ctx, guardian: &Agent, before: u64) -> Result<String, ReviewFailure> {
    let Some(ended) = ctx.session.idle(guardian.id()).await else {
        return Err(ReviewFailure::ReviewerError("the session stopped".into()));
    };
    if ended.turns_started == before {
        return Err(ReviewFailure::ReviewerError(
            "the guardian's turn did not start (the session is stopping)".into(),
        ));
    }
    match &ended.status {
        AgentStatus::Completed(answer) => Ok(answer.clone().unwrap_or_default()),
        AgentStatus::Errored(reason) => {
            let error = guardian.runtime().last_model_error.clone();
            Err(classify(error.as_ref(), reason))
        }
        other => Err(ReviewFailure::ReviewerError(format!(
            "the guardian's turn ended {other}"
        ))),
    }
}

/// Maps the model error a guardian turn ended on to a review failure: 429, 5xx and transport
/// errors are availability failures (one retry); anything else is the reviewer's failure.
fn classify(error: Option<&ModelError>, reason: &str) -> ReviewFailure {
    match error {
        Some(ModelError::RateLimited) => ReviewFailure::RateLimited,
        Some(ModelError::Http { status, .. }) => ReviewFailure::ServerError(*status),
        Some(ModelError::Transport(detail)) => ReviewFailure::Transport(detail.clone()),
        Some(
            ModelError::Script(_)
            | ModelError::Config(_)
            | ModelError::Failed(_)
            | ModelError::ScriptRead { .. }
            | ModelError::ScriptSyntax { .. }
            | ModelError::ScriptInvalid { .. }
            | ModelError::EventTooLarge,
        )
        | None => ReviewFailure::ReviewerError(reason.to_string()),
    }
}

/// The root user's task: the root's first user message, from its history or, when the root is
/// not loaded, from its rollout. Kept once found.
async fn root_task(ctx: &Ctx) -> String {
    if let Some(task) = ctx.approvals.root_task() {
        return task;
    }
    let Some(root) = ctx.registry.open_at(&AgentPath::root()) else {
        return String::new();
    };
    // A compacted history starts with a summary: the task is then in the rollout only.
    let in_memory = {
        let runtime = root.runtime();
        let compacted = runtime.history.first().is_some_and(|item| {
            matches!(item, ResponseItem::Message { content, .. }
                if arbor_protocol::text::is_compaction_summary(content))
        });
        if compacted {
            None
        } else {
            runtime.history.iter().find_map(first_user_message)
        }
    };
    let task = match in_memory {
        Some(task) => task,
        None => {
            let path = root.identity.rollout_path.clone();
            tokio::task::spawn_blocking(move || {
                arbor_rollout::read_rollout(&path).ok().and_then(|read| {
                    read.items().find_map(|item| match item {
                        RolloutItem::ResponseItem(item) => first_user_message(item),
                        _ => None,
                    })
                })
            })
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
        }
    };
    ctx.approvals.set_root_task(&task);
    task
}

fn first_user_message(item: &ResponseItem) -> Option<String> {
    match item {
        ResponseItem::Message { role, content } if role == "user" => Some(content.clone()),
        _ => None,
    }
}

/// Input plus output tokens an agent's responses used in this process.
async fn used_tokens(ctx: &Ctx, agent: &Agent) -> u64 {
    let usage = ctx
        .session
        .agent(agent.id())
        .await
        .map(|snapshot| snapshot.usage)
        .unwrap_or_default();
    usage.input_tokens.saturating_add(usage.output_tokens)
}
