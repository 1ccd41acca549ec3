//! Residency and resume benchmarks: revive latency by rollout length, resume of a 1000-agent
//! tree, churn under `max_resident = 8`, the resume workload after a fan-out, and ping-pong
//! between two siblings.

use std::sync::Arc;
use std::time::Instant;

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentStatus, ResponseItem, RolloutItem};
use arbor_rollout::log::{SessionLog, Start, Urgency};
use arbor_rollout::{Replay, RolloutProjector, read_rollout};
use serde_json::{Value, json};

use crate::{bench_dir, cpu_seconds, median, peak_rss_kib, report};

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    arbor_orchestrator::session_runtime().map_err(|err| err.to_string())
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Reading and replaying rollouts of 100, 1 000 and 10 000 items: what a revival reads.
pub fn revive_latency() -> Result<(), String> {
    let dir = bench_dir()?;
    for items in [100usize, 1_000, 10_000] {
        let header = crate::rollout::meta();
        let id = header.thread_id;
        let (log, outlets) = SessionLog::start(
            &dir.path().join(format!("log-{items}.jsonl")),
            Start::default(),
        )
        .map_err(err)?;
        let mut batch = vec![RolloutItem::SessionMeta(Box::new(header))];
        batch.extend((0..items).map(|i| {
            RolloutItem::ResponseItem(ResponseItem::Message {
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                content: format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8)),
            })
        }));
        let lsn = log.append(id, batch).map_err(err)?;
        log.wait_durable(lsn, Urgency::Now).map_err(err)?;
        log.close().map_err(err)?;
        let mut projector = RolloutProjector::new(dir.path());
        for synced in outlets.synced.iter() {
            projector.project(&synced.lines).map_err(err)?;
        }
        let path = projector.path_of(id).ok_or("no rollout")?.to_path_buf();
        let mut samples = Vec::new();
        for _ in 0..15 {
            let started = Instant::now();
            let read = read_rollout(&path).map_err(err)?;
            let replay = Replay::from_read(&read);
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            if replay.history.len() != items {
                return Err(format!(
                    "replayed {} of {items} items",
                    replay.history.len()
                ));
            }
        }
        report(
            json!({"bench": "revive_latency", "items": items, "median_ms": median(samples), "goal_ms_at_10000": 20}),
        );
    }
    Ok(())
}

fn fanout_then(n: usize, dir: &std::path::Path) -> Result<(RunConfig, String), String> {
    let home = dir.join("home");
    let cwd = dir.join("work");
    std::fs::create_dir_all(&cwd).map_err(err)?;
    let mut config = RunConfig::new(home, cwd);
    config.max_running = n;
    config.max_resident = n;
    let model = ScriptedModel::from_json(&crate::fanout::script(n).to_string()).map_err(err)?;
    model.set_recording(false);
    let session = runtime()?.block_on(async {
        let orch = Orchestrator::new(config.clone(), Arc::new(model))
            .await
            .map_err(err)?;
        orch.start("fan out").await.map_err(err)?;
        orch.wait_quiescent().await;
        orch.shutdown("done").await;
        Ok::<_, String>(orch.session_id().to_string())
    })?;
    Ok((config, session))
}

/// The second day of the resume workload: `/root` sends a follow-up to worker 57, which makes
/// its three responses again and reports back.
fn day_two() -> Value {
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "followup_task", "args": {"target": "worker_57", "message": "again"}}],
            [{"call": "wait_agent", "args": {"targets": ["worker_57"], "mode": "all", "timeout_ms": 600000}}],
            [{"say": "worker 57 reported"}]]},
        {"match": "/root/*", "responses": [
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"say": "{{task_name}} done again"}]]}
    ]})
}

