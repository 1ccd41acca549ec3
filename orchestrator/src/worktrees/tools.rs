//! The parent's tools for worktree children: `diff_agent {target, path?}` (a unified diff of
//! what the child changed since it started or was last merged, bounded and cut in the middle)
//! and `merge_agent {target, strategy?}` (its changes merged into the checkout it forked from:
//! `{"merged": [...], "conflicts": [{"path", "hunks"}]}`, nothing written with a conflict).

use std::sync::Arc;

use arbor_protocol::ToolSpec;
use arbor_worktree::{Git, Strategy};
use serde::Deserialize;
use serde_json::json;

use super::merge::{merge_worktree, worktree_of};
use super::worktree::AgentWorktree;
use crate::agent::Agent;
use crate::config::TOOL_OUTPUT_MAX_BYTES;
use crate::ctx::Ctx;
use crate::tools::args::{ToolResult, parse_args, resolve_target};

/// Room left in a tool output for the diff's header line.
const HEADER_ROOM: usize = 512;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffArgs {
    target: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MergeArgs {
    target: String,
    #[serde(default)]
    strategy: Option<String>,
}

pub async fn diff_agent(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: DiffArgs = parse_args("diff_agent", arguments)?;
    let target = resolve_target(ctx, caller, &args.target)?;
    let wt = worktree_of(&target)?;
    wt.ready().await?;
    let since = match wt.merged() {
        Some(_) => "its last merge".to_string(),
        None => "it started".to_string(),
    };
    let job = Arc::clone(&wt);
    let path = args.path.clone();
    let diff = tokio::task::spawn_blocking(move || {
        let git = Git::system().map_err(|err| err.to_string())?;
        arbor_worktree::diff(
            &git,
            &job.dir,
            &job.merged_from(),
            &job.prefix,
            path.as_deref(),
            TOOL_OUTPUT_MAX_BYTES - HEADER_ROOM,
        )
        .map_err(|err| err.to_string())
    })
    .await
    .map_err(|err| format!("diff_agent failed to run: {err}"))??;
    let scope = args
        .path
        .as_deref()
        .map_or(String::new(), |path| format!(" under {path}"));
    if diff.trim().is_empty() {
        return Ok(format!(
            "{} has no changes{scope} since {since} (branch {}).",
            target.path(),
            wt.branch
        ));
    }
    Ok(format!(
        "# changes of {}{scope} since {since} (branch {})\n{diff}",
        target.path(),
        wt.branch
    ))
}

pub async fn merge_agent(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: MergeArgs = parse_args("merge_agent", arguments)?;
    let strategy = match args.strategy.as_deref().map(str::trim) {
        None | Some("") => Strategy::Merge,
        Some(text) => Strategy::parse(text).ok_or_else(|| {
            format!(
                "invalid arguments for merge_agent: field `strategy`: unknown value `{text}`, \
                 expected one of merge, ours, theirs, union"
            )
        })?,
    };
    let target = resolve_target(ctx, caller, &args.target)?;
    if target.id() == caller.id() || !target.path().is_within(caller.path()) {
        return Err(format!(
            "merge_agent merges the changes of your descendants only, and {} is not one",
            target.path()
        ));
    }
    let wt = worktree_of(&target)?;
    let now = ctx
        .session
        .agent(target.id())
        .await
        .ok_or("the session stopped")?;
    if now.status.is_active() || now.scheduled {
        return Err(format!(
            "{} is still working ({}); wait for it (wait_agent) before merging its changes",
            target.path(),
            now.status
        ));
    }
    gate(
        ctx,
        caller,
        &target,
        &wt,
        args.strategy.as_deref().unwrap_or("merge"),
    )
    .await?;
    let merged = merge_worktree(ctx, &target, strategy).await?;
    let conflicts: Vec<_> = merged
        .report
        .conflicts
        .iter()
        .map(|c| json!({"path": c.path, "hunks": c.hunks}))
        .collect();
    Ok(json!({
        "merged": merged.report.merged,
        "conflicts": conflicts,
        "into": merged.into.display().to_string(),
        "branch": wt.branch,
        "commit": merged.commit,
    })
    .to_string())
}

/// The approval gate of a merge (`approval/merge.rs`): the files it would write and its diff,
/// from git.
async fn gate(
    ctx: &Arc<Ctx>,
    caller: &Arc<Agent>,
    target: &Agent,
    wt: &Arc<AgentWorktree>,
    strategy: &str,
) -> Result<(), String> {
    wt.ready().await?;
    let job = Arc::clone(wt);
    let (tree, paths, diff) = tokio::task::spawn_blocking(move || {
        let git = Git::system().map_err(|err| err.to_string())?;
        let from = job.merged_from();
        let (tree, paths) = arbor_worktree::changed_paths(&git, &job.dir, &from, &job.prefix)
            .map_err(|err| err.to_string())?;
        let diff = arbor_worktree::diff(
            &git,
            &job.dir,
            &from,
            &job.prefix,
            None,
            TOOL_OUTPUT_MAX_BYTES - HEADER_ROOM,
        )
        .map_err(|err| err.to_string())?;
        Ok::<_, String>((tree, paths, diff))
    })
    .await
    .map_err(|err| format!("merge_agent failed to run: {err}"))??;
    let planned = crate::approval::PlannedMerge {
        child: target.path(),
        into: &wt.source,
        paths: &paths,
        tree: &tree,
        diff: &diff,
        strategy,
    };
    crate::approval::gate_merge(ctx, caller, &planned).await
}

/// The specs of the two tools.
pub fn specs() -> [ToolSpec; 2] {
    let target = json!({"type": "string", "description": "A descendant's path (relative to you) or thread id; it must have been spawned with isolation \"worktree\"."});
    [
        ToolSpec {
            name: "diff_agent".to_string(),
            description: "Show what a child working in its own git worktree changed, as a \
                          unified diff: since it started, or since its changes were last \
                          merged. Long diffs are cut in the middle; `path` (relative to its \
                          cwd) limits the diff to a file or directory."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {"target": target, "path": {"type": "string", "description": "Limit the diff to this file or directory (relative to the child's cwd)."}},
                "required": ["target"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "merge_agent".to_string(),
            description: "Merge the changes of a child working in its own git worktree into \
                          the checkout it forked from (yours): its work is committed on its \
                          branch, then merged three-way. Returns {\"merged\": [paths], \
                          \"conflicts\": [{\"path\", \"hunks\"}]}; with any conflict nothing \
                          is written and the branch stays. strategy: `merge` (default), `ours` \
                          (your side wins conflicting hunks), `theirs` (the child's wins), \
                          `union` (both kept)."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "target": target,
                    "strategy": {"type": "string", "enum": ["merge", "ours", "theirs", "union"], "description": "Who wins conflicting hunks (see above); default `merge`: nobody, a conflict writes nothing."},
                },
                "required": ["target"],
                "additionalProperties": false,
            }),
        },
    ]
}
