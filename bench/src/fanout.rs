//! The fan-out workload: `/root` spawns N workers at once; each makes three model responses
//! (two cheap in-process tool calls, then a final answer); `/root` waits for all of them and
//! answers once every result is in. Every step is a line of the session log; nothing waits
//! for the disk (no output is printed), so the syncs are the log's own.

use std::sync::Arc;
use std::time::Instant;

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::AgentStatus;
use serde_json::json;

use crate::{cpu_seconds, dir_bytes, peak_rss_kib, report};

/// The script of the fan-out workload for `n` workers.
pub fn script(n: usize) -> serde_json::Value {
    let spawns: Vec<_> = (0..n)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("worker_{i}"), "message": format!("task {i}")}}))
        .collect();
    json!({"agents": [
        {"match": "/root", "responses": [
            spawns,
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "every worker reported"}]
        ]},
        {"match": "/root/*", "responses": [
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"say": "{{task_name}} done"}]
        ]}
    ]})
}

/// Runs the workload once for each N and prints one JSON line per run.
pub fn run(sizes: &[usize]) -> Result<(), String> {
    for &n in sizes {
        let runtime = arbor_orchestrator::session_runtime().map_err(|err| err.to_string())?;
        runtime.block_on(one(n))?;
    }
    Ok(())
}

async fn one(n: usize) -> Result<(), String> {
    let dir = crate::bench_dir()?;
    let home = dir.path().join("home");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).map_err(|err| err.to_string())?;
    let model = ScriptedModel::from_json(&script(n).to_string()).map_err(|err| err.to_string())?;
    model.set_recording(false);
    let mut config = RunConfig::new(home.clone(), cwd);
    config.max_running = n.max(1);
    config.max_resident = n.max(1);
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let orch = Orchestrator::new(config, Arc::new(model))
        .await
        .map_err(|err| err.to_string())?;
    orch.start("fan out").await.map_err(|err| err.to_string())?;
    orch.wait_quiescent().await;
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let status = orch.root_status().await;
    let totals = orch.log_totals();
    orch.shutdown("done").await;
    let store_commits = orch.store().commits();
    if status != AgentStatus::Completed(Some("every worker reported".into())) {
        return Err(format!("fan-out of {n} ended as {status}"));
    }
    report(json!({
        "bench": "fanout",
        "workers": n,
        "wall_s": wall,
        "cpu_s": cpu,
        "ms_per_worker": wall * 1000.0 / n as f64,
        "cpu_ms_per_worker": cpu * 1000.0 / n as f64,
        "peak_rss_mib": peak_rss_kib() as f64 / 1024.0,
        "log_lines": totals.lines,
        "log_syncs": totals.syncs,
        "store_commits": store_commits,
        "store_bytes": dir_bytes(&home.join("state.sqlite")) + dir_bytes(&home.join("state.sqlite-wal")),
        "home_bytes": dir_bytes(&home),
    }));
    Ok(())
}
