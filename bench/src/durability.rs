//! What durability costs, through the command line: the 1 000-worker fan-out and a rally of
//! 10 000 follow-ups, each with its home on a RAM disk (`/dev/shm`, syncs are free) and on a
//! disk whose every sync lasts 4 ms (a preload library of the bench's own, `slowdisk.c`, as on
//! network volumes and laptops with full fsync), and the resume of the fan-out's session with
//! one follow-up, from process start, on that slow disk. `ratio` = RAM wall / slow wall.
//!
//! Needs the release `arbor` beside this binary (`cargo build --release -p arbor-cli`) and a
//! C compiler for the preload library.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::{median, report};

const SLOW_US: u64 = 4_000;
const WORKERS: usize = 1_000;
const MESSAGES: usize = 10_000;
const RUNS: usize = 3;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The `arbor` binary next to this one.
fn arbor() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(err)?;
    let path = exe.with_file_name("arbor");
    if !path.exists() {
        return Err(format!(
            "{} is missing: build it with `cargo build --release -p arbor-cli`",
            path.display()
        ));
    }
    Ok(path)
}

/// Compiles the slow-disk preload library into `dir`.
fn slowdisk(dir: &Path) -> Result<PathBuf, String> {
    let source = dir.join("slowdisk.c");
    std::fs::write(&source, include_str!("../slowdisk/slowdisk.c")).map_err(err)?;
    let library = dir.join("slowdisk.so");
    let built = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .status()
        .map_err(|e| format!("cannot run cc for the slow-disk library: {e}"))?;
    if !built.success() {
        return Err("cc could not build the slow-disk library".into());
    }
    Ok(library)
}

fn fan_out() -> Value {
    let spawns: Vec<Value> = (0..WORKERS)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("w_{i}"), "message": format!("part {i}")}}))
        .collect();
    json!({"agents": [
        {"match": "/root", "responses": [
            spawns,
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "collected"}]]},
        {"match": "/root/w_*", "repeat": true, "responses": [
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"say": "{{path}}: done ({{input}})"}]]}
    ]})
}

fn rally() -> Value {
    let hop =
        |to: &str| json!([{"call": "followup_task", "args": {"target": to, "message": "ball"}}]);
    let mut a = Vec::new();
    let mut b = vec![json!([{"say": "ready"}])];
    for _ in 0..MESSAGES / 2 {
        a.push(hop("/root/b"));
        a.push(json!([{"say": "sent"}]));
        b.push(hop("/root/a"));
        b.push(json!([{"say": "sent"}]));
    }
    a.push(json!([{"say": "a done"}]));
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "wait"}}],
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "start"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "rally over"}]]},
        {"match": "/root/a", "responses": a},
        {"match": "/root/b", "responses": b}
    ]})
}

fn day_two() -> Value {
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "followup_task", "args": {"target": "/root/w_57", "message": "double-check"}}],
            [{"call": "wait_agent", "args": {"targets": ["/root/w_57"], "mode": "all", "timeout_ms": 3_600_000}}],
            [{"say": "w_57 checked"}]]},
        {"match": "/root/w_57", "responses": [
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"call": "list_agents", "args": {"path_prefix": "{{path}}"}}],
            [{"say": "done again"}]]}
    ]})
}

/// One run of the command line: its wall time, the syncs it made (with the slow disk), its
/// peak memory and its standard output.
struct Run {
    wall: f64,
    syncs: u64,
    rss_mib: f64,
    stdout: String,
}

fn run(preload: Option<&Path>, home: &Path, args: &[&str]) -> Result<Run, String> {
    let count = home.with_extension("syncs");
    let _ = std::fs::remove_file(&count);
    let mut cmd = Command::new(arbor()?);
    cmd.arg("--home").arg(home).args(args);
    if let Some(preload) = preload {
        cmd.env("LD_PRELOAD", preload)
            .env("SLOWDISK_US", SLOW_US.to_string())
            .env("SLOWDISK_COUNT", &count);
    }
    let before = children_rss_kib();
    let started = Instant::now();
    let out = cmd.output().map_err(err)?;
    let wall = started.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "arbor {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let syncs = std::fs::read_to_string(&count)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .sum();
    let rss = children_rss_kib().max(before);
    Ok(Run {
        wall,
        syncs,
        rss_mib: rss as f64 / 1024.0,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    })
}

/// The largest peak memory of any child process that has ended.
fn children_rss_kib() -> u64 {
    let usage = crate::rusage_of(libc::RUSAGE_CHILDREN);
    u64::try_from(usage.ru_maxrss).unwrap_or(0)
}

