//! Rollout benchmarks: appends flushed to the OS per line, appends with a sync every 100
//! lines, batched appends, creates (each a durable barrier) and reading back.
//!
//! Files go to a temporary folder under `ARBOR_BENCH_DIR` (default: the system temp folder);
//! point it at the disk `$ARBOR_HOME` lives on, since sync cost depends on it.

use std::path::Path;
use std::time::Instant;

use arbor_protocol::{
    AgentPath, ROLLOUT_FORMAT_VERSION, ResponseItem, RolloutItem, RolloutLine, SessionMeta,
    ThreadId, Timestamp,
};
use arbor_rollout::{RolloutWriter, read_rollout};
use serde_json::json;

/// Target size of one line, newline excluded: a typical `response_item`.
const LINE_BYTES: usize = 300;
const UNSYNCED_LINES: usize = 200_000;
const SYNCED_LINES: usize = 20_000;
const SYNC_EVERY: usize = 100;
const BATCH: usize = 100;
const CREATES: usize = 200;

pub fn run() -> Result<(), String> {
    let base = std::env::var_os("ARBOR_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::Builder::new()
        .prefix("arbor-bench-rollout-")
        .tempdir_in(&base)
        .map_err(|err| format!("cannot make a folder under {}: {err}", base.display()))?;
    let item = typical_item()?;

    let unsynced = append(dir.path(), "no_sync", &item, UNSYNCED_LINES, None)?;
    append(
        dir.path(),
        "sync_every_100",
        &item,
        SYNCED_LINES,
        Some(SYNC_EVERY),
    )?;
    batched(dir.path(), &item)?;
    creates(dir.path())?;
    read(&unsynced)?;
    Ok(())
}

/// A `response_item` message whose line (timestamp included) is `LINE_BYTES` long.
fn typical_item() -> Result<RolloutItem, String> {
    let message = |content: String| {
        RolloutItem::ResponseItem(ResponseItem::Message {
            role: "assistant".into(),
            content,
        })
    };
    let line = RolloutLine {
        timestamp: Timestamp::now(),
        item: message(String::new()),
    };
    let overhead = serde_json::to_string(&line)
        .map_err(|err| format!("serialise: {err}"))?
        .len();
    let words = "the quick brown fox jumps over the lazy dog ".repeat(10);
    let content = words
        .get(..LINE_BYTES.saturating_sub(overhead))
        .unwrap_or(&words)
        .to_string();
    Ok(message(content))
}

/// The header of a fresh root rollout.
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
        effort: None,
        sandbox: "workspace-write".into(),
        cwd: "/bench".into(),
        format_version: ROLLOUT_FORMAT_VERSION,
    }
}

/// Appends `lines` copies of `item` one at a time, syncing every `sync_every` lines and at the
/// end when set; returns the file for the read benchmark.
fn append(
    home: &Path,
    mode: &str,
    item: &RolloutItem,
    lines: usize,
    sync_every: Option<usize>,
) -> Result<std::path::PathBuf, String> {
    let mut writer = RolloutWriter::create(home, &meta()).map_err(|err| err.to_string())?;
    let before = writer.stats();
    let start = Instant::now();
    for n in 1..=lines {
        writer.append(item).map_err(|err| err.to_string())?;
        if sync_every.is_some_and(|every| n % every == 0) {
            writer.sync().map_err(|err| err.to_string())?;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = writer.stats();
    let bytes = stats.bytes_written - before.bytes_written;
    crate::report(json!({
        "bench": "rollout_append",
        "mode": mode,
        "lines": lines,
        "bytes": bytes,
        "line_bytes": bytes / lines as u64,
        "syncs": stats.syncs - before.syncs,
        "seconds": seconds,
        "lines_per_sec": (lines as f64 / seconds).round(),
        "mib_per_sec": bytes as f64 / seconds / (1024.0 * 1024.0),
    }));
    Ok(writer.path().to_path_buf())
}

/// Appends in batches of `BATCH` lines, one write and one sync per batch.
fn batched(home: &Path, item: &RolloutItem) -> Result<(), String> {
    let mut writer = RolloutWriter::create(home, &meta()).map_err(|err| err.to_string())?;
    let before = writer.stats();
    let batch = vec![item.clone(); BATCH];
    let start = Instant::now();
    for _ in 0..SYNCED_LINES / BATCH {
        writer.append_batch(&batch).map_err(|err| err.to_string())?;
        writer.sync().map_err(|err| err.to_string())?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = writer.stats();
    let lines = stats.lines_written - before.lines_written;
    crate::report(json!({
        "bench": "rollout_append",
        "mode": "batch_100_sync_each",
        "lines": lines,
        "bytes": stats.bytes_written - before.bytes_written,
        "syncs": stats.syncs - before.syncs,
        "seconds": seconds,
        "lines_per_sec": (lines as f64 / seconds).round(),
    }));
    Ok(())
}

/// Creates rollouts: exclusive create, header line, file and folder syncs.
fn creates(home: &Path) -> Result<(), String> {
    let start = Instant::now();
    for _ in 0..CREATES {
        RolloutWriter::create(home, &meta()).map_err(|err| err.to_string())?;
    }
    let seconds = start.elapsed().as_secs_f64();
    crate::report(json!({
        "bench": "rollout_create",
        "creates": CREATES,
        "seconds": seconds,
        "us_per_create": seconds * 1e6 / CREATES as f64,
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
