//! What a worktree agent changed: its [`WorkStatus`] (from git, after its files are written),
//! and `list_agents` entries with `changes` and `branch` for every worktree agent.

use std::sync::Arc;

use arbor_protocol::AgentPath;
use arbor_worktree::{Git, WorkStatus};
use serde_json::{Value, json};

use super::AgentWorktree;
use crate::runtime::Inner;

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

/// Adds `changes` and `branch` to the `list_agents` entries of worktree agents.
pub async fn list_changes(inner: &Inner, output: String) -> String {
    let Ok(mut listed) = serde_json::from_str::<Value>(&output) else {
        return output;
    };
    let Some(entries) = listed.get_mut("agents").and_then(Value::as_array_mut) else {
        return output;
    };
    for entry in entries {
        let worktree = entry
            .get("agent_name")
            .and_then(Value::as_str)
            .and_then(|name| AgentPath::parse(name).ok())
            .and_then(|path| inner.registry.open_at(&path))
            .and_then(|agent| agent.identity.worktree.clone())
            .filter(|wt| !wt.is_removed());
        if let Some(wt) = worktree {
            entry["changes"] = changes_json(&work_status(&wt).await);
            entry["branch"] = json!(wt.branch);
        }
    }
    listed.to_string()
}
