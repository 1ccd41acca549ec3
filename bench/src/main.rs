//! `arbor-bench`: runs arbor's benchmarks and prints one JSON line per measurement.
//!
//! Usage: `cargo run --release -p arbor-bench -- [store|rollout|fanout [N...]|stream|http|revive|revive-window|resume|churn|pingpong [N]|approvals|reconcile|mcp|durability|gc [N]|ui|worktree|restate-floor [FLAGS]|ids|all]`.
//! Files go under `ARBOR_BENCH_DIR` (default: the system temp dir).

mod approvals;
mod compaction;
mod durability;
mod fanout;
mod http_overhead;
mod ids;
mod mcp;
mod reconcile;
mod residency;
mod restate_floor;
mod rollout;
mod store;
mod stream;
mod ui;
mod worktree;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map_or("all", String::as_str);
    let numbers: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if numbers.is_empty() {
        vec![10, 100, 1000]
    } else {
        numbers.clone()
    };
    let result = match which {
        "store" => store::run(),
        "rollout" => rollout::run(),
        "fanout" => fanout::run(&sizes),
        "stream" => stream::run(),
        "http" => http_overhead::run(200),
        "revive" => residency::revive_latency(),
        "revive-window" => compaction::revive_window(),
        "gc" => compaction::gc(numbers.first().copied().unwrap_or(1_000)),
        "resume" => residency::resume_workload(),
        "resume-child" => residency::resume_child(&args[1..]),
        "churn" => residency::churn(),
        "pingpong" => residency::ping_pong(numbers.first().copied().unwrap_or(10_000)),
        "approvals" => approvals::run(),
        "durability" => durability::run_all(),
        "reconcile" => reconcile::run(),
        "mcp" => mcp::run(),
        "ui" => ui::run(),
        "worktree" => worktree::run(),
        "restate-floor" => restate_floor::run(&args[1..]),
        "ids" => ids::run(),
        "all" => store::run()
            .and_then(|()| rollout::run())
            .and_then(|()| fanout::run(&sizes))
            .and_then(|()| stream::run())
            .and_then(|()| http_overhead::run(200))
            .and_then(|()| residency::revive_latency())
            .and_then(|()| compaction::revive_window())
            .and_then(|()| residency::resume_workload())
            .and_then(|()| residency::churn())
            .and_then(|()| residency::ping_pong(10_000))
            .and_then(|()| approvals::run())
            .and_then(|()| reconcile::run())
            .and_then(|()| mcp::run())
            .and_then(|()| ui::run())
            .and_then(|()| worktree::run())
            .and_then(|()| ids::run())
            .and_then(|()| durability::run_all())
            .and_then(|()| compaction::gc(1_000)),
        other => {
            eprintln!(
                "error: unknown benchmark `{other}`; expected store, rollout, fanout, stream, http, revive, revive-window, resume, churn, pingpong, approvals, reconcile, mcp, durability, gc, ui, worktree, restate-floor, ids or all"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Prints one measurement as a JSON line.
pub fn report(value: serde_json::Value) {
    println!("{value}");
}

/// A fresh temporary directory under `ARBOR_BENCH_DIR` (default: the system temp dir).
pub fn bench_dir() -> Result<tempfile::TempDir, String> {
    let base = std::env::var_os("ARBOR_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    tempfile::Builder::new()
        .prefix("arbor-bench-")
        .tempdir_in(base)
        .map_err(|err| format!("cannot create a benchmark dir: {err}"))
}

/// The resource usage of this process (`libc::RUSAGE_SELF`) or of its ended children
/// (`libc::RUSAGE_CHILDREN`).
pub fn rusage_of(who: libc::c_int) -> libc::rusage {
    // SAFETY: getrusage fills the zeroed struct we pass.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    }
}

fn rusage() -> libc::rusage {
    rusage_of(libc::RUSAGE_SELF)
}

/// User plus system CPU time of this process so far, in seconds.
pub fn cpu_seconds() -> f64 {
    let usage = rusage();
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Peak resident set size of this process, in KiB.
pub fn peak_rss_kib() -> u64 {
    u64::try_from(rusage().ru_maxrss).unwrap_or(0)
}

/// The median time, in microseconds, of one durable 4 KiB overwrite (`write` + `fdatasync`)
/// in `dir`, over `runs`: what one sync costs on this disk right now, to read the figures
/// that depend on it against.
pub fn sync_cost_us(dir: &Path, runs: usize) -> Result<f64, String> {
    use std::io::{Seek, SeekFrom, Write};

    let path = dir.join("sync-probe");
    let mut file = std::fs::File::create(&path).map_err(|e| format!("cannot create probe: {e}"))?;
    let block = [0x5a_u8; 4096];
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = std::time::Instant::now();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&block))
            .and_then(|()| file.sync_data())
            .map_err(|e| format!("probe write failed: {e}"))?;
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    std::fs::remove_file(&path).map_err(|e| format!("cannot remove probe: {e}"))?;
    Ok(median(samples))
}

/// The middle sample (the upper one of an even count); NaN when there is none.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Total size of the files under `path` (or of the file itself).
pub fn dir_bytes(path: &Path) -> u64 {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(meta) if meta.is_dir() => std::fs::read_dir(path)
            .map(|entries| entries.flatten().map(|e| dir_bytes(&e.path())).sum())
            .unwrap_or(0),
        _ => 0,
    }
}
