//! What a worktree agent changed: its [`WorkStatus`] (from git, after its files are written),
//! and its `changes` as `list_agents` shows them.

use std::sync::Arc;

use arbor_worktree::{Git, WorkStatus};
use serde_json::{Value, json};

use super::worktree::AgentWorktree;

/// The state of an agent's worktree: its changes since it started, what is still unmerged.
pub async fn work_status(wt: &Arc<AgentWorktree>) -> Result<WorkStatus, String> {
    wt.ready().await?;
    let wt = Arc::clone(wt);
    tokio::task::spawn_blocking(move || {
        let git = Git::system().map_err(|err| err.to_string())?;
        arbor_worktree::status(&git, &wt.dir, &wt.base, wt.merged().as_deref(), &wt.prefix)
            .map_err(|err| err.to_string())
    })
    .await
    .map_err(|err| format!("reading the worktree's changes failed: {err}"))?
}

/// `changes` as `list_agents` shows it.
pub fn changes_json(status: &Result<WorkStatus, String>) -> Value {
    match status {
        Ok(status) => serde_json::to_value(status.summary).unwrap_or(Value::Null),
        Err(err) => json!({ "error": err }),
    }
}
