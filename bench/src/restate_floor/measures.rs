//! The five measures of `restate-floor`, each printing its JSON lines.

use std::time::Instant;

use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::{Body, Caller, Options, Setup};
use crate::{median, report};

/// Runs every measure in order.
pub async fn all(setup: &Setup, options: &Options) -> Result<(), String> {
    one_key(setup, options.calls).await?;
    for &keys in &options.keys {
        many_keys(setup, keys, options.spread, options.rounds).await?;
    }
    run_step(setup, options.calls).await?;
    state(setup, &options.sizes, options.state_calls).await?;
    send_vs_call(setup, options.calls).await
}

/// Milliseconds since `start`.
fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// `x` to three decimals.
fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// The sample below which nine tenths of `samples` lie.
fn p90(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let at = (samples.len() * 9 / 10).min(samples.len().saturating_sub(1));
    samples.get(at).copied().unwrap_or(f64::NAN)
}

fn line(measure: &str, fields: Value) {
    let mut value = json!({"bench": "restate_floor", "measure": measure});
    if let (Some(out), Value::Object(fields)) = (value.as_object_mut(), fields) {
        out.extend(fields);
    }
    report(value);
}

/// `calls` sequential calls of `handler` on `key`; the latency of each, in ms.
async fn sequential(
    caller: &Caller,
    key: &str,
    handler: &str,
    body: &Body,
    calls: usize,
) -> Result<Vec<f64>, String> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        caller.call(key, handler, body.clone()).await?;
        samples.push(ms(start));
    }
    Ok(samples)
}

/// Sequential calls of `noop` on one key: latency and calls/s.
async fn one_key(setup: &Setup, calls: usize) -> Result<(), String> {
    let caller = &setup.caller;
    sequential(caller, "one", "noop", &Body::None, 20).await?;
    let cpu = setup.cpu();
    let start = Instant::now();
    let samples = sequential(caller, "one", "noop", &Body::None, calls).await?;
    let wall = start.elapsed().as_secs_f64();
    let (server_cpu, bench_cpu) = setup.cpu().per_call_since(cpu, calls);
    line(
        "one_key",
        json!({
            "calls": calls,
            "median_ms": round3(median(samples.clone())),
            "p90_ms": round3(p90(samples)),
            "calls_per_s": round3(calls as f64 / wall),
            "server_cpu_ms_per_call": round3(server_cpu),
            "bench_cpu_ms_per_call": round3(bench_cpu),
        }),
    );
    Ok(())
}

/// One round: `keys` tasks in flight, each making `per_key` sequential calls on its own key.
async fn spread_round(caller: &Caller, keys: usize, per_key: usize) -> Result<(), String> {
    let mut tasks = JoinSet::new();
    for i in 0..keys {
        let caller = caller.clone();
        let key = format!("spread-{keys}-{i}");
        tasks.spawn(async move { sequential(&caller, &key, "noop", &Body::None, per_key).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| format!("a caller task failed: {e}"))??;
    }
    Ok(())
}

/// `spread` calls of `noop` over `keys` keys at once: calls/s, the median of `rounds`.
async fn many_keys(setup: &Setup, keys: usize, spread: usize, rounds: usize) -> Result<(), String> {
    let caller = &setup.caller;
    let per_key = spread / keys;
    let calls = per_key * keys;
    // One call per key first: the ingress connections and the keys' first invocations.
    spread_round(caller, keys, 1).await?;
    let cpu = setup.cpu();
    let mut throughputs = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        spread_round(caller, keys, per_key).await?;
        throughputs.push(calls as f64 / start.elapsed().as_secs_f64());
    }
    let (server_cpu, bench_cpu) = setup.cpu().per_call_since(cpu, calls * rounds);
    let lowest = throughputs.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = throughputs.iter().copied().fold(0.0, f64::max);
    line(
        "many_keys",
        json!({
            "keys": keys,
            "calls": calls,
            "rounds": rounds,
            "calls_per_s": round3(median(throughputs)),
            "calls_per_s_range": [round3(lowest), round3(highest)],
            "server_cpu_ms_per_call": round3(server_cpu),
            "bench_cpu_ms_per_call": round3(bench_cpu),
        }),
    );
    Ok(())
}