/// Resume of a 1000-agent tree to ready, in this process; then the resume workload in a fresh
/// process (this program, started again as `resume-child`), timed from its start to ready and
/// to done.
pub fn resume_workload() -> Result<(), String> {
    let dir = bench_dir()?;
    let (config, session) = fanout_then(1000, dir.path())?;
    let model = Arc::new(ScriptedModel::from_json(&day_two().to_string()).map_err(err)?);
    let (agents, ready_ms) = runtime()?.block_on(async {
        let started = Instant::now();
        let (orch, info) = Orchestrator::resume(config.clone(), model, &session)
            .await
            .map_err(err)?;
        let ready_ms = started.elapsed().as_secs_f64() * 1000.0;
        orch.shutdown("done").await;
        Ok::<_, String>((info.agents, ready_ms))
    })?;
    report(
        json!({"bench": "resume_1000_to_ready", "agents": agents, "ready_ms": ready_ms, "goal_ms": 200}),
    );

    let exe = std::env::current_exe().map_err(err)?;
    let started = Instant::now();
    let mut child = std::process::Command::new(exe)
        .arg("resume-child")
        .arg(&config.home)
        .arg(&config.cwd)
        .arg(&session)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the resuming process: {e}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or("the resuming process has no stdout")?;
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    let ready = lines.next().transpose().map_err(err)?;
    let ready_ms = started.elapsed().as_secs_f64() * 1000.0;
    let done = lines.next().transpose().map_err(err)?;
    let exit = child.wait().map_err(err)?;
    let done_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (Some(ready), Some(done), true) = (ready, done, exit.success()) else {
        return Err(format!("the resuming process failed ({exit})"));
    };
    let number = |line: String| line.trim().parse::<u64>().map_err(err);
    report(
        json!({"bench": "resume_workload", "from": "process start", "agents": number(ready)?,
        "ready_ms": ready_ms, "done_ms": done_ms, "model_requests": number(done)?}),
    );
    Ok(())
}

/// The fresh process of the resume workload: resumes `session`, says `ready` (the number of
/// agents registered), runs the second day, says `done` (the model requests it made).
pub fn resume_child(args: &[String]) -> Result<(), String> {
    let [home, cwd, session] = args else {
        return Err("usage: arbor-bench resume-child HOME CWD SESSION".into());
    };
    let model = Arc::new(ScriptedModel::from_json(&day_two().to_string()).map_err(err)?);
    model.set_recording(true);
    let config = RunConfig::new(home.into(), cwd.into());
    runtime()?.block_on(async {
        let (orch, info) = Orchestrator::resume(config, model.clone(), session)
            .await
            .map_err(err)?;
        println!("{}", info.agents);
        orch.start("ask worker 57 again").await.map_err(err)?;
        orch.wait_quiescent().await;
        let status = orch.root_status().await;
        orch.shutdown("done").await;
        if status != AgentStatus::Completed(Some("worker 57 reported".into())) {
            return Err(format!("resume workload ended as {status}"));
        }
        println!("{}", model.requests().len());
        Ok(())
    })
}

/// 1000 agents under `max_resident = 8`, each receiving three follow-ups in turn.
pub fn churn() -> Result<(), String> {
    let n = 1000;
    let dir = bench_dir()?;
    let mut root: Vec<Value> = vec![json!((0..n).map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("w{i}"), "message": "start"}})).collect::<Vec<_>>())];
    root.push(json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}]));
    for round in 0..3 {
        root.push(json!((0..n).map(|i| json!({"call": "followup_task", "args": {"target": format!("w{i}"), "message": format!("round {round}")}})).collect::<Vec<_>>()));
        root.push(
            json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}]),
        );
    }
    root.push(json!([{"say": "churned"}]));
    let script = json!({"agents": [
        {"match": "/root", "responses": root},
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "{{task_name}}: {{input}}"}]]}
    ]});
    let model = ScriptedModel::from_json(&script.to_string()).map_err(err)?;
    model.set_recording(false);
    let mut config = RunConfig::new(dir.path().join("home"), dir.path().to_path_buf());
    config.max_running = 8;
    config.max_resident = 8;
    runtime()?.block_on(async {
        let cpu = cpu_seconds();
        let started = Instant::now();
        let orch = Orchestrator::new(config, Arc::new(model)).await.map_err(err)?;
        orch.start("churn").await.map_err(err)?;
        orch.wait_quiescent().await;
        let wall = started.elapsed().as_secs_f64();
        let status = orch.root_status().await;
        orch.shutdown("done").await;
        if status != AgentStatus::Completed(Some("churned".into())) {
            return Err(format!("churn ended as {status}"));
        }
        report(json!({"bench": "churn", "agents": n, "max_resident": 8, "followups": 3 * n,
            "wall_s": wall, "cpu_s": cpu_seconds() - cpu, "peak_rss_mib": peak_rss_kib() as f64 / 1024.0, "goal_rss_mib": 150}));
        Ok(())
    })
}

