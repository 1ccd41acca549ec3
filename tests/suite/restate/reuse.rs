//! A closed agent's path taken again (behaviour §1): a new spawn of the same name after
//! `close_agent` is a new agent that answers, with a history of its own, on the Restate engine
//! as on the local engine; the scripted cursor belongs to the path on both.

use std::time::Duration;

use serde_json::{Value, json};

use super::cluster::Cluster;
use super::driver::outputs;
use crate::cli::{Workspace, text};

fn script() -> Value {
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "first task"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "close_agent", "args": {"target": "w"}}],
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "second task"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "root saw both"}]
        ]},
        {"match": "/root/w", "responses": [
            [{"say": "first answer to {{input}}"}],
            [{"say": "second answer to {{input}}"}]
        ]}
    ]})
}

const FIRST: &str = "all targets are idle: /root/w completed: first answer to first task";
const SECOND: &str = "all targets are idle: /root/w completed: second answer to second task";

fn wait_messages(waits: &[String]) -> Vec<String> {
    waits
        .iter()
        .map(|out| {
            let value: Value = serde_json::from_str(out).expect("wait output");
            value["message"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

#[test]
fn a_closed_path_spawned_again_answers_as_a_new_agent() {
    let cluster = Cluster::start(2);
    let run = cluster.exec(&script(), "reuse", Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.final_message().as_deref(), Some("root saw both"));
    let restate_waits = wait_messages(&run.outputs("/root", "wait_agent"));
    assert_eq!(restate_waits, [FIRST, SECOND]);
    let session = run.session();
    let rows = cluster.agents(&session);
    let w = rows
        .iter()
        .find(|row| row.path.as_str() == "/root/w")
        .expect("w");
    assert_eq!(w.edge.as_deref(), Some("open"));
    // The new agent's history is its own: none of the closed agent's task or answer.
    let history = cluster.history(&session, &w.path);
    let dump = serde_json::to_string(&history.items).expect("json");
    assert!(dump.contains("second task"), "{dump}");
    assert!(!dump.contains("first"), "{dump}");
    assert!(!history.closed);

    // The local engine, same script: the same waits and the same answer.
    let ws = Workspace::new();
    let path = ws.dir.path().join("reuse.json");
    std::fs::write(&path, script().to_string()).expect("script");
    let out = ws.exec(&path, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let local_waits = wait_messages(&outputs(&events, "/root", "wait_agent"));
    assert_eq!(local_waits, restate_waits);
}
