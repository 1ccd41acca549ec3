//! `arbor diff` and `arbor merge` on worktree agents, the change summaries `tree` and `agents`
//! show, what `close` did to a stopped session's worktrees, and the orphan worktrees `doctor`
//! lists.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use arbor_orchestrator::outside::{self, Released};
use arbor_orchestrator::{SessionView, orphans};
use arbor_protocol::text::{visible, visible_lines};
use arbor_protocol::{ChangeSummary, ThreadId};
use arbor_worktree::Strategy;
use serde_json::{Value, json};

use crate::args::{DiffArgs, MergeArgs, StrategyArg};
use crate::error::{CliError, external};
use crate::output::out;

pub fn diff(home: &Path, args: &DiffArgs) -> Result<u8, CliError> {
    crate::store::open_store(home)?;
    let text =
        outside::diff(home, &args.session, &args.target, args.path.as_deref()).map_err(external)?;
    if text.is_empty() {
        eprintln!("{}: no changes since it started", args.target);
        return Ok(0);
    }
    // File contents and names are the workspace's: shown, never obeyed.
    let text = arbor_protocol::text::visible_lines(&text, "");
    out(write!(std::io::stdout().lock(), "{text}"))?;
    Ok(0)
}

pub fn merge(home: &Path, args: &MergeArgs) -> Result<u8, CliError> {
    crate::store::open_store(home)?;
    let strategy = match args.strategy {
        StrategyArg::Merge => Strategy::Merge,
        StrategyArg::Ours => Strategy::Ours,
        StrategyArg::Theirs => Strategy::Theirs,
        StrategyArg::Union => Strategy::Union,
    };
    let merged = outside::merge(
        home,
        &args.session,
        &args.target,
        args.into.as_deref(),
        strategy,
    )
    .map_err(external)?;
    let report = &merged.report;
    let code = u8::from(!report.conflicts.is_empty());
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let conflicts: Vec<Value> = report
            .conflicts
            .iter()
            .map(|c| json!({"path": c.path, "hunks": c.hunks}))
            .collect();
        let value = json!({
            "merged": report.merged,
            "conflicts": conflicts,
            "into": merged.into.display().to_string(),
            "branch": merged.branch,
            "commit": merged.commit,
        });
        out(writeln!(stdout, "{value}"))?;
        return Ok(code);
    }
    let into = merged.into.display();
    if report.conflicts.is_empty() {
        if report.merged.is_empty() {
            eprintln!("{}: nothing to merge into {into}", merged.path);
        } else {
            eprintln!(
                "{}: merged {} into {into} (branch {}, commit {})",
                merged.path,
                arbor_protocol::text::count(report.merged.len(), "file", "files"),
                merged.branch,
                short(&merged.commit)
            );
        }
        for path in &report.merged {
            out(writeln!(stdout, "{}", visible(path)))?;
        }
        return Ok(code);
    }
    eprintln!(
        "{}: not merged, {into} is unchanged; conflicts in {} (the work is on branch {})",
        merged.path,
        arbor_protocol::text::count(report.conflicts.len(), "file", "files"),
        merged.branch
    );
    for conflict in &report.conflicts {
        out(writeln!(stdout, "conflict: {}", visible(&conflict.path)))?;
        for hunk in &conflict.hunks {
            out(writeln!(stdout, "{}", visible_lines(hunk.trim_end(), "")))?;
        }
    }
    Ok(code)
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The change summaries of a view's worktree agents, for `tree` and `agents`.
pub fn summaries(
    home: &Path,
    view: &SessionView,
) -> BTreeMap<ThreadId, Result<ChangeSummary, String>> {
    if view.state.worktrees.is_empty() {
        return BTreeMap::new();
    }
    outside::changes(home, view)
}

/// `changes` as the JSON of `tree` and `agents` shows it.
pub fn summary_json(summary: &Result<ChangeSummary, String>) -> Value {
    match summary {
        Ok(summary) => serde_json::to_value(summary).unwrap_or(Value::Null),
        Err(err) => json!({ "error": err }),
    }
}

/// The summary as a line of `tree` shows it.
pub fn summary_text(summary: &Result<ChangeSummary, String>) -> String {
    match summary {
        Ok(summary) => format!("worktree: {}", summary.text()),
        Err(err) => format!("worktree: {err}"),
    }
}

/// Tells what closing `target` of a stopped session did to the worktrees there.
pub fn after_close(home: &Path, session: &str, target: &str) -> Result<(), CliError> {
    let view = SessionView::open(home, session)?;
    if view.driven || view.state.worktrees.is_empty() {
        return Ok(());
    }
    let row = match ThreadId::parse(target.trim()) {
        Ok(id) => view.state.thread(id),
        Err(_) => arbor_protocol::AgentPath::root()
            .resolve(target.trim())
            .ok()
            .and_then(|path| view.state.at_path(&path)),
    };
    let Some(id) = row.map(|row| row.record.id()) else {
        return Ok(());
    };
    for released in outside::release_closed(home, session, id).map_err(external)? {
        match released {
            Released::Removed { path, dir } => {
                eprintln!(
                    "{path}: nothing unmerged, removed its worktree {}",
                    dir.display()
                );
            }
            Released::Kept {
                path,
                dir,
                branch,
                changes,
            } => eprintln!(
                "{path}: unmerged changes ({changes}), kept its worktree {} and branch {branch}",
                dir.display()
            ),
        }
    }
    Ok(())
}

/// The orphan worktrees of `home`, one line each, for `doctor`.
pub fn orphan_lines(home: &Path) -> Vec<String> {
    let list = match orphans::list_orphan_worktrees(home) {
        Ok(list) => list,
        Err(err) => return vec![format!("cannot list the worktrees: {err}")],
    };
    list.iter()
        .map(|orphan| {
            let branch = orphan
                .branch
                .as_deref()
                .map_or(String::new(), |b| format!(", branch {b}"));
            let unmerged = match orphan.unmerged {
                Some(0) => ", nothing unmerged".to_string(),
                Some(n) => format!(
                    ", {} unmerged",
                    arbor_protocol::text::count(
                        usize::try_from(n).unwrap_or(usize::MAX),
                        "file",
                        "files"
                    )
                ),
                None => String::new(),
            };
            format!(
                "orphan worktree {}: {}{branch}{unmerged}",
                orphan.dir.display(),
                orphan.reason
            )
        })
        .collect()
}
