//! MCP: what a tool call through arbor costs besides the server's own work, and what three
//! configured servers cost a session that does not use them.
//!
//! - `mcp.call_overhead`: sessions whose root makes [`CALLS`] calls of a local stdio server's
//!   read-only `echo`, against sessions making as many `list_agents` calls (the turn loop's
//!   own cost per call); the difference per call is a call through arbor. The server's own
//!   time is a direct client's round trip to the same server (rmcp over the same pipes,
//!   measured in the same run); what is left is arbor's overhead.
//! - `mcp.session_start`: a one-answer session with no server configured, with three
//!   configured whose tools are cached (the steady state: nothing starts), each in a home
//!   that has held a session before, and with three configured on a fresh home (their first
//!   listing starts them).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_mcp::{RawServer, ServerConfig};
use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::AgentStatus;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::report;

/// Tool calls per session in the overhead measurement.
const CALLS: usize = 200;
/// Sessions of each kind (the median is reported).
const ROUNDS: usize = 5;
/// Direct client round trips.
const DIRECT: usize = 1000;
/// Sessions per case in the start measurement.
const STARTS: usize = 20;

pub fn run() -> Result<(), String> {
    let runtime = arbor_orchestrator::session_runtime().map_err(|err| err.to_string())?;
    runtime.block_on(async {
        call_overhead().await?;
        session_start().await
    })
}

fn server(name: &str, pidfile: &Path) -> Result<ServerConfig, String> {
    let (command, args) = arbor_tests::tools::misbehaving_server("ok");
    let raw = RawServer {
        command: Some(command),
        args: Some(args),
        env: Some(
            [("PIDFILE".to_string(), pidfile.display().to_string())]
                .into_iter()
                .collect(),
        ),
        ..RawServer::default()
    };
    ServerConfig::from_raw(name, &raw)?.ok_or_else(|| "server switched off".to_string())
}

fn calls(name: &str, args: Value, count: usize) -> Value {
    let mut responses: Vec<Value> = (0..count)
        .map(|_| json!([{"call": name, "args": args}]))
        .collect();
    responses.push(json!([{"say": "done"}]));
    json!({"agents": [{"match": "/root", "responses": responses}]})
}

/// One session on `script` in `home`; its wall time to quiescence from opening it (with
/// `from_open`), or else from the first tool result (so a server's start is not counted).
async fn session(
    home: &Path,
    script: &Value,
    servers: Vec<ServerConfig>,
    from_open: bool,
) -> Result<Duration, String> {
    let cwd = home.join("work");
    std::fs::create_dir_all(&cwd).map_err(|err| err.to_string())?;
    let model = ScriptedModel::from_json(&script.to_string()).map_err(|err| err.to_string())?;
    model.set_recording(false);
    let mut config = RunConfig::new(home.to_path_buf(), cwd);
    config.max_turn_responses = CALLS + 2;
    config.mcp_servers = servers;
    let opened = Instant::now();
    let orch = Orchestrator::new(config, Arc::new(model))
        .await
        .map_err(|err| err.to_string())?;
    let mut events = orch.subscribe();
    let first_result = tokio::spawn(async move {
        while let Some(line) = events.recv().await {
            if matches!(line.event, arbor_protocol::Event::ToolResult { .. }) {
                return Some(Instant::now());
            }
        }
        None
    });
    orch.start("go").await.map_err(|err| err.to_string())?;
    orch.wait_quiescent().await;
    let ended = Instant::now();
    let elapsed = if from_open {
        ended - opened
    } else {
        let first = first_result
            .await
            .map_err(|err| err.to_string())?
            .ok_or("no tool result")?;
        ended - first
    };
    let status = orch.root_status().await;
    orch.shutdown("done").await;
    if status != AgentStatus::Completed(Some("done".into())) {
        return Err(format!("the mcp benchmark session ended as {status}"));
    }
    Ok(elapsed)
}

