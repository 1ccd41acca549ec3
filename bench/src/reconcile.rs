//! Opening a session whose store lags its log by 10 000 lines (a driver killed before its
//! projections caught up): what a read sees it with (the lines applied in memory), and what
//! taking the session over costs (the lines applied to the store and the rollouts).

use std::sync::Arc;
use std::time::Instant;

use arbor_agent_graph::{SessionState, Store};
use arbor_model::ScriptedModel;
use arbor_orchestrator::open::{log_path_of, reconcile};
use arbor_orchestrator::{Orchestrator, RunConfig, SessionView};
use arbor_protocol::ThreadId;
use arbor_rollout::log::read_log;
use serde_json::json;

use crate::{bench_dir, median, report};

const LAG: usize = 10_000;
const RUNS: usize = 5;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub fn run() -> Result<(), String> {
    let dir = bench_dir()?;
    let home = dir.path().join("home");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).map_err(err)?;
    let mut config = RunConfig::new(home.clone(), cwd);
    config.max_running = 1000;
    config.max_resident = 1000;
    let model = ScriptedModel::from_json(&crate::fanout::script(1000).to_string()).map_err(err)?;
    model.set_recording(false);
    let session: ThreadId = arbor_orchestrator::session_runtime()
        .map_err(err)?
        .block_on(async {
            let orch = Orchestrator::new(config, Arc::new(model))
                .await
                .map_err(err)?;
            orch.start("fan out").await.map_err(err)?;
            orch.wait_quiescent().await;
            orch.shutdown("done").await;
            Ok::<_, String>(orch.session_id())
        })?;
    let store = Store::open(&home).map_err(err)?;
    let root = store.thread(session).map_err(err)?.ok_or("no root")?;
    let log = log_path_of(&home, &root);
    let lines = read_log(&log, 0).map_err(err)?.lines;
    if lines.len() <= LAG {
        return Err(format!("the session has only {} lines", lines.len()));
    }
    store.close();
    let (mut reads, mut opens) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        lag_store(&home, session, &lines[..lines.len() - LAG])?;
        let started = Instant::now();
        let view = SessionView::open(&home, &session.to_string()).map_err(err)?;
        reads.push(started.elapsed().as_secs_f64() * 1000.0);
        if view.state.threads.len() != 1001 {
            return Err("the view lacks agents".into());
        }
        let store = Store::open(&home).map_err(err)?;
        let started = Instant::now();
        let reconciled = reconcile(&home, &store, session, &log).map_err(err)?;
        opens.push(started.elapsed().as_secs_f64() * 1000.0);
        if reconciled.state.applied.seq != lines.len() as u64 {
            return Err("reconcile did not reach the log's end".into());
        }
        store.close();
    }
    report(json!({
        "bench": "reconcile",
        "lines_behind": LAG,
        "log_lines": lines.len(),
        "read_ms": median(reads),
        "open_ms": median(opens),
        "goal_ms": 200,
    }));
    Ok(())
}

/// Replaces the store of `home` with one that holds only `lines` of the session's log.
fn lag_store(
    home: &std::path::Path,
    session: ThreadId,
    lines: &[(arbor_protocol::RolloutLine, u64)],
) -> Result<(), String> {
    let mut state = SessionState::new(session);
    for (line, end) in lines {
        state.apply(line, *end);
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!(
            "{}{suffix}",
            home.join(arbor_agent_graph::STATE_FILE_NAME).display()
        ));
    }
    let store = Store::open(home).map_err(err)?;
    store.commit(&mut state).map_err(err)?;
    store.close();
    Ok(())
}
