//! Worktree workers on a repository of 5 000 files: what a `spawn_agent` with isolation
//! `worktree` costs the parent against a shared one (its branch from the parent's state with
//! an uncommitted change, `git worktree add`; the files are checked out in the background, and
//! the child's first command waits for them), and what a `merge_agent` of a 20-file and of a
//! 100-file change costs (the child's work committed, the three-way merge, the writes through
//! directory handles). Every figure is the
//! span between a tool call's `tool.call` and `tool.result` events, in milliseconds.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentStatus, Event, EventLine};
use serde_json::{Value, json};

use crate::report;

/// Directories and files per directory of the benchmark repository.
const DIRS: usize = 50;
const FILES_PER_DIR: usize = 100;
/// Spawns measured per isolation.
const SPAWNS: usize = 10;
/// Merges measured per size, and the files each one changes.
const MERGES: usize = 5;
const MERGE_FILES: [usize; 2] = [20, 100];

pub fn run() -> Result<(), String> {
    let runtime = arbor_orchestrator::session_runtime().map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let dir = crate::bench_dir()?;
        let repo = dir.path().join("repo");
        make_repo(&repo)?;
        let shared = spawns(dir.path(), &repo, "shared").await?;
        let worktree = spawns(dir.path(), &repo, "worktree").await?;
        report(json!({
            "bench": "worktree_spawn_overhead",
            "files": DIRS * FILES_PER_DIR,
            "spawn_ms_shared": median(&shared.0),
            "spawn_ms_worktree": median(&worktree.0),
            "spawn_ms_worktree_p90": percentile(&worktree.0, 0.9),
            "overhead_ms": median(&worktree.0) - median(&shared.0),
            "goal_ms": 150,
            "first_command_ms_shared": median(&shared.1),
            "first_command_ms_worktree": median(&worktree.1),
        }));
        for changed in MERGE_FILES {
            let merges = merges(dir.path(), &repo, changed).await?;
            report(json!({
                "bench": "worktree_merge",
                "files": DIRS * FILES_PER_DIR,
                "changed_files": changed,
                "merge_ms_median": median(&merges),
                "merge_ms_max": merges.iter().copied().fold(0.0, f64::max),
                "goal_ms": if changed <= 20 { Some(200) } else { None },
            }));
        }
        Ok(())
    })
}

