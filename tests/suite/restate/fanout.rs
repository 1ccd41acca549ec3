//! Fan-outs over two worker processes: every result reaches the root exactly once, both
//! workers take part, and a worker killed with SIGKILL mid-run costs no completed step.

use std::time::{Duration, Instant};

use arbor_protocol::{AgentPath, AgentStatus, Event, MailKind, ResponseItem};
use serde_json::{Value, json};

use super::cluster::{Cluster, Run, step_lines, steps_by_id, wait_until};

/// The root spawns `n` workers, waits for all, answers; each worker runs one command and
/// answers (each response after `delay_ms`).
fn fan_out_script(n: usize, delay_ms: u64) -> Value {
    let spawns: Vec<Value> = (0..n)
        .map(|i| {
            json!({"call": "spawn_agent",
                   "args": {"task_name": format!("w{i}"), "message": format!("task {i}")}})
        })
        .collect();
    json!({"agents": [
        {"match": "/root", "responses": [
            spawns,
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
            [{"say": "collected"}]
        ]},
        {"match": "/root/*", "responses": [
            {"delay_ms": delay_ms,
             "items": [{"call": "exec_command", "args": {"cmd": "echo out {{task_name}}"}}]},
            {"delay_ms": delay_ms, "items": [{"say": "answer {{task_name}}"}]}
        ]}
    ]})
}

