//! The lease, SIGKILL recovery (mid-turn, after a send, during evictions), `doctor --rebuild`.

use std::path::Path;

use arbor_protocol::RolloutItem;
use arbor_rollout::read_rollout;
use serde_json::{Value, json};

use super::{Driver, agent, agents, write_script};
use crate::cli::{Workspace, session_of, text};

/// Kills the process whose pid a command wrote to `file` (an orphan of a killed driver).
fn kill_pid_in(file: &Path) {
    if let Ok(pid) = std::fs::read_to_string(file)
        && let Ok(pid) = pid.trim().parse::<i32>()
    {
        // SAFETY: plain kill(2) of a process this test started through arbor.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

fn consumed_ids(rollout: &Path) -> Vec<String> {
    read_rollout(rollout)
        .expect("rollout reads back")
        .items()
        .filter_map(|item| match item {
            RolloutItem::MailConsumed(c) => Some(c.mail.id.to_string()),
            _ => None,
        })
        .collect()
}

fn assert_unique(ids: &[String]) {
    let set: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(set.len(), ids.len(), "a mail was delivered twice: {ids:?}");
}

#[test]
fn a_second_driver_exits_3_and_a_dead_drivers_lease_is_taken_over() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "block.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "exec_command", "args": {"cmd": "echo $$ > root.pid; exec sleep 600", "timeout_ms": 600000}}],
                [{"say": "unreachable"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    driver.until(|e| e["type"] == "tool.call");
    let session = driver.session.clone();
    let second = ws
        .arbor()
        .args(["resume", &session, "more work", "--script"])
        .arg(&script)
        .output()
        .expect("resume");
    assert_eq!(second.status.code(), Some(3), "{}", text(&second.stderr));
    let pid = driver.child.id().to_string();
    assert!(
        text(&second.stderr).contains(&pid),
        "names the holder: {}",
        text(&second.stderr)
    );
    driver.kill();
    kill_pid_in(&ws.project().join("root.pid"));
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root")["status"],
        json!({"interrupted": "process_exit"})
    );
    let taken = ws.run(&["resume", &session]);
    assert_eq!(taken.status.code(), Some(0), "{}", text(&taken.stderr));
    assert!(
        text(&taken.stderr).contains(&format!("took over the lease of process {pid}")),
        "{}",
        text(&taken.stderr)
    );
}

#[test]
fn sigkill_mid_turn_and_after_send_loses_nothing_and_delivers_nothing_twice() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "crash.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "idle", "message": "finish at once"}},
                 {"call": "spawn_agent", "args": {"task_name": "busy", "message": "block"}}],
                [{"call": "wait_agent", "args": {"targets": ["idle"], "mode": "all", "timeout_ms": 600000}}],
                [{"call": "send_message", "args": {"target": "idle", "message": "acknowledged note"}}],
                [{"call": "exec_command", "args": {"cmd": "echo $$ > root.pid; exec sleep 600", "timeout_ms": 600000}}],
                [{"say": "unreachable"}]]},
            {"match": "/root/idle", "responses": [[{"say": "idle done"}]]},
            {"match": "/root/busy", "responses": [
                [{"call": "exec_command", "args": {"cmd": "echo $$ > busy.pid; exec sleep 600", "timeout_ms": 600000}}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    // (b) right after send_message returned, (a) while both turns are mid-way.
    driver.until(|e| e["type"] == "tool.result" && e["name"] == "send_message");
    driver
        .until(|e| e["type"] == "tool.call" && e["path"] == "/root" && e["name"] == "exec_command");
    let session = driver.session.clone();
    driver.kill();
    kill_pid_in(&ws.project().join("root.pid"));
    kill_pid_in(&ws.project().join("busy.pid"));

    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root")["status"],
        json!({"interrupted": "process_exit"})
    );
    assert_eq!(
        agent(&list, "/root/busy")["status"],
        json!({"interrupted": "process_exit"})
    );
    assert_eq!(
        agent(&list, "/root/idle")["status"],
        json!({"completed": "idle done"})
    );
    assert_eq!(
        agent(&list, "/root/idle")["unread"],
        1,
        "the acknowledged note survived"
    );

    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "{{task_name}} resumed with {{input}}"}]]}]}),
    );
    for target in ["/root/idle", "/root/busy"] {
        let out = ws
            .arbor()
            .args(["followup", &session, target, "carry on", "--script"])
            .arg(&day_two)
            .output()
            .expect("followup");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{target}: {}",
            text(&out.stderr)
        );
    }
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root/busy")["status"],
        json!({"completed": "busy resumed with carry on"})
    );
    assert_eq!(
        agent(&list, "/root/idle")["status"],
        json!({"completed": "idle resumed with carry on"})
    );
    for row in &list {
        let thread = ws.run(&["log", &session, row["id"].as_str().expect("id"), "--json"]);
        assert!(thread.status.success());
    }
    let store = arbor_agent_graph::Store::open(&ws.home()).expect("store");
    for row in &list {
        let id = arbor_protocol::ThreadId::parse(row["id"].as_str().expect("id")).expect("id");
        let record = store.thread(id).expect("read").expect("row");
        let ids = consumed_ids(&ws.home().join(&record.rollout_path));
        assert_unique(&ids);
    }
    // The busy worker's cut turn was closed out in its rollout when it was revived.
    let busy = agent(&list, "/root/busy")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let log = text(&ws.run(&["log", &session, &busy]).stdout);
    assert!(
        log.contains("turn 1 aborted: interrupted: process_exit"),
        "{log}"
    );
    assert!(
        log.contains("the turn ended before this call finished"),
        "{log}"
    );
    let idle_log = text(&ws.run(&["log", &session, "/root/idle"]).stdout);
    assert_eq!(
        idle_log
            .matches("mail read message from /root: acknowledged note")
            .count(),
        1,
        "the acknowledged note was read exactly once:\n{idle_log}"
    );
}

