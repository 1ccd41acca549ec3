//! What the front ends need to know of approvals: the terminal's queue of prompts, and how long
//! a request waits for a human before it ends as `no_approver`.

use std::time::Duration;

use tokio::sync::mpsc;

use super::Orchestrator;
use crate::approval::ApprovalPrompt;

impl Orchestrator {
    /// The terminal's queue of approval prompts, one at a time in request order; `Some` once,
    /// when the configuration says a terminal answers (`RunConfig::approval_terminal`).
    pub fn take_approval_prompts(&self) -> Option<mpsc::UnboundedReceiver<ApprovalPrompt>> {
        self.ctx.approvals.take_prompts()
    }

    /// How long a request waits for a human answer (`None`: without limit); `Some(ZERO)` with
    /// no terminal means nobody can answer, so a request is refused as it is made.
    pub fn approval_wait(&self) -> Option<Duration> {
        self.ctx.config.approval_wait
    }
}
