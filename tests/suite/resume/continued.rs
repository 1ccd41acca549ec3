//! `arbor resume SESSION --continue`: the turns a Ctrl-C left interrupted run again and finish,
//! and the Ctrl-C hint is that exact command.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{Value, json};

use super::{agent, agents, write_script};
use crate::cli::{Workspace, text};

#[test]
fn continue_finishes_the_children_a_ctrl_c_interrupted() {
    let ws = Workspace::new();
    let day_one = write_script(
        &ws,
        "day1.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "count the files"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
                [{"say": "unreachable on day one"}]]},
            {"match": "/root/w", "responses": [
                [{"call": "exec_command", "args": {"cmd": "sleep 600", "timeout_ms": 600_000}}]]}
        ]}),
    );
    let stderr_path = ws.dir.path().join("day1.err");
    let mut child = ws
        .arbor()
        .args(["exec", "--json", "--max-running", "4", "--script"])
        .arg(&day_one)
        .arg("--cwd")
        .arg(ws.project())
        .arg("count")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("spawn");
    let mut handle = String::new();
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let event: Value = serde_json::from_str(&line.expect("line")).expect("json");
        if event["type"] == "session.started" {
            handle = event["handle"].as_str().expect("handle").to_string();
        }
        // The worker is inside its command: Ctrl-C now.
        if event["type"] == "tool.call" && event["path"] == "/root/w" {
            break;
        }
    }
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    assert_eq!(child.wait().expect("wait").code(), Some(130));
    let list = agents(&ws, &handle);
    assert_eq!(
        agent(&list, "/root/w")["status"],
        json!({"interrupted": "user_interrupt"})
    );

    // The hint is the exact command, the run's own options included.
    let stderr = std::fs::read_to_string(&stderr_path).expect("stderr");
    let hint = format!(
        "arbor --home {} resume {handle} --continue --script {} --max-running 4 --json",
        ws.home().display(),
        day_one.display()
    );
    assert!(
        stderr.contains(&format!("interrupted: state saved; continue with `{hint}`")),
        "{stderr}"
    );

    // Day two: the same command with a script for day two finishes the interrupted worker, and
    // the root, whose wait was interrupted too, waits for it again and answers.
    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3_600_000}}],
                [{"say": "root done on day two"}]]},
            {"match": "/root/w", "responses": [[{"say": "w went on after: {{input}}"}]]}
        ]}),
    );
    let words: Vec<String> = hint
        .split(' ')
        .skip(1)
        .map(|word| {
            if word == day_one.display().to_string() {
                day_two.display().to_string()
            } else {
                word.to_string()
            }
        })
        .filter(|word| word != "--json")
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(&words)
        .env_remove("ARBOR_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "root done on day two");
    let list = agents(&ws, &handle);
    let w = agent(&list, "/root/w")["status"]["completed"]
        .as_str()
        .expect("w completed")
        .to_string();
    assert!(
        w.starts_with("w went on after: Your previous turn was interrupted (user_interrupt)"),
        "{w}"
    );
    assert_eq!(
        agent(&list, "/root")["status"],
        json!({"completed": "root done on day two"})
    );
}
