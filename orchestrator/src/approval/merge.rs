//! The approval gate of `merge_agent`: a merge writes a child's changed files into the
//! checkout it forked from, so the command policy judges it as the patch it amounts to, one
//! `apply_patch PATH` pseudo-command per file (as `patch.rs` does): a `forbidden` rule refuses
//! it, a `prompt` rule asks, and under `untrusted` it asks unless an `allow` rule names every
//! path. The approver sees the merge's unified diff. The identical retry is a merge of the same
//! child holding the same tree.

use std::path::Path;
use std::sync::Arc;

use arbor_agent_graph::OverrideKey;
use arbor_protocol::{AgentPath, ThreadId};
use serde_json::json;

use super::broker::Request;
use super::gate::{refuse_forbidden, seek_approval};
use super::need::{self, Need};
use crate::agent::Agent;
use crate::ctx::Ctx;

/// What a merge would write, as the gate judges it.
#[derive(Debug, Clone)]
pub struct PlannedMerge<'a> {
    /// The child whose changes merge.
    pub child: &'a AgentPath,
    /// The checkout they merge into.
    pub into: &'a Path,
    /// The files it writes there, relative to it.
    pub paths: &'a [String],
    /// The child's tree (what makes a retry identical).
    pub tree: &'a str,
    /// The unified diff of the changes, bounded.
    pub diff: &'a str,
    pub strategy: &'a str,
}

/// Decides whether `caller` may merge `merge`, asking for approval when it must; `Err` is the
/// text its model reads instead.
pub async fn gate_merge(
    ctx: &Arc<Ctx>,
    caller: &Arc<Agent>,
    merge: &PlannedMerge<'_>,
) -> Result<(), String> {
    if merge.paths.is_empty() {
        return Ok(());
    }
    let caps = &caller.identity.caps;
    let evaluation = ctx.approvals.policy.evaluate_patch(merge.paths);
    let request = |reason: &str| Request {
        id: ThreadId::new().to_string(),
        action: json!({
            "tool": "merge_agent",
            "command": format!("merge_agent {} into {}", merge.child, merge.into.display()),
            "child": merge.child.as_str(),
            "paths": merge.paths,
            "diff": merge.diff,
            "strategy": merge.strategy,
            "cwd": merge.into.display().to_string(),
            "sandbox": caps.sandbox.as_str(),
            "approval_reason": reason,
        }),
        justification: None,
        key: OverrideKey {
            requester: caller.path().clone(),
            command: format!("merge_agent {}\n{}", merge.child, merge.tree),
            cwd: merge.into.display().to_string(),
            escalated: false,
        },
        turn: caller.runtime().turn_no,
    };
    match need::assess_patch(&evaluation, caps.approval_policy) {
        Need::Run => Ok(()),
        Need::Forbidden(rule) => {
            let refused = request(&format!("forbidden by {rule}"));
            Err(refuse_forbidden(ctx, caller, &refused, &rule).await)
        }
        Need::Approval(reason) => seek_approval(ctx, caller, &request(&reason)).await,
    }
}
