//! Approvals and the sandbox: what an approval costs besides the model (the policy's judgement,
//! then the broker's round trip with a reviewer that answers at once), and what the sandbox
//! costs an `exec_command` of `true` (sandboxed against plain, in one run).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig, TerminalAnswer};
use arbor_protocol::{AgentStatus, SandboxMode};
use arbor_tools::{ExecRequest, Launcher, PlainLauncher, Policy, SandboxLauncher, run_exec};
use serde_json::{Value, json};

use crate::report;

/// Commands judged per policy measurement.
const EVALUATIONS: usize = 20_000;
/// `exec_command` calls per session in the round-trip measurement.
const CALLS: usize = 200;
/// Pairs of sessions (plain, approved) in the round-trip measurement.
const PAIRS: usize = 5;
/// Runs of `true` per launcher in the sandbox measurement.
const RUNS: usize = 300;

const RULES: &str = r#"
[[rule]]
pattern = ["git", ["push", "fetch"]]
decision = "prompt"
[[rule]]
pattern = ["rm", "-rf"]
decision = "forbidden"
[[rule]]
pattern = ["cargo", ["build", "test", "check"]]
decision = "allow"
"#;

const COMMANDS: &[&str] = &[
    "true",
    "git status && git diff --stat",
    "bash -lc \"cargo test -p arbor-cli && git push origin main\"",
    "rg -n 'fn main' src | head -20",
    "echo $(date) > out.txt",
];

pub fn run() -> Result<(), String> {
    policy_evaluate()?;
    let runtime = arbor_orchestrator::session_runtime().map_err(|err| err.to_string())?;
    runtime.block_on(async {
        round_trip().await?;
        sandbox_ratio().await
    })
}

fn policy_evaluate() -> Result<(), String> {
    let mut policy = Policy::empty();
    policy
        .add_file(Path::new("bench.toml"), RULES)
        .map_err(|err| err.to_string())?;
    let started = Instant::now();
    let mut asks = 0usize;
    for i in 0..EVALUATIONS {
        let evaluation = policy.evaluate(COMMANDS[i % COMMANDS.len()]);
        asks += usize::from(!arbor_tools::is_known_read_only(&evaluation));
        asks += arbor_tools::canonical(&evaluation.command).len() % 2;
    }
    let elapsed = started.elapsed();
    report(json!({
        "bench": "approvals.policy_evaluate",
        "evaluations": EVALUATIONS,
        "us_per_evaluation": micros(elapsed) / EVALUATIONS as f64,
        "checksum": asks,
    }));
    Ok(())
}

/// The root runs `true` [`CALLS`] times, each call asking to run outside the sandbox or not.
fn script(escalated: bool) -> Value {
    let mut args = json!({"cmd": "true"});
    if escalated {
        args["sandbox_permissions"] = json!("require_escalated");
        args["justification"] = json!("benchmark");
    }
    let mut responses: Vec<Value> = (0..CALLS)
        .map(|_| json!([{"call": "exec_command", "args": args}]))
        .collect();
    responses.push(json!([{"say": "done"}]));
    json!({"agents": [{"match": "/root", "responses": responses}]})
}

/// One session of [`CALLS`] plain commands (no sandbox, so the command itself costs the same
/// either way); with `escalated`, each is approved once by a terminal that answers at once.
/// Returns the session's wall time and its store commits.
async fn session(escalated: bool) -> Result<(Duration, u64), String> {
    let dir = crate::bench_dir()?;
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).map_err(|err| err.to_string())?;
    let model =
        ScriptedModel::from_json(&script(escalated).to_string()).map_err(|err| err.to_string())?;
    model.set_recording(false);
    let mut config = RunConfig::new(dir.path().join("home"), cwd);
    config.sandbox = SandboxMode::DangerFullAccess;
    config.max_turn_responses = CALLS + 1;
    config.approval_terminal = true;
    config.approval_wait = None;
    let orch = Orchestrator::new(config, Arc::new(model))
        .await
        .map_err(|err| err.to_string())?;
    if let Some(mut prompts) = orch.take_approval_prompts() {
        tokio::spawn(async move {
            while let Some(prompt) = prompts.recv().await {
                let _ = prompt.answer(TerminalAnswer::ApproveOnce).await;
            }
        });
    }
    let commits_before = orch.store().commits();
    let started = Instant::now();
    orch.start("run true")
        .await
        .map_err(|err| err.to_string())?;
    orch.wait_quiescent().await;
    let elapsed = started.elapsed();
    let commits = orch.store().commits() - commits_before;
    let status = orch.root_status().await;
    let approvals = orch
        .store()
        .approvals(orch.session_id())
        .map_err(|err| err.to_string())?
        .len();
    orch.shutdown("done").await;
    if status != AgentStatus::Completed(Some("done".into())) {
        return Err(format!("the approval benchmark ended as {status}"));
    }
    if approvals != if escalated { CALLS } else { 0 } {
        return Err(format!("{approvals} approvals recorded"));
    }
    Ok((elapsed, commits))
}

