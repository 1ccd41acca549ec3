//! The spawn and path rules, queue-only mail, `wait_agent` any, `close_agent` and
//! `list_agents` on the Restate engine, with the exact texts the model reads.

use std::time::Duration;

use arbor_protocol::Event;
use serde_json::{Value, json};

use super::cluster::Cluster;

#[test]
fn spawn_rules_mail_wait_and_close_answer_as_on_the_local_engine() {
    let cluster = Cluster::start(2);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "Bad", "message": "x"}},
             {"call": "spawn_agent", "args": {"task_name": "a", "message": "hi"}},
             {"call": "spawn_agent", "args": {"task_name": "a", "message": "again"}},
             {"call": "followup_task", "args": {"target": "/root", "message": "x"}},
             {"call": "send_message", "args": {"target": "nope", "message": "x"}},
             {"call": "send_message", "args": {"target": "a", "message": "  "}}],
            [{"call": "wait_agent", "args": {"targets": ["a"], "mode": "all", "timeout_ms": 60000}}],
            // The follow-up's answer arrives within this response (mail is taken only at a
            // request boundary), so the wait for any finds it waiting.
            [{"call": "followup_task", "args": {"target": "a", "message": "again"}},
             {"call": "wait_agent", "args": {"targets": ["a"], "timeout_ms": 60000}}],
            [{"call": "send_message", "args": {"target": "a", "message": "note"}},
             {"call": "close_agent", "args": {"target": "a"}},
             {"call": "send_message", "args": {"target": "a", "message": "later"}},
             {"call": "close_agent", "args": {"target": "/root"}},
             {"call": "list_agents", "args": {}}],
            [{"say": "rules checked"}]
        ]},
        {"match": "/root/a", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "deeper", "message": "x"}}],
            [{"say": "a done"}],
            [{"say": "a again"}]
        ]}
    ]});
    let run = cluster.exec(&script, "check the rules", Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.final_message().as_deref(), Some("rules checked"));
    let spawns = run.outputs("/root", "spawn_agent");
    assert_eq!(
        spawns[0],
        "agent_name must use only lowercase letters, digits, and underscores"
    );
    let spawned: Value = serde_json::from_str(&spawns[1]).expect("spawn output");
    assert_eq!(spawned["task_name"], "/root/a");
    assert!(spawned["nickname"].as_str().is_some_and(|n| !n.is_empty()));
    assert_eq!(spawns[2], "agent path `/root/a` already exists");
    assert_eq!(
        run.outputs("/root/a", "spawn_agent"),
        ["agent depth limit reached: max depth is 1"]
    );
    assert_eq!(
        run.outputs("/root", "followup_task"),
        ["Follow-up tasks can't target the root agent", ""]
    );
    assert_eq!(
        run.outputs("/root", "send_message"),
        [
            "live agent path `/root/nope` not found",
            "Empty message can't be sent to an agent",
            "",
            "agent /root/a is closed",
        ]
    );
    let waits = run.outputs("/root", "wait_agent");
    let all: Value = serde_json::from_str(&waits[0]).expect("wait output");
    assert_eq!(
        all["message"],
        "all targets are idle: /root/a completed: a done"
    );
    assert_eq!(all["timed_out"], false);
    let any: Value = serde_json::from_str(&waits[1]).expect("wait output");
    assert_eq!(any["message"], "mail is waiting from /root/a");
    assert_eq!(any["timed_out"], false);
    let closes = run.outputs("/root", "close_agent");
    let closed: Value = serde_json::from_str(&closes[0]).expect("close output");
    assert_eq!(closed["previous_status"]["completed"], "a again");
    assert_eq!(closes[1], "root is not a spawned agent");
    let listed: Value =
        serde_json::from_str(&run.outputs("/root", "list_agents")[0]).expect("list");
    let a = listed["agents"]
        .as_array()
        .and_then(|agents| agents.iter().find(|agent| agent["agent_name"] == "/root/a"))
        .expect("/root/a listed");
    assert_eq!(a["agent_status"], "closed");
    // The spawn and the follow-up woke /root/a; the queued message did not.
    let a_turns = run
        .events
        .iter()
        .filter(
            |line| matches!(&line.event, Event::TurnStarted { path } if path.as_str() == "/root/a"),
        )
        .count();
    assert_eq!(a_turns, 2);
}

#[test]
fn the_command_line_names_what_is_wrong() {
    let cluster = Cluster::start(1);
    let unknown = arbor_protocol::ThreadId::new().as_string();
    let out = cluster.arbor(&["agents", &unknown]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("unknown session {unknown}")),
        "{stderr}"
    );
    let out = cluster.arbor(&["exec", "no script"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--script FILE"), "{stderr}");
}
