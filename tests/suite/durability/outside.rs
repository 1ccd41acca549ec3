//! What other processes do and see: `arbor send` while the store is locked, homes moved,
//! copied or named relatively, a reader whose output pipe closes, `doctor --rebuild` killed
//! halfway, and a rollout that cannot be read.

use std::io::Read;
use std::process::Stdio;

use arbor_protocol::RolloutItem;
use arbor_rollout::read_rollout;
use serde_json::{Value, json};

use super::kills::Seeded;
use crate::cli::{Workspace, session_of, text};
use crate::resume::{agent, agents, write_script};

/// A finished session: the root spawned `n` workers that each answered.
fn finished(ws: &Workspace, n: usize) -> String {
    let spawns: Vec<Value> = (0..n)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("w_{i}"), "message": "go"}}))
        .collect();
    let script = write_script(
        ws,
        "finished.json",
        &json!({"agents": [
            {"match": "/root", "repeat": true, "responses": [
                spawns,
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "root done"}]]},
            {"match": "/root/*", "repeat": true, "responses": [[{"say": "{{task_name}}: {{input}}"}]]}
        ]}),
    );
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    session_of(&text(&out.stderr))
}

fn mail_of(ws: &Workspace, session: &str, target: &str) -> Vec<String> {
    let out = ws.run(&["mail", session, target, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    listed
        .as_array()
        .expect("array")
        .iter()
        .map(|m| m["content"].as_str().expect("content").to_string())
        .collect()
}

#[test]
fn send_needs_no_store_lock_is_listed_at_once_and_consumed_in_order() {
    let ws = Workspace::new();
    let session = finished(&ws, 1);
    let conn = rusqlite::Connection::open(ws.home().join(arbor_agent_graph::STATE_FILE_NAME))
        .expect("sqlite");
    conn.execute_batch("BEGIN IMMEDIATE")
        .expect("another process holds the write lock");
    for message in ["first", "second"] {
        let sent = ws.run(&["send", &session, "/root/w_0", message]);
        assert_eq!(sent.status.code(), Some(0), "{}", text(&sent.stderr));
        // The line is in the log when `send` returns (it synced it first).
        let id = text(&sent.stdout).trim().to_string();
        let log = std::fs::read_to_string(crate::store_lag::find_log(&ws, &session)).expect("log");
        assert!(log.contains(&id), "mail {id} is in the log");
    }
    assert_eq!(mail_of(&ws, &session, "/root/w_0"), ["first", "second"]);
    conn.execute_batch("COMMIT").expect("release");
    let script = ws.dir.path().join("finished.json");
    let script = script.to_str().expect("utf-8");
    let out = ws.run(&[
        "followup",
        &session,
        "/root/w_0",
        "third",
        "--script",
        script,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = agent(&agents(&ws, &session), "/root/w_0")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let read = read_rollout(&crate::store_lag::find_rollout(&ws, &id)).expect("rollout");
    let consumed: Vec<String> = read
        .items()
        .filter_map(|item| match item {
            RolloutItem::MailConsumed(c) => Some(c.mail.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(consumed, ["go", "first", "second", "third"]);
    assert!(mail_of(&ws, &session, "/root/w_0").is_empty());
}

#[test]
fn a_moved_home_a_copied_home_and_a_relative_home_all_work() {
    let ws = Workspace::new();
    let session = finished(&ws, 2);
    let moved = ws.dir.path().join("moved-home");
    std::fs::rename(ws.home(), &moved).expect("move the home");
    let arbor = |home: &std::path::Path, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
            .arg("--home")
            .arg(home)
            .args(args)
            .env_remove("ARBOR_HOME")
            .output()
            .expect("arbor runs")
    };
    let tree = arbor(&moved, &["tree", &session]);
    assert!(tree.status.success(), "{}", text(&tree.stderr));
    assert!(
        text(&tree.stdout).contains("/root/w_1"),
        "{}",
        text(&tree.stdout)
    );
    let doctor = arbor(&moved, &["doctor"]);
    assert!(doctor.status.success(), "{}", text(&doctor.stdout));
    // A copy is a home of its own: working in it leaves the original as it was.
    let copy = ws.dir.path().join("copied-home");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&moved)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(copied.success());
    let snapshot = |home: &std::path::Path| -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = crate::store_lag::walk(home)
            .into_iter()
            .map(|p| {
                let len = std::fs::metadata(&p).map_or(0, |m| m.len());
                (
                    p.strip_prefix(home).expect("under").display().to_string(),
                    len,
                )
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot(&moved.join("sessions"));
    let script = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [{"match": "/root/*", "responses": [[{"say": "again: {{input}}"}]]}]}),
    );
    let script = script.to_str().expect("utf-8");
    let out = arbor(
        &copy,
        &[
            "followup",
            &session,
            "/root/w_0",
            "in the copy",
            "--script",
            script,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "again: in the copy");
    assert_eq!(
        snapshot(&moved.join("sessions")),
        before,
        "the original is untouched"
    );
    // A relative home, from two different directories.
    let here = ws.dir.path().join("a/b");
    std::fs::create_dir_all(&here).expect("dirs");
    let relative = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .current_dir(&here)
        .args(["--home", "../../copied-home", "agents", &session, "--json"])
        .env_remove("ARBOR_HOME")
        .output()
        .expect("arbor runs");
    assert!(relative.status.success(), "{}", text(&relative.stderr));
    let from_top = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .current_dir(ws.dir.path())
        .args(["--home", "copied-home", "agents", &session, "--json"])
        .env_remove("ARBOR_HOME")
        .output()
        .expect("arbor runs");
    assert_eq!(relative.stdout, from_top.stdout);
}

#[test]
fn a_reader_whose_output_closes_stops_quietly() {
    let ws = Workspace::new();
    // Enough agents that the listing passes a pipe's buffer.
    let session = finished(&ws, 300);
    let mut child = ws
        .arbor()
        .args(["agents", &session, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).expect("one byte");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(&first, b"[");
}

#[test]
fn a_killed_rebuild_never_leaves_a_store_that_answers_with_agents_missing() {
    let ws = Workspace::new();
    let session = finished(&ws, 60);
    let all = agents(&ws, &session);
    assert_eq!(all.len(), 61);
    let mut rng = Seeded::new(0xdead_beef);
    for round in 0..12 {
        let mut rebuild = ws
            .arbor()
            .args(["doctor", "--rebuild"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rebuild");
        // A random point of the rebuild: not a wait for an event, the moment of the kill.
        std::thread::sleep(std::time::Duration::from_micros(rng.below(40_000)));
        let _ = rebuild.kill();
        let _ = rebuild.wait();
        let now = agents(&ws, &session);
        assert_eq!(
            now, all,
            "round {round}: the store answers with the whole tree"
        );
    }
    let doctor = ws.run(&["doctor"]);
    assert!(doctor.status.success(), "{}", text(&doctor.stdout));
    // Backups of two rebuilds never share a name.
    let done: Vec<_> = (0..2).map(|_| ws.run(&["doctor", "--rebuild"])).collect();
    assert!(done.iter().all(|out| out.status.success()));
    let backups: std::collections::HashSet<String> = done
        .iter()
        .filter_map(|out| {
            text(&out.stderr)
                .lines()
                .find_map(|l| l.strip_prefix("kept the old store as ").map(str::to_string))
        })
        .collect();
    assert_eq!(backups.len(), 2, "{backups:?}");
}

#[test]
fn an_unreadable_rollout_fails_doctor_with_its_path_and_rebuild_rewrites_it() {
    let ws = Workspace::new();
    let session = finished(&ws, 2);
    let id = agent(&agents(&ws, &session), "/root/w_1")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let rollout = crate::store_lag::find_rollout(&ws, &id);
    let mut lines: Vec<String> = std::fs::read_to_string(&rollout)
        .expect("read")
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(1, "{this is not json".to_string());
    std::fs::write(&rollout, lines.join("\n") + "\n").expect("damage");
    // Readers pass over it: the agent's lines come from the log.
    let read = ws.run(&["log", &session, "/root/w_1"]);
    assert!(read.status.success(), "{}", text(&read.stderr));
    assert!(
        text(&read.stdout).contains("w_1: go"),
        "{}",
        text(&read.stdout)
    );
    assert!(
        text(&read.stderr).contains("read from the session log"),
        "{}",
        text(&read.stderr)
    );
    let doctor = ws.run(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor.stdout));
    assert!(
        text(&doctor.stdout).contains(&rollout.display().to_string()),
        "{}",
        text(&doctor.stdout)
    );
    let rebuilt = ws.run(&["doctor", "--rebuild"]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));
    assert!(
        text(&rebuilt.stderr).contains("rewritten from the log"),
        "{}",
        text(&rebuilt.stderr)
    );
    let again = ws.run(&["doctor"]);
    assert!(again.status.success(), "{}", text(&again.stdout));
    let log = ws.run(&["log", &session, "/root/w_1"]);
    assert!(
        text(&log.stdout).contains("w_1: go"),
        "{}",
        text(&log.stdout)
    );
}