/// A handler with one journaled `ctx.run` against one with none, calls interleaved.
async fn run_step(setup: &Setup, calls: usize) -> Result<(), String> {
    let caller = &setup.caller;
    sequential(caller, "step-none", "noop", &Body::None, 10).await?;
    sequential(caller, "step-one", "step", &Body::None, 10).await?;
    let (mut none, mut one) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        none.extend(sequential(caller, "step-none", "noop", &Body::None, 1).await?);
        one.extend(sequential(caller, "step-one", "step", &Body::None, 1).await?);
    }
    let (none_ms, one_ms) = (median(none), median(one));
    line(
        "run_step",
        json!({
            "calls": calls,
            "none_ms": round3(none_ms),
            "one_ms": round3(one_ms),
            "extra_ms": round3(one_ms - none_ms),
        }),
    );
    Ok(())
}

/// A handler reading and writing back a state value of each size; then the slope.
async fn state(setup: &Setup, sizes: &[usize], calls: usize) -> Result<(), String> {
    let caller = &setup.caller;
    let mut points = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let key = format!("state-{size}");
        let body = Body::Json(size.to_string());
        // The first call writes the value; later ones read it and write it back.
        sequential(caller, &key, "state", &body, 3).await?;
        let cpu = setup.cpu();
        let samples = sequential(caller, &key, "state", &body, calls).await?;
        let (server_cpu, bench_cpu) = setup.cpu().per_call_since(cpu, calls);
        let at = median(samples.clone());
        points.push((size as f64 / 1024.0, at));
        line(
            "state",
            json!({
                "bytes": size,
                "calls": calls,
                "median_ms": round3(at),
                "p90_ms": round3(p90(samples)),
                "server_cpu_ms_per_call": round3(server_cpu),
                "bench_cpu_ms_per_call": round3(bench_cpu),
            }),
        );
    }
    if let Some((per_kib, at_zero)) = fit(&points) {
        line(
            "state_slope",
            json!({
                "sizes": sizes,
                "us_per_kib": round3(per_kib * 1e3),
                "intercept_ms": round3(at_zero),
            }),
        );
    }
    Ok(())
}

/// The least-squares line through `points`: (slope, intercept); none for fewer than two
/// distinct x.
fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (sxx > 0.0).then(|| {
        let slope = sxy / sxx;
        (slope, mean_y - slope * mean_x)
    })
}

/// Object A sending one-way to object B against calling B and waiting for its answer.
async fn send_vs_call(setup: &Setup, calls: usize) -> Result<(), String> {
    let caller = &setup.caller;
    let to = |target: &str| Body::Json(format!("\"{target}\""));
    let (to_call, to_send) = (to("b-call"), to("b-send"));
    sequential(caller, "a-call", "call_to", &to_call, 10).await?;
    let cpu = setup.cpu();
    let start = Instant::now();
    let called = sequential(caller, "a-call", "call_to", &to_call, calls).await?;
    let call_wall = ms(start);
    let (call_server, call_bench) = setup.cpu().per_call_since(cpu, calls);

    sequential(caller, "a-send", "send_to", &to_send, 10).await?;
    // B's queue drained: a call of B waits behind the sends B has not run yet.
    sequential(caller, "b-send", "noop", &Body::None, 1).await?;
    let cpu = setup.cpu();
    let start = Instant::now();
    let sent = sequential(caller, "a-send", "send_to", &to_send, calls).await?;
    sequential(caller, "b-send", "noop", &Body::None, 1).await?;
    let send_wall = ms(start);
    let (send_server, send_bench) = setup.cpu().per_call_since(cpu, calls);
    line(
        "send_vs_call",
        json!({
            "calls": calls,
            "call_ms": round3(median(called)),
            "send_ms": round3(median(sent)),
            "call_wall_ms_per_call": round3(call_wall / calls as f64),
            "send_wall_ms_per_call_drained": round3(send_wall / calls as f64),
            "call_server_cpu_ms_per_call": round3(call_server),
            "send_server_cpu_ms_per_call": round3(send_server),
            "call_bench_cpu_ms_per_call": round3(call_bench),
            "send_bench_cpu_ms_per_call": round3(send_bench),
        }),
    );
    Ok(())
}
