//! Session log benchmarks: appends with no one waiting, appends each waited for by its own
//! task (what group commit is for), and reading a rollout back.
//!
//! Files go to a temporary folder under `ARBOR_BENCH_DIR` (default: the system temp folder);
//! point it at the disk `$ARBOR_HOME` lives on, since sync cost depends on it.

use std::path::Path;
use std::time::Instant;

use arbor_protocol::{
    AgentPath, ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem, SessionMeta, ThreadId,
};
use arbor_rollout::log::{SessionLog, Start, Urgency};
use arbor_rollout::{RolloutProjector, read_rollout};
use serde_json::json;

/// Size of one item's content: a typical `response_item`.
const CONTENT_BYTES: usize = 240;
const UNWAITED_LINES: usize = 200_000;
/// Tasks each appending and waiting for its line to be durable before the next.
const TASKS: usize = 256;
const LINES_PER_TASK: usize = 40;

pub fn run() -> Result<(), String> {
    let base = std::env::var_os("ARBOR_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::Builder::new()
        .prefix("arbor-bench-log-")
        .tempdir_in(&base)
        .map_err(|err| format!("cannot make a folder under {}: {err}", base.display()))?;
    let rollout = unwaited(dir.path())?;
    waited(dir.path())?;
    read(&rollout)?;
    Ok(())
}

fn item(n: usize) -> RolloutItem {
    RolloutItem::ResponseItem(ResponseItem::Message {
        role: "assistant".into(),
        content: format!("{n:08} {}", "x".repeat(CONTENT_BYTES)),
    })
}

pub fn meta() -> SessionMeta {
    let id = ThreadId::new();
    SessionMeta {
        thread_id: id,
        session_id: id,
        parent_id: None,
        path: AgentPath::root(),
        depth: 0,
        nickname: None,
        role: "default".into(),
        model: "bench".into(),
        provider: None,
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/bench".into(),
        format_version: ROLLOUT_FORMAT_VERSION,
        repository: None,
        handle: None,
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Appends with nobody waiting, then one wait for all; projects the lines into the rollout.
/// Returns the rollout's path.
fn unwaited(dir: &Path) -> Result<std::path::PathBuf, String> {
    let header = meta();
    let id = header.thread_id;
    let (log, outlets) =
        SessionLog::start(&dir.join("unwaited.jsonl"), Start::default()).map_err(err)?;
    let started = Instant::now();
    log.append(id, [RolloutItem::SessionMeta(Box::new(header))])
        .map_err(err)?;
    for n in 0..UNWAITED_LINES {
        log.append(id, [item(n)]).map_err(err)?;
    }
    let appended = started.elapsed().as_secs_f64();
    log.wait_durable(log.appended(), Urgency::Now)
        .map_err(err)?;
    let durable = started.elapsed().as_secs_f64();
    let syncs = log.syncs();
    log.close().map_err(err)?;
    let mut projector = RolloutProjector::new(dir);
    for batch in outlets.synced.iter() {
        projector.project(&batch.lines).map_err(err)?;
    }
    crate::report(json!({
        "bench": "log.append_unwaited",
        "lines": UNWAITED_LINES,
        "append_us_per_line": appended * 1e6 / UNWAITED_LINES as f64,
        "durable_seconds": durable,
        "syncs": syncs,
    }));
    projector
        .path_of(id)
        .map(Path::to_path_buf)
        .ok_or_else(|| "no rollout".to_string())
}

/// Many tasks, each waiting for its line to be durable before appending the next: group commit
/// gives each sync to every line appended before it.
fn waited(dir: &Path) -> Result<(), String> {
    let runtime = arbor_orchestrator::session_runtime().map_err(err)?;
    let (log, _outlets) =
        SessionLog::start(&dir.join("waited.jsonl"), Start::default()).map_err(err)?;
    let sync_us = crate::sync_cost_us(dir, 50)?;
    let started = Instant::now();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                let id = ThreadId::new();
                for n in 0..LINES_PER_TASK {
                    let lsn = log
                        .append(id, [item(t * LINES_PER_TASK + n)])
                        .map_err(err)?;
                    log.durable(lsn, Urgency::Now).await.map_err(err)?;
                }
                Ok::<(), String>(())
            }));
        }
        for task in tasks {
            task.await.map_err(err)??;
        }
        Ok::<(), String>(())
    })?;
    let seconds = started.elapsed().as_secs_f64();
    let lines = TASKS * LINES_PER_TASK;
    let syncs = log.syncs();
    log.close().map_err(err)?;
    crate::report(json!({
        "bench": "log.append_waited",
        "tasks": TASKS,
        "lines": lines,
        "seconds": seconds,
        "lines_per_sec": (lines as f64 / seconds).round(),
        "syncs": syncs,
        "lines_per_sync": lines as f64 / syncs.max(1) as f64,
        "sync_us": sync_us,
    }));
    Ok(())
}

/// Reads a whole rollout back.
fn read(path: &Path) -> Result<(), String> {
    let bytes = std::fs::metadata(path)
        .map_err(|err| format!("stat {}: {err}", path.display()))?
        .len();
    let start = Instant::now();
    let read = read_rollout(path).map_err(|err| err.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    let lines = read.lines.len();
    crate::report(json!({
        "bench": "rollout_read",
        "lines": lines,
        "bytes": bytes,
        "seconds": seconds,
        "lines_per_sec": (lines as f64 / seconds).round(),
        "mib_per_sec": bytes as f64 / seconds / (1024.0 * 1024.0),
    }));
    Ok(())
}