/// A finished run's folder (its home inside) and session.
struct Done {
    dir: tempfile::TempDir,
    session: String,
}

/// Runs `script` in a fresh home under `base`.
fn exec(
    preload: Option<&Path>,
    base: &Path,
    script: &Value,
    extra: &[&str],
) -> Result<(Run, Done), String> {
    let dir = tempfile::Builder::new()
        .prefix("arbor-durability-")
        .tempdir_in(base)
        .map_err(err)?;
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).map_err(err)?;
    let home = dir.path().join("home");
    let cwd = dir.path().to_string_lossy().into_owned();
    let script_arg = script_path.to_string_lossy().into_owned();
    let mut args = vec!["exec", "--json", "--cwd", &cwd, "--script", &script_arg];
    args.extend_from_slice(extra);
    args.push("go");
    let run = run(preload, &home, &args)?;
    if !run.stdout.contains("\"session.completed\"") {
        return Err("the run did not complete".into());
    }
    let session = run
        .stdout
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|e| e["session_id"].as_str().map(str::to_string))
        .ok_or("no session.started")?;
    Ok((run, Done { dir, session }))
}

pub fn run_all() -> Result<(), String> {
    let tools = tempfile::tempdir().map_err(err)?;
    let preload = slowdisk(tools.path())?;
    let slow_base =
        std::env::var_os("ARBOR_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let ram = PathBuf::from("/dev/shm");
    let caps = ["--max-running", "1000", "--max-resident", "1000"];
    let (mut fan_slow, mut fan_ram, mut syncs, mut rss) = (Vec::new(), Vec::new(), 0, 0.0_f64);
    let mut last = None;
    for _ in 0..RUNS {
        let (slow, done) = exec(Some(&preload), &slow_base, &fan_out(), &caps)?;
        let (fast, _) = exec(None, &ram, &fan_out(), &caps)?;
        syncs = slow.syncs;
        rss = rss.max(fast.rss_mib).max(slow.rss_mib);
        fan_slow.push(slow.wall);
        fan_ram.push(fast.wall);
        last = Some(done);
    }
    let (mut rally_slow, mut rally_ram) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        rally_slow.push(exec(Some(&preload), &slow_base, &rally(), &[])?.0.wall);
        rally_ram.push(exec(None, &ram, &rally(), &[])?.0.wall);
    }
    let (slow, fast) = (median(fan_slow), median(fan_ram));
    let (rs, rr) = (median(rally_slow), median(rally_ram));
    report(json!({
        "bench": "durability",
        "sync_us": SLOW_US,
        "fanout_workers": WORKERS,
        "fanout_slow_s": slow,
        "fanout_ram_s": fast,
        "fanout_ratio": fast / slow,
        "fanout_syncs": syncs,
        "fanout_peak_rss_mib": rss,
        "rally_messages": MESSAGES,
        "rally_slow_per_s": (MESSAGES as f64 / rs).round(),
        "rally_ram_per_s": (MESSAGES as f64 / rr).round(),
        "rally_ratio": rr / rs,
        "goals": {"ratio": 0.5, "fanout_syncs": 100, "fanout_ram_s": 1.0, "rss_mib": 50, "rally_slow_per_s": 2500},
    }));
    if let Some(done) = last {
        resume(&preload, &done)?;
    }
    Ok(())
}

/// The last slow fan-out's session, resumed with a follow-up to worker 57, from process
/// start, on the slow disk.
fn resume(preload: &Path, done: &Done) -> Result<(), String> {
    let home = done.dir.path().join("home");
    let session = done.session.as_str();
    let script = home.with_file_name("day2.json");
    std::fs::write(&script, day_two().to_string()).map_err(err)?;
    let script = script.to_string_lossy().into_owned();
    let mut walls = Vec::new();
    let mut syncs = 0;
    for _ in 0..RUNS {
        let run = run(
            Some(preload),
            &home,
            &[
                "resume",
                session,
                "--json",
                "--script",
                &script,
                "Follow up with worker 57",
            ],
        )?;
        if !run.stdout.contains("w_57 checked") {
            return Err("the resume did not finish".into());
        }
        syncs = run.syncs;
        walls.push(run.wall * 1000.0);
    }
    report(json!({
        "bench": "durability.resume",
        "agents": WORKERS + 1,
        "sync_us": SLOW_US,
        "from": "process start",
        "median_ms": median(walls),
        "syncs": syncs,
        "goal_ms": 100,
    }));
    Ok(())
}