async fn round_trip() -> Result<(), String> {
    // Warm up (kernel probe, page cache), then measure plain and approved sessions in turn; the
    // median of the pairs' differences is the overhead (one disk's fsync jitter is large).
    session(false).await?;
    let mut plain = Vec::new();
    let mut approved = Vec::new();
    let mut overheads = Vec::new();
    let mut commits = 0;
    for _ in 0..PAIRS {
        let (base, _) = session(false).await?;
        let (with, made) = session(true).await?;
        let (base, with) = (micros(base) / CALLS as f64, micros(with) / CALLS as f64);
        plain.push(base);
        approved.push(with);
        overheads.push(with - base);
        commits = made;
    }
    report(json!({
        "bench": "approvals.round_trip",
        "calls": PAIRS * CALLS,
        "us_per_call_plain": crate::median(plain),
        "us_per_call_approved": crate::median(approved),
        "us_approval_overhead_median": crate::median(overheads.clone()),
        "us_approval_overhead_min": overheads.iter().copied().fold(f64::INFINITY, f64::min),
        "goal_us": 1000,
        "store_commits_per_approval": commits as f64 / CALLS as f64,
        "includes": "policy evaluate, request and decision committed to the store (fsync) and the rollout, events, status changes, the reviewer's answer",
    }));
    Ok(())
}

async fn run_true(launcher: &Arc<dyn Launcher>, cwd: &Path) -> Result<Duration, String> {
    let request = ExecRequest::new("true", cwd).with_launcher(Arc::clone(launcher));
    let started = Instant::now();
    let outcome = run_exec(request).await;
    let elapsed = started.elapsed();
    if !outcome.succeeded() {
        return Err(format!("`true` failed: {outcome:?}"));
    }
    Ok(elapsed)
}

async fn sandbox_ratio() -> Result<(), String> {
    let dir = crate::bench_dir()?;
    std::fs::create_dir_all(dir.path().join(".git")).map_err(|err| err.to_string())?;
    let sandbox = SandboxLauncher::new(SandboxMode::WorkspaceWrite, dir.path(), false);
    let label = sandbox.status().label.clone();
    let sandboxed: Arc<dyn Launcher> = Arc::new(sandbox);
    // The same sandbox with the network open: no socket filter (nor Landlock's TCP rules).
    let open: Arc<dyn Launcher> = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        dir.path(),
        true,
    ));
    let plain: Arc<dyn Launcher> = Arc::new(PlainLauncher);
    for launcher in [&sandboxed, &open, &plain] {
        run_true(launcher, dir.path()).await?;
    }
    let (mut with, mut networked, mut without) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        with.push(micros(run_true(&sandboxed, dir.path()).await?));
        networked.push(micros(run_true(&open, dir.path()).await?));
        without.push(micros(run_true(&plain, dir.path()).await?));
    }
    let mean = |samples: &[f64]| samples.iter().sum::<f64>() / samples.len() as f64;
    let (with_mean, networked_mean, without_mean) = (mean(&with), mean(&networked), mean(&without));
    let (with, networked, without) = (
        crate::median(with),
        crate::median(networked),
        crate::median(without),
    );
    report(json!({
        "bench": "approvals.sandbox_exec_true",
        "runs": RUNS,
        "sandbox": label,
        "us_sandboxed": with_mean,
        "us_sandboxed_network_open": networked_mean,
        "us_plain": without_mean,
        "ratio": with_mean / without_mean,
        "us_sandboxed_median": with,
        "us_sandboxed_network_open_median": networked,
        "us_plain_median": without,
        "us_closed_network_cost_median": with - networked,
    }));
    Ok(())
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
