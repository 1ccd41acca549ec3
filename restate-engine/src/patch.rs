//! `apply_patch` on the Restate engine: the patch applied in the session's cwd, confined as on
//! the local engine (relative paths inside the cwd, the agent's sandbox mode decides whether
//! it may write at all), as one journaled step: applied once, its summary replayed on a retry.
//!
//! Under the `untrusted` policy the local engine asks before a patch; this engine routes only
//! commands to approval so far, so there a patch is refused with a sentence saying so.

use arbor_protocol::ApprovalPolicy;
use restate_sdk::prelude::*;
use serde::Deserialize;

use crate::turn::Turn;

/// What the model reads for a patch under `untrusted`.
pub const PATCH_NEEDS_APPROVAL: &str = "apply_patch needs approval under the untrusted policy, \
     which the Restate engine asks only for commands so far; the patch was not applied";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
}

/// Applies the patch `arguments` carry for the turn; `step` numbers the journaled step.
pub(crate) async fn apply_patch(
    turn: &Turn<'_>,
    arguments: &str,
    step: usize,
) -> Result<Result<String, String>, HandlerError> {
    let args: PatchArgs = match crate::calls::parse("apply_patch", arguments) {
        Ok(args) => args,
        Err(error) => return Ok(Err(error)),
    };
    if turn.config.approval_policy == ApprovalPolicy::Untrusted {
        return Ok(Err(PATCH_NEEDS_APPROVAL.to_string()));
    }
    turn.tool_step("apply_patch", step, move |cwd, mode| async move {
        let result = tokio::task::spawn_blocking(move || {
            arbor_tools::apply_patch_confined(&cwd, &args.patch, mode)
        })
        .await;
        match result {
            Ok(Ok(summary)) => Ok(summary.to_string()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(error) => Err(format!("apply_patch failed to run: {error}")),
        }
    })
    .await
}
