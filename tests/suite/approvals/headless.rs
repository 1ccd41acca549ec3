//! Approvals of `arbor exec` without a terminal, as its progress lines tell them: the request
//! whole, however long, the exact `arbor approve|deny` commands that answer it, and what
//! happens when nobody does; the command it prints is the one that works.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::json;

use super::escalated;
use crate::cli::{Workspace, session_of, text};
use crate::resume::write_script;
use crate::sandbox::outside_dir;

/// A command longer than any progress line used to keep, ending in a marker.
fn long_command(target: &std::path::Path) -> String {
    let words = "a-long-argument ".repeat(16);
    format!(
        "echo {words}> {} # the-end-of-the-command",
        target.display()
    )
}

fn script(ws: &Workspace, cmd: &str) -> std::path::PathBuf {
    write_script(
        ws,
        "headless.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "escalate"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root is done"}]]},
            {"match": "/root/w", "responses": [[escalated(cmd)], [{"say": "w: {{last_output}}"}]]}
        ]}),
    )
}

#[test]
fn with_no_terminal_and_no_wait_the_request_is_printed_whole_and_says_why_it_is_refused() {
    let ws = Workspace::new();
    let outside = outside_dir();
    let cmd = long_command(&outside.path().join("never.txt"));
    let out = ws.exec(&script(&ws, &cmd), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let session = session_of(&stderr);
    assert!(stderr.contains(&format!("  command: {cmd}\n")), "{stderr}");
    assert!(
        stderr.contains("  justification: the task needs it\n"),
        "{stderr}"
    );
    let id = stderr
        .lines()
        .find_map(|line| line.strip_prefix("approval request "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the request's line");
    assert!(
        stderr.contains(&format!(
            "nobody can answer it: with no terminal the approval wait is 0, so it is refused now \
             (no_approver); run with --approval-wait SECONDS to answer it with `arbor approve \
             {session} {id}` or `arbor deny {session} {id}`"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("approval {id}: no_approver by policy")),
        "{stderr}"
    );
    assert!(!outside.path().join("never.txt").exists());
}

#[test]
fn with_a_wait_the_printed_command_answers_the_request() {
    let ws = Workspace::new();
    let outside = outside_dir();
    let target = outside.path().join("approved.txt");
    let cmd = long_command(&target);
    let mut child = ws
        .arbor()
        .arg("exec")
        .arg("--script")
        .arg(script(&ws, &cmd))
        .arg("--cwd")
        .arg(ws.project())
        .args(["--approval-wait", "600", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor runs");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let answer = loop {
        let line = lines
            .next()
            .expect("a line saying how to answer")
            .expect("utf-8");
        if let Some(rest) = line.strip_prefix("  answer with `") {
            assert!(
                rest.ends_with("; unanswered after 600 s, it is refused (no_approver)"),
                "{line}"
            );
            break rest.split('`').next().expect("the command").to_string();
        }
    };
    let words: Vec<&str> = answer.split_whitespace().collect();
    assert_eq!(&words[..2], ["arbor", "approve"], "{answer}");
    let approved = ws.run(&words[1..]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    let rest: Vec<String> = lines.map(|line| line.expect("utf-8")).collect();
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(0), "{rest:?}");
    assert!(
        rest.iter().any(|line| line.ends_with(": allow by user")),
        "{rest:?}"
    );
    assert!(std::fs::read_to_string(&target).is_ok_and(|t| t.contains("a-long-argument")));
}