#[test]
fn doctor_rebuild_restores_the_same_tree_and_mail() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "s.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "a", "message": "one"}},
                 {"call": "spawn_agent", "args": {"task_name": "b", "message": "two"}},
                 {"call": "spawn_agent", "args": {"task_name": "c", "message": "three"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"call": "close_agent", "args": {"target": "c"}},
                 {"call": "send_message", "args": {"target": "a", "message": "for later"}}],
                [{"say": "done"}]]},
            {"match": "/root/*", "responses": [[{"say": "{{task_name}} done"}]]}
        ]}),
    );
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    assert!(
        ws.run(&["send", &session, "/root/b", "from the user"])
            .status
            .success()
    );
    let tree_before = ws.run(&["tree", &session, "--json", "--all"]).stdout;
    let mail_a = ws.run(&["mail", &session, "/root/a", "--json"]).stdout;
    let mail_b = ws.run(&["mail", &session, "/root/b", "--json"]).stdout;
    let checked = ws.run(&["doctor"]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stdout));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(ws.home().join(format!("state.sqlite{suffix}")));
    }
    let rebuilt = ws.run(&["doctor", "--rebuild"]);
    assert_eq!(
        rebuilt.status.code(),
        Some(0),
        "{}{}",
        text(&rebuilt.stdout),
        text(&rebuilt.stderr)
    );
    let tree_after = ws.run(&["tree", &session, "--json", "--all"]).stdout;
    let parse = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).expect("json");
    assert_eq!(parse(&tree_after), parse(&tree_before));
    assert_eq!(
        parse(&ws.run(&["mail", &session, "/root/a", "--json"]).stdout),
        parse(&mail_a)
    );
    assert_eq!(
        parse(&ws.run(&["mail", &session, "/root/b", "--json"]).stdout),
        parse(&mail_b)
    );
    assert_eq!(parse(&mail_b)[0]["content"], "from the user");
    assert_eq!(ws.run(&["doctor"]).status.code(), Some(0));
}

#[test]
fn sigkill_during_evictions_keeps_every_acknowledged_agent_revivable() {
    let ws = Workspace::new();
    let spawns: Vec<Value> = (0..30)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("w{i}"), "message": format!("task {i}")}}))
        .collect();
    let script = write_script(
        &ws,
        "churn.json",
        &json!({"agents": [
            {"match": "/root", "responses": [spawns, [{"say": "unreachable"}]]},
            {"match": "/root/*", "responses": [[{"say": "{{task_name}} did {{input}}"}]]}
        ]}),
    );
    let mut driver = Driver::start(
        &ws,
        &script,
        &["--max-running", "30", "--max-resident", "1"],
    );
    let mut spawned = Vec::new();
    let mut evictions = 0;
    while evictions < 5 {
        let event = driver.until(|e| e["type"] == "agent.spawned" || e["type"] == "agent.evicted");
        if event["type"] == "agent.evicted" {
            evictions += 1;
        } else if event["path"] != "/root" {
            spawned.push(event["path"].as_str().expect("path").to_string());
        }
    }
    let session = driver.session.clone();
    driver.kill();
    let list = agents(&ws, &session);
    for path in &spawned {
        let row = agent(&list, path);
        let log = ws.run(&["log", &session, row["id"].as_str().expect("id")]);
        assert!(log.status.success(), "{path}: {}", text(&log.stderr));
    }
    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
        {"match": "/root/*", "responses": [[{"say": "{{task_name}} back: {{input}}"}]]}]}),
    );
    let out = ws
        .arbor()
        .args(["followup", &session, "/root/w1", "again", "--script"])
        .arg(&day_two)
        .output()
        .expect("followup");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "w1 back: again");
    let log = text(&ws.run(&["log", &session, "/root/w1"]).stdout);
    assert_eq!(
        log.matches("mail read spawn from /root: task 1").count(),
        1,
        "{log}"
    );
}