/// Rallies measured per `pingpong` run: the disk's speed drifts, so the median is reported.
const RALLIES: usize = 3;

/// Two siblings pass `messages` follow-ups back and forth (each a line of the log, delivered
/// at once); [`RALLIES`] fresh sessions, reported with the median rate.
pub fn ping_pong(messages: usize) -> Result<(), String> {
    let mut rallies = (0..RALLIES)
        .map(|_| rally(messages))
        .collect::<Result<Vec<_>, _>>()?;
    let rates: Vec<f64> = rallies.iter().map(|r| r.rate.round()).collect();
    rallies.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let median = &rallies[RALLIES / 2];
    report(
        json!({"bench": "ping_pong", "messages": messages, "rallies": rates,
        "messages_per_s": median.rate.round(), "wall_s": median.wall,
        "log_syncs": median.syncs, "store_commits": median.commits,
        "us_per_message": (1e6 / median.rate * 10.0).round() / 10.0,
        "sync_us": (median.sync_us * 10.0).round() / 10.0,
        "goal_per_s": 3000}),
    );
    Ok(())
}

/// One measured rally.
struct Rally {
    rate: f64,
    wall: f64,
    /// Syncs of the session log during the rally.
    syncs: u64,
    /// Commits of the store's projection.
    commits: u64,
    /// What one sync cost on this disk around the rally.
    sync_us: f64,
}

fn rally(messages: usize) -> Result<Rally, String> {
    let half = messages / 2;
    let hop =
        |to: &str| json!([{"call": "followup_task", "args": {"target": to, "message": "ball"}}]);
    let mut ping: Vec<Value> = Vec::new();
    let mut pong: Vec<Value> = vec![json!([{"say": "ready"}])];
    for _ in 0..half {
        ping.push(hop("/root/pong"));
        ping.push(json!([{"say": "sent"}]));
        pong.push(hop("/root/ping"));
        pong.push(json!([{"say": "sent"}]));
    }
    ping.push(json!([{"say": "done"}]));
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "pong", "message": "wait"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"call": "spawn_agent", "args": {"task_name": "ping", "message": "serve"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "rally over"}]]},
        {"match": "/root/ping", "responses": ping},
        {"match": "/root/pong", "responses": pong}
    ]});
    let dir = bench_dir()?;
    let sync_before = crate::sync_cost_us(dir.path(), 200)?;
    let model = ScriptedModel::from_json(&script.to_string()).map_err(err)?;
    model.set_recording(false);
    let mut config = RunConfig::new(dir.path().join("home"), dir.path().to_path_buf());
    // One child turn at a time: a ball sent while its receiver's turn is still running joins
    // that turn (behaviour §4) instead of starting the next one, and the rally would stop.
    config.max_running = 1;
    let mut rally = runtime()?.block_on(async {
        let orch = Orchestrator::new(config, Arc::new(model))
            .await
            .map_err(err)?;
        let started = Instant::now();
        orch.start("rally").await.map_err(err)?;
        orch.wait_quiescent().await;
        let wall = started.elapsed().as_secs_f64();
        let status = orch.root_status().await;
        let totals = orch.log_totals();
        let commits = orch.store().commits();
        let agents = orch.agents().await;
        let players: Vec<String> = agents
            .iter()
            .filter(|a| !a.path.is_root())
            .map(|a| format!("{} {}", a.path, a.status))
            .collect();
        let ping_done = AgentStatus::Completed(Some("done".into()));
        let ping_ok = agents
            .iter()
            .any(|a| a.path.as_str() == "/root/ping" && a.status == ping_done);
        orch.shutdown("done").await;
        if status != AgentStatus::Completed(Some("rally over".into())) {
            return Err(format!(
                "ping-pong ended as {status}; {}",
                players.join("; ")
            ));
        }
        if !ping_ok {
            return Err(format!("the rally stopped early: {}", players.join("; ")));
        }
        Ok(Rally {
            rate: messages as f64 / wall,
            wall,
            syncs: totals.syncs,
            commits,
            sync_us: sync_before,
        })
    })?;
    // The disk's cost around the rally: the figure depends on it.
    rally.sync_us = (rally.sync_us + crate::sync_cost_us(dir.path(), 200)?) / 2.0;
    Ok(rally)
}
