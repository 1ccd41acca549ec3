//! `interrupt_agent` and `arbor interrupt|close --engine restate`: a running turn stops at its
//! next model-request boundary, the agent stays available, and its next turn runs on.

use std::time::Duration;

use arbor_protocol::{AgentStatus, Event};
use serde_json::{Value, json};

use super::cluster::Cluster;

#[test]
fn an_interrupted_turn_stops_and_the_agent_takes_a_followup() {
    let cluster = Cluster::start(2);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "slow", "message": "work"}}],
            [{"call": "interrupt_agent", "args": {"target": "slow"}}],
            [{"call": "exec_command", "args": {"cmd": "touch interrupted.flag"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"call": "followup_task", "args": {"target": "slow", "message": "again"}},
             {"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "interrupt checked"}]
        ]},
        // The slow agent's command ends only once the root has interrupted it (the root
        // makes the flag after its interrupt returned), so the interrupt always comes while
        // the turn runs: before its first request or at the boundary after the command.
        {"match": "/root/slow", "repeat": true, "responses": [
            [{"call": "exec_command", "args": {
                "cmd": "until [ -e interrupted.flag ]; do sleep 0.05; done"}}],
            [{"say": "slow done"}]
        ]}
    ]});
    let run = cluster.exec(&script, "interrupt", Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.final_message().as_deref(), Some("interrupt checked"));
    let interrupted: Value =
        serde_json::from_str(&run.outputs("/root", "interrupt_agent")[0]).expect("output");
    let previous = &interrupted["previous_status"];
    assert!(
        ["pending_init", "queued", "running"].contains(&previous.as_str().unwrap_or_default()),
        "{previous}"
    );
    let waits = run.outputs("/root", "wait_agent");
    let first: Value = serde_json::from_str(&waits[0]).expect("wait");
    assert_eq!(
        first["message"],
        "all targets are idle: /root/slow interrupted: interrupted"
    );
    let second: Value = serde_json::from_str(&waits[1]).expect("wait");
    assert_eq!(
        second["message"],
        "all targets are idle: /root/slow completed: slow done"
    );
    let aborted = run
        .events
        .iter()
        .filter(|line| {
            matches!(&line.event, Event::TurnAborted { path, reason }
            if path.as_str() == "/root/slow" && reason == "interrupted")
        })
        .count();
    assert_eq!(aborted, 1);
    // From the command line: interrupting an idle agent changes nothing; closing it does.
    let session = run.session();
    let out = cluster.arbor(&["interrupt", &session, "/root/slow", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(reply["previous_status"]["completed"], "slow done");
    let out = cluster.arbor(&["close", &session, "/root/slow"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = cluster.agents(&session);
    let slow = rows
        .iter()
        .find(|row| row.path.as_str() == "/root/slow")
        .expect("slow");
    assert_eq!(slow.status, AgentStatus::Closed);
    assert_eq!(slow.edge.as_deref(), Some("closed"));
    let out = cluster.arbor(&["close", &session, "/root"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("root is not a spawned agent"));
}