/// A repository of `DIRS * FILES_PER_DIR` small files, committed and packed, with one
/// uncommitted change (a parent's checkout is rarely clean).
fn make_repo(repo: &Path) -> Result<(), String> {
    for d in 0..DIRS {
        let dir = repo.join("src").join(format!("d{d}"));
        std::fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
        for f in 0..FILES_PER_DIR {
            let text: String = (0..8)
                .map(|l| format!("line {l} of file {d}/{f}\n"))
                .collect();
            std::fs::write(dir.join(format!("f{f}.txt")), text).map_err(|err| err.to_string())?;
        }
    }
    git(repo, &["init", "-q", "-b", "main"])?;
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-q", "-m", "5000 files"])?;
    git(repo, &["gc", "-q"])?;
    std::fs::write(repo.join("src/d0/f0.txt"), "uncommitted\n").map_err(|err| err.to_string())?;
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .output()
        .map_err(|err| format!("cannot run git: {err}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Runs `script` on `repo` to quiescence; every event it emitted.
async fn session(
    dir: &Path,
    repo: &Path,
    script: Value,
    name: &str,
) -> Result<Vec<EventLine>, String> {
    let model = ScriptedModel::from_json(&script.to_string()).map_err(|err| err.to_string())?;
    model.set_recording(false);
    let config = RunConfig::new(dir.join(format!("home-{name}")), repo.to_path_buf());
    let orch = Orchestrator::new(config, Arc::new(model))
        .await
        .map_err(|err| err.to_string())?;
    let mut events = orch.subscribe();
    orch.start(name).await.map_err(|err| err.to_string())?;
    orch.wait_quiescent().await;
    let status = orch.root_status().await;
    orch.shutdown("done").await;
    if status != AgentStatus::Completed(Some("done".into())) {
        return Err(format!("the {name} session ended as {status}"));
    }
    let mut seen = Vec::new();
    while let Ok(line) = events.try_recv() {
        seen.push(line);
    }
    Ok(seen)
}

/// Milliseconds from each `tool.call` of `tool` (by `path_prefix` agents) to its result.
fn spans(events: &[EventLine], tool: &str, path_prefix: &str) -> Vec<f64> {
    let mut calls = std::collections::HashMap::new();
    let mut out = Vec::new();
    for line in events {
        match &line.event {
            Event::ToolCall {
                path,
                call_id,
                name,
                ..
            } if name == tool && path.as_str().starts_with(path_prefix) => {
                calls.insert(call_id.clone(), line.ts.as_millis());
            }
            Event::ToolResult { call_id, name, .. } if name == tool => {
                if let Some(start) = calls.remove(call_id) {
                    out.push((line.ts.as_millis() - start) as f64);
                }
            }
            _ => {}
        }
    }
    out
}

/// `SPAWNS` spawns with `isolation`, one at a time (each child runs one command and is
/// waited for before the next spawn): the spawn calls and the children's first commands.
async fn spawns(dir: &Path, repo: &Path, isolation: &str) -> Result<(Vec<f64>, Vec<f64>), String> {
    let mut responses = Vec::new();
    for i in 0..SPAWNS {
        responses.push(json!([{"call": "spawn_agent", "args": {
            "task_name": format!("w{i}"), "agent_type": "worker", "message": "go",
            "isolation": isolation
        }}]));
        responses
            .push(json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}]));
    }
    responses.push(json!([{"say": "done"}]));
    let script = json!({"agents": [
        {"match": "/root", "responses": responses},
        {"match": "/root/*", "responses": [
            [{"call": "exec_command", "args": {"cmd": "true"}}],
            [{"say": "ok"}]
        ]}
    ]});
    let events = session(dir, repo, script, &format!("spawn-{isolation}")).await?;
    let spawned = spans(&events, "spawn_agent", "/root");
    let first = spans(&events, "exec_command", "/root/");
    if spawned.len() != SPAWNS || first.len() != SPAWNS {
        return Err(format!(
            "{isolation}: {} spawns, {} commands",
            spawned.len(),
            first.len()
        ));
    }
    Ok((spawned, first))
}

/// `MERGES` children each change `changed` files of their own directory; the root merges them
/// one by one.
async fn merges(dir: &Path, repo: &Path, changed: usize) -> Result<Vec<f64>, String> {
    let spawns: Vec<Value> = (0..MERGES)
        .map(|i| {
            json!({"call": "spawn_agent", "args": {
                "task_name": format!("m{i}"), "agent_type": "worker", "message": "edit",
                "isolation": "worktree"
            }})
        })
        .collect();
    let mut responses = vec![
        Value::Array(spawns),
        json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}]),
    ];
    for i in 0..MERGES {
        responses.push(json!([{"call": "merge_agent", "args": {"target": format!("m{i}")}}]));
    }
    responses.push(json!([{"say": "done"}]));
    let mut agents = vec![json!({"match": "/root", "responses": responses})];
    for i in 0..MERGES {
        let cmd = format!(
            "for f in $(seq 0 {}); do echo changed >> src/d{}/f$f.txt; done",
            changed - 1,
            i + 1
        );
        agents.push(json!({"match": format!("/root/m{i}"), "responses": [
            [{"call": "exec_command", "args": {"cmd": cmd}}],
            [{"say": "edited"}]
        ]}));
    }
    let name = format!("merge{changed}");
    let events = session(dir, repo, json!({ "agents": agents }), &name).await?;
    for line in &events {
        if let Event::WorktreeMerged {
            merged, conflicts, ..
        } = &line.event
            && (merged.len() != changed || !conflicts.is_empty())
        {
            return Err(format!(
                "a merge changed {} files, {} conflicts",
                merged.len(),
                conflicts.len()
            ));
        }
    }
    let spans = spans(&events, "merge_agent", "/root");
    if spans.len() != MERGES {
        return Err(format!("{} merges measured", spans.len()));
    }
    Ok(spans)
}

fn median(values: &[f64]) -> f64 {
    percentile(values, 0.5)
}

fn percentile(values: &[f64], at: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = ((sorted.len() as f64 - 1.0) * at).round() as usize;
    sorted.get(index).copied().unwrap_or(0.0)
}
