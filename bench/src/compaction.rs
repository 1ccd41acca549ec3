//! Long-lived trees: revival of an agent whose rollout holds 100 000 items of which the last
//! history window holds 2 000 (it reads from the last window), and `gc` of 1 000 stopped
//! sessions.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arbor_agent_graph::Store;
use arbor_model::ScriptedModel;
use arbor_orchestrator::retention::{Rules, collect};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{Compacted, CompactionTrigger, ResponseItem, RolloutItem, Usage};
use arbor_rollout::log::{SessionLog, Start, Urgency};
use arbor_rollout::{Replay, RolloutProjector, read_last_window, read_rollout};
use serde_json::json;

use crate::{bench_dir, median, report};

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn message(i: usize) -> RolloutItem {
    RolloutItem::ResponseItem(ResponseItem::Message {
        role: if i.is_multiple_of(2) {
            "user"
        } else {
            "assistant"
        }
        .into(),
        content: format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8)),
    })
}

/// Reading and replaying the last window of a 100 000-item rollout (2 000 in the window),
/// against reading and replaying the whole file.
pub fn revive_window() -> Result<(), String> {
    const ITEMS: usize = 100_000;
    const WINDOW: usize = 2_000;
    let dir = bench_dir()?;
    let header = crate::rollout::meta();
    let id = header.thread_id;
    let (log, outlets) =
        SessionLog::start(&dir.path().join("log.jsonl"), Start::default()).map_err(err)?;
    let mut batch = vec![RolloutItem::SessionMeta(Box::new(header))];
    batch.extend((0..ITEMS - WINDOW).map(message));
    batch.push(RolloutItem::Compacted(Box::new(Compacted {
        summary: "the work so far".into(),
        window: vec![ResponseItem::Message {
            role: "user".into(),
            content: "summary of the work so far".into(),
        }],
        trigger: CompactionTrigger::Auto,
        tokens_before: 1_000_000,
        turn: 1,
        turn_end: None,
        last_message: None,
        usage: Usage::default(),
    })));
    batch.extend((0..WINDOW - 1).map(message));
    let lsn = log.append(id, batch).map_err(err)?;
    log.wait_durable(lsn, Urgency::Now).map_err(err)?;
    log.close().map_err(err)?;
    let mut projector = RolloutProjector::new(dir.path());
    for synced in outlets.synced.iter() {
        projector.project(&synced.lines).map_err(err)?;
    }
    let path = projector.path_of(id).ok_or("no rollout")?.to_path_buf();
    let bytes = std::fs::metadata(&path).map_err(err)?.len();
    let mut samples = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let read = read_last_window(&path).map_err(err)?;
        let replay = Replay::from_read(&read);
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if replay.history.len() != WINDOW {
            return Err(format!(
                "replayed {} of {WINDOW} items",
                replay.history.len()
            ));
        }
    }
    let mut whole = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let read = read_rollout(&path).map_err(err)?;
        let replay = Replay::from_read(&read);
        whole.push(started.elapsed().as_secs_f64() * 1000.0);
        if replay.history.len() != WINDOW {
            return Err("the whole file replays to another history".into());
        }
    }
    report(json!({
        "bench": "revive_window",
        "items": ITEMS,
        "window_items": WINDOW,
        "rollout_bytes": bytes,
        "median_ms": median(samples),
        "whole_file_median_ms": median(whole),
        "goal_ms": 20,
    }));
    Ok(())
}

/// `gc` of 1 000 stopped sessions idle past the cut: their logs, rollouts, leases and rows.
pub fn gc(sessions: usize) -> Result<(), String> {
    let dir = bench_dir()?;
    let home = dir.path().join("home");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).map_err(err)?;
    let script = json!({"agents": [{"match": "/root", "responses": [[{"say": "hello"}]]}]});
    let runtime = arbor_orchestrator::session_runtime().map_err(err)?;
    let made = Instant::now();
    for _ in 0..sessions {
        let model = ScriptedModel::from_json(&script.to_string()).map_err(err)?;
        runtime.block_on(async {
            let config = RunConfig::new(home.clone(), cwd.clone());
            let orch = Orchestrator::new(config, Arc::new(model))
                .await
                .map_err(err)?;
            orch.start("say hello").await.map_err(err)?;
            orch.wait_quiescent().await;
            orch.shutdown("done").await;
            Ok::<_, String>(())
        })?;
    }
    let made_s = made.elapsed().as_secs_f64();
    // Every session idle for 40 days.
    let old = SystemTime::now() - Duration::from_secs(40 * 86_400);
    let mut logs = Vec::new();
    find_logs(&home.join("sessions"), &mut logs);
    for log in &logs {
        std::fs::File::options()
            .write(true)
            .open(log)
            .and_then(|file| file.set_modified(old))
            .map_err(err)?;
    }
    let store = Store::open(&home).map_err(err)?;
    let rules = Rules {
        older_than: Some(Duration::from_secs(30 * 86_400)),
        keep_last: None,
    };
    let started = Instant::now();
    let outcome = collect(&home, &store, rules, false).map_err(err)?;
    let gc_ms = started.elapsed().as_secs_f64() * 1000.0;
    if outcome.deleted.len() != sessions || !store.sessions().map_err(err)?.is_empty() {
        return Err(format!(
            "deleted {} of {sessions} sessions",
            outcome.deleted.len()
        ));
    }
    report(json!({
        "bench": "gc",
        "sessions": sessions,
        "freed_bytes": outcome.freed,
        "gc_ms": gc_ms,
        "setup_s": made_s,
        "goal_ms": 2000,
    }));
    Ok(())
}

fn find_logs(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_logs(&path, found);
        } else if path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("log-"))
        {
            found.push(path);
        }
    }
}
