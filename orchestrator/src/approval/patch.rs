//! The approval gate of `apply_patch` (behaviour §7): a patch is judged by the command policy
//! as one `apply_patch PATH` pseudo-command per path it writes. A `forbidden` rule refuses it,
//! a `prompt` rule asks, and under `untrusted` it asks unless an `allow` rule names every path
//! (`pattern = ["apply_patch"]` allows every patch). A patch could otherwise write what a
//! later read-only command runs (a nested repository's `.git/config` with `core.fsmonitor`).

use std::sync::Arc;

use arbor_protocol::{SandboxMode, ThreadId};

use super::broker::Request;
use super::gate::{refuse_forbidden, seek_approval};
use super::need::{self, Need};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Decides whether `agent` may apply `patch`, asking for approval when it must; `Err` is the
/// text its model reads instead. A patch that does not parse passes: applying it reports why.
pub async fn gate_patch(ctx: &Arc<Ctx>, agent: &Arc<Agent>, patch: &str) -> Result<(), String> {
    let caps = &agent.identity.caps;
    if caps.sandbox == SandboxMode::ReadOnly {
        // Refused by the sandbox whatever an approver says.
        return Ok(());
    }
    let Ok(paths) = arbor_tools::patch_paths(patch) else {
        return Ok(());
    };
    let evaluation = ctx.approvals.policy.evaluate_patch(&paths);
    let cwd = agent.identity.cwd();
    let request = |reason: &str| Request {
        id: ThreadId::new().to_string(),
        action: need::patch_action(patch, &paths, cwd, caps.sandbox, reason),
        justification: None,
        key: need::patch_key(agent.path(), patch, cwd),
        turn: agent.runtime().turn_no,
    };
    match need::assess_patch(&evaluation, caps.approval_policy) {
        Need::Run => Ok(()),
        Need::Forbidden(rule) => {
            let refused = request(&format!("forbidden by {rule}"));
            Err(refuse_forbidden(ctx, agent, &refused, &rule).await)
        }
        Need::Approval(reason) => seek_approval(ctx, agent, &request(&reason)).await,
    }
}