/// The tree completed, and each of the `n` results reached the root once: one `result` mail
/// each, one `FINAL_ANSWER` input each in the root's history.
fn assert_collected(cluster: &Cluster, run: &Run, n: usize) {
    assert_eq!(run.code, Some(0), "exec failed: {}", run.stderr);
    assert_eq!(run.final_message().as_deref(), Some("collected"));
    let session = run.session();
    let history = cluster.history(&session, &AgentPath::root());
    for i in 0..n {
        let child = format!("/root/w{i}");
        let results = run
            .events
            .iter()
            .filter(|line| {
                matches!(&line.event, Event::MailSent { kind: MailKind::Result, author, .. }
                    if author.as_str() == child)
            })
            .count();
        assert_eq!(results, 1, "{child} sent {results} results");
        let sender = format!("Sender: {child}\n");
        let seen: Vec<&String> = history
            .items
            .iter()
            .filter_map(|item| match item {
                ResponseItem::Message { role, content }
                    if role == "user"
                        && content.contains("Message Type: FINAL_ANSWER")
                        && content.contains(&sender) =>
                {
                    Some(content)
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            seen.len(),
            1,
            "{child}'s result reached the root {} times",
            seen.len()
        );
        assert!(
            seen[0].ends_with(&format!("answer w{i}")),
            "{child}'s result: {}",
            seen[0]
        );
    }
    let agents = cluster.agents(&session);
    assert_eq!(agents.len(), n + 1);
    for row in &agents {
        assert!(
            matches!(row.status, AgentStatus::Completed(_)),
            "{} is {}",
            row.path,
            row.status
        );
    }
}

#[test]
fn a_fan_out_is_spread_over_two_workers_and_every_result_reaches_the_root_once() {
    let cluster = Cluster::start(2);
    let n = 20;
    let run = cluster.exec(&fan_out_script(n, 0), "fan out", Duration::from_secs(120));
    assert_collected(&cluster, &run, n);
    for worker in &cluster.workers {
        let asks = step_lines(&worker.log)
            .iter()
            .filter(|line| line.phase == "ask")
            .count();
        assert!(asks > 0, "{} ran no step", worker.log.display());
    }
    // Each model step ran exactly once, on one worker or the other.
    let logs: Vec<_> = cluster.workers.iter().map(|w| w.log.clone()).collect();
    for (id, lines) in steps_by_id(&logs) {
        let asks = lines.iter().filter(|line| line.phase == "ask").count();
        assert_eq!(asks, 1, "step {id:?} ran {asks} times");
    }
    // The command line reads the same tree.
    let session = run.session();
    let agents = cluster.arbor(&["agents", &session, "--json"]);
    assert!(
        agents.status.success(),
        "{}",
        String::from_utf8_lossy(&agents.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&agents.stdout).expect("agents --json");
    assert_eq!(rows.len(), n + 1);
    assert_eq!(rows[0]["path"], "/root");
    assert_eq!(rows[0]["edge"], Value::Null);
    assert_eq!(rows[1]["edge"], "open");
    let tree = cluster.arbor(&["tree", &session, "--json"]);
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let tree: Value = serde_json::from_slice(&tree.stdout).expect("tree --json");
    assert_eq!(tree["children"].as_array().map(Vec::len), Some(n));
    assert_eq!(tree["children"][0]["status"]["completed"], "answer w0");
}

#[test]
fn a_worker_killed_mid_run_costs_no_completed_step_and_the_tree_completes() {
    let mut cluster = Cluster::start(2);
    let n = 100;
    let child = cluster.spawn_exec(&fan_out_script(n, 100), "fan out");
    // Kill a worker once the workers have run a fifth of the tree's steps, while the tree
    // still runs: the one that has run the most (the kernel spreads connections, so which one
    // that is varies).
    let asks_of = |log: &std::path::Path| {
        step_lines(log)
            .iter()
            .filter(|line| line.phase == "ask")
            .count()
    };
    let logs: Vec<_> = cluster.workers.iter().map(|w| w.log.clone()).collect();
    wait_until(
        Duration::from_secs(120),
        "a fifth of the tree's steps",
        || logs.iter().map(|log| asks_of(log)).sum::<usize>() >= n / 5 * 2,
    );
    let victim = (0..logs.len())
        .max_by_key(|&at| asks_of(&logs[at]))
        .unwrap_or(0);
    let killed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let before = Instant::now();
    cluster.workers[victim].kill();
    let run = Run::finish(child, Duration::from_secs(300));
    assert_collected(&cluster, &run, n);
    eprintln!("finished {:?} after the kill", before.elapsed());
    let logs: Vec<_> = cluster.workers.iter().map(|w| w.log.clone()).collect();
    let steps = steps_by_id(&logs);
    let mut after_kill = 0;
    for (id, lines) in &steps {
        // Acknowledged means journaled: no process may run that step again.
        if let Some(acked) = lines.iter().find(|line| line.phase == "acked") {
            let again = lines
                .iter()
                .filter(|line| line.phase == "ask" && line.ts_ns > acked.ts_ns)
                .count();
            assert_eq!(again, 0, "completed step {id:?} ran again: {lines:?}");
        }
        let asks = lines.iter().filter(|line| line.phase == "ask").count();
        assert!(asks <= 2, "step {id:?} ran {asks} times: {lines:?}");
        if asks == 2 {
            assert_ne!(lines[0].pid, lines[lines.len() - 1].pid, "{id:?}");
        }
        after_kill += lines
            .iter()
            .filter(|line| line.phase == "ask" && line.ts_ns > killed_at)
            .count();
    }
    assert!(after_kill > 0, "no step ran after the kill");
    // Every model step of the tree ran to an acknowledgement somewhere: the root's 3, and
    // each worker's 2.
    let model_steps = steps
        .iter()
        .filter(|((step, _, _), lines)| {
            step == "model" && lines.iter().any(|line| line.phase == "acked")
        })
        .count();
    let replayed = steps
        .iter()
        .filter(|((step, _, _), lines)| {
            step == "model" && !lines.iter().any(|l| l.phase == "acked")
        })
        .count();
    assert_eq!(model_steps + replayed, 3 + 2 * n, "{steps:#?}");
}

#[test]
fn a_run_survives_a_restart_of_the_restate_server() {
    let mut cluster = Cluster::start(2);
    let n = 6;
    let child = cluster.spawn_exec(&fan_out_script(n, 500), "fan out");
    let logs: Vec<_> = cluster.workers.iter().map(|w| w.log.clone()).collect();
    wait_until(
        Duration::from_secs(60),
        "the children's first steps",
        || {
            logs.iter()
                .flat_map(|log| step_lines(log))
                .filter(|line| line.phase == "ask" && line.key.contains("/root/w"))
                .count()
                >= 2
        },
    );
    cluster.restart_server();
    let run = Run::finish(child, Duration::from_secs(240));
    assert_collected(&cluster, &run, n);
}
