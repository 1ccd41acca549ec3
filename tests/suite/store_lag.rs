//! Reads from other processes while the store lags the session log (a driver killed between
//! a line reaching the log and its projection): every read applies the lines the store has not
//! seen, so statuses, unread mail and the tree are what the log says.

use arbor_agent_graph::{SessionState, Store};
use arbor_protocol::ThreadId;
use arbor_rollout::log::read_log;
use serde_json::{Value, json};

use crate::cli::{Workspace, text};
use crate::resume::{Driver, agent, agents, write_script};

/// Replaces the store of `ws` with one that holds only the first `keep` lines of the session's
/// log (what `keep` says of the lines: a predicate on each, which stops at the first refused).
pub(crate) fn store_behind(ws: &Workspace, session: &str, keep: impl Fn(&Value) -> bool) {
    let id = ThreadId::parse(session).expect("session id");
    let log = find_log(ws, session);
    let mut state = SessionState::new(id);
    for (line, end) in read_log(&log, 0).expect("log").lines {
        let value = serde_json::to_value(&line).expect("line");
        if !keep(&value) {
            break;
        }
        state.apply(&line, end);
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!(
            "{}{suffix}",
            ws.home().join(arbor_agent_graph::STATE_FILE_NAME).display()
        ));
    }
    let store = Store::open(&ws.home()).expect("store");
    store.commit(&mut state).expect("commit");
    store.close();
}

/// The log of `session` under the workspace's home.
pub(crate) fn find_log(ws: &Workspace, session: &str) -> std::path::PathBuf {
    find_file(ws, &format!("{session}.jsonl"), "log-")
}

/// The rollout of thread `id` under the home's sessions.
pub(crate) fn find_rollout(ws: &Workspace, id: &str) -> std::path::PathBuf {
    find_file(ws, &format!("-{id}.jsonl"), "rollout-")
}

/// The file under the home's sessions whose name starts with `prefix` and ends with `suffix`.
fn find_file(ws: &Workspace, suffix: &str, prefix: &str) -> std::path::PathBuf {
    walk(&ws.home().join("sessions"))
        .into_iter()
        .find(|path| {
            path.file_name().is_some_and(|n| {
                let name = n.to_string_lossy();
                name.starts_with(prefix) && name.ends_with(suffix)
            })
        })
        .unwrap_or_else(|| panic!("no file {prefix}…{suffix}"))
}

pub(crate) fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// A store that stopped before the last turns ended: the read commands show how they ended.
#[test]
fn a_store_behind_its_log_reports_what_the_log_says() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "lag.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "go"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "all done"}]]},
            {"match": "/root/w", "responses": [[{"say": "w done"}]]}
        ]}),
    );
    let driver = Driver::start(&ws, &script, &[]);
    let session = driver.session.clone();
    assert_eq!(driver.wait(), 0);
    // Up to the first turn end: the store has w and the root running.
    store_behind(&ws, &session, |line| line["type"] != "turn_completed");
    let stored = Store::open(&ws.home()).expect("store");
    let id = ThreadId::parse(&session).expect("id");
    assert!(
        stored.load_session(id).expect("load").applied.seq > 0,
        "the store holds a part of the log"
    );
    stored.close();
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root/w")["status"],
        json!({"completed": "w done"})
    );
    assert_eq!(
        agent(&list, "/root")["status"],
        json!({"completed": "all done"})
    );
    let tree = ws.run(&["tree", &session]);
    assert!(
        text(&tree.stdout).contains("completed: w done"),
        "{}",
        text(&tree.stdout)
    );
    // A store that lags is no problem: doctor finds it agrees with the log.
    let doctor = ws.run(&["doctor"]);
    assert!(
        doctor.status.success(),
        "{}{}",
        text(&doctor.stdout),
        text(&doctor.stderr)
    );
}

/// A mail whose `mail_consumed` line the store has not seen is not unread: `agents` does not
/// count it and `mail` does not list it; mail nobody consumed still shows.
#[test]
fn a_mail_the_log_shows_consumed_is_not_unread() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "consumed.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "go"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"call": "send_message", "args": {"target": "/root/w", "message": "later"}}],
                [{"say": "all done"}]]},
            {"match": "/root/w", "responses": [[{"say": "w done"}]]}
        ]}),
    );
    let driver = Driver::start(&ws, &script, &[]);
    let session = driver.session.clone();
    assert_eq!(driver.wait(), 0);
    let unread_of = |path: &str| agent(&agents(&ws, &session), path)["unread"].clone();
    let listed = |path: &str| -> Vec<String> {
        let out = ws.run(&["mail", &session, path, "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let mail: Value = serde_json::from_slice(&out.stdout).expect("json");
        mail.as_array()
            .expect("array")
            .iter()
            .map(|m| m["content"].as_str().expect("content").to_string())
            .collect()
    };
    assert_eq!(unread_of("/root/w"), 1);
    assert_eq!(listed("/root/w"), ["later"]);
    // The store stops before the first mail was consumed.
    store_behind(&ws, &session, |line| line["type"] != "mail_consumed");
    assert_eq!(unread_of("/root/w"), 1, "the spawn message was consumed");
    assert_eq!(listed("/root/w"), ["later"]);
    assert_eq!(unread_of("/root"), 0, "the result was consumed");
    assert!(listed("/root").is_empty());
}