/// The median time of one `echo` round trip from a direct rmcp client to the server.
async fn direct_round_trip(pidfile: &Path) -> Result<f64, String> {
    let (command, args) = arbor_tests::tools::misbehaving_server("ok");
    let mut child = tokio::process::Command::new(command)
        .args(args)
        .env("PIDFILE", pidfile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| err.to_string())?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("no pipes".into());
    };
    let client = ().serve((stdout, stdin)).await.map_err(|err| err.to_string())?;
    let mut samples = Vec::with_capacity(DIRECT);
    for i in 0..DIRECT + 50 {
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), json!("hi"));
        let started = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
            .await
            .map_err(|err| err.to_string())?;
        if i >= 50 {
            samples.push(micros(started.elapsed()));
        }
    }
    let _ = client.cancel().await;
    let _ = child.kill().await;
    Ok(crate::median(samples))
}

async fn call_overhead() -> Result<(), String> {
    let dir = crate::bench_dir()?;
    let pidfile = dir.path().join("pids");
    let mcp_script = calls("mcp__bench__echo", json!({"text": "hi"}), CALLS);
    let base_script = calls("list_agents", json!({}), CALLS);
    let home = |n: usize| -> PathBuf { dir.path().join(format!("home{n}")) };
    // Warm up: the kernel probe, the page cache, the server's first start.
    session(
        &home(0),
        &mcp_script,
        vec![server("bench", &pidfile)?],
        false,
    )
    .await?;
    let (mut through, mut base) = (Vec::new(), Vec::new());
    // Timed from the first call's result: CALLS - 1 calls and the final answer each.
    let per_call = |elapsed: Duration| micros(elapsed) / (CALLS - 1) as f64;
    for _ in 0..ROUNDS {
        let with = session(
            &home(0),
            &mcp_script,
            vec![server("bench", &pidfile)?],
            false,
        )
        .await?;
        let without = session(&home(0), &base_script, Vec::new(), false).await?;
        through.push(per_call(with));
        base.push(per_call(without));
    }
    let direct = direct_round_trip(&pidfile).await?;
    let (through, base) = (crate::median(through), crate::median(base));
    let call = through - base;
    report(json!({
        "bench": "mcp.call_overhead",
        "calls": CALLS * ROUNDS,
        "us_per_turn_step_with_mcp_call": through,
        "us_per_turn_step_with_list_agents": base,
        "us_mcp_call_through_arbor": call,
        "us_server_round_trip_direct": direct,
        "us_arbor_overhead": call - direct,
        "goal_us": 1000,
        "server": "tests/fixtures/mcp/misbehaving.py echo (read-only: no sync before the call)",
    }));
    Ok(())
}

async fn session_start() -> Result<(), String> {
    let dir = crate::bench_dir()?;
    let pidfile = dir.path().join("pids");
    let script = json!({"agents": [{"match": "/root", "responses": [[{"say": "done"}]]}]});
    let three = || -> Result<Vec<ServerConfig>, String> {
        ["a", "b", "c"]
            .iter()
            .map(|name| server(name, &pidfile))
            .collect()
    };
    // Both homes have held a session (the store exists); the cached case's has listed the
    // servers once. Their sessions alternate, so drift on the machine hits both alike.
    let cached_home = dir.path().join("cached");
    let plain_home = dir.path().join("plain");
    session(&cached_home, &script, three()?, true).await?;
    session(&plain_home, &script, Vec::new(), true).await?;
    let starts_before = pid_lines(&pidfile);
    let (mut none, mut cached, mut cold) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STARTS {
        none.push(micros(
            session(&plain_home, &script, Vec::new(), true).await?,
        ));
        cached.push(micros(
            session(&cached_home, &script, three()?, true).await?,
        ));
    }
    let started_while_cached = pid_lines(&pidfile) - starts_before;
    for round in 0..3 {
        let fresh = dir.path().join(format!("cold{round}"));
        cold.push(micros(session(&fresh, &script, three()?, true).await?));
    }
    report(json!({
        "bench": "mcp.session_start",
        "sessions": STARTS,
        "us_no_servers": crate::median(none),
        "us_three_servers_cached": crate::median(cached),
        "servers_started_while_cached": started_while_cached,
        "us_three_servers_first_session": crate::median(cold),
        "measures": "open the session, the root's one-answer turn, until quiescent",
    }));
    if started_while_cached != 0 {
        return Err(format!(
            "{started_while_cached} servers started in sessions that did not use them"
        ));
    }
    Ok(())
}

fn pid_lines(pidfile: &Path) -> usize {
    std::fs::read_to_string(pidfile)
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
