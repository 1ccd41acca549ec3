//! `arbor ui` end to end in tmux: against a session another process drives (select a worker,
//! send it a follow-up, answer its approval), against a stopped one (a follow-up revives the
//! target and its answer shows), and the errors it gives before it takes the terminal.

use serde_json::{Value, json};

use super::tmux::Tmux;
use crate::cli::{Workspace, session_of, text};
use crate::resume::{Driver, write_script};

fn ui_command(ws: &Workspace, args: &str) -> String {
    format!(
        "{} --home {} ui {args}",
        env!("CARGO_BIN_EXE_arbor"),
        ws.home().display()
    )
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn the_ui_follows_up_and_answers_an_approval_in_a_session_another_process_drives() {
    let ws = Workspace::new();
    let outside = crate::sandbox::outside_dir();
    let target = outside.path().join("pushed.txt");
    let script = write_script(
        &ws,
        "live.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "worker_a", "agent_type": "worker", "message": "do a"}},
                 {"call": "spawn_agent", "args": {"task_name": "worker_b", "agent_type": "worker", "message": "do b"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root waited"}],
                [{"say": "root got {{input}}"}]]},
            {"match": "/root/worker_a", "responses": [[{"say": "a done"}]]},
            {"match": "/root/worker_b", "responses": [
                [{"call": "exec_command", "args": {
                    "cmd": format!("echo pushed > {}", target.display()),
                    "sandbox_permissions": "require_escalated",
                    "justification": "write the marker outside"}}],
                [{"say": "b got {{input}}"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &["--approval-wait", "600"]);
    let requested = driver.until(|e| e["type"] == "approval.requested");
    let session = driver.session.clone();
    let id = requested["id"].as_str().expect("id").to_string();

    let tmux = Tmux::start(ws.dir.path(), 120, 36, &ui_command(&ws, &session));
    tmux.wait_for("awaiting approval");
    tmux.wait_for("1 approval request pending");
    // Select /root/worker_b by finding it, write to it, send a follow-up.
    tmux.keys(&["/"]);
    tmux.type_text("worker_b");
    tmux.keys(&["Enter"]);
    tmux.wait_for("/root/worker_b · ");
    tmux.keys(&["i"]);
    tmux.wait_for("to /root/worker_b ›");
    tmux.type_text("please also tag it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("follow-up → /root/worker_b: durable");
    // The follow-up is durable mail, unread while worker_b waits for its approval.
    let mail = json_of(&ws.run(&["mail", &session, "/root/worker_b", "--json"]));
    let mail = mail.as_array().expect("array");
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert_eq!(mail[0]["kind"], "followup");
    assert_eq!(mail[0]["content"], "please also tag it");
    assert_eq!(mail[0]["trigger_turn"], true);

    // Leave the composer, open the approval queue, allow once.
    tmux.keys(&["Escape"]);
    tmux.wait_for("i writes to the selected agent");
    tmux.keys(&["A"]);
    tmux.wait_for("y allow once");
    tmux.keys(&["y"]);
    tmux.keys(&["Escape"]);
    // worker_b runs its command and takes the follow-up in the same turn.
    tmux.wait_for("b got please also tag it");
    let approvals = json_of(&ws.run(&["approvals", &session, "--json"]));
    let row = approvals
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == id.as_str()))
        .expect("the request is listed");
    assert_eq!(row["outcome"], "allow");
    assert_eq!(row["decided_by"], "user");
    assert_eq!(driver.wait(), 0);
    assert_eq!(std::fs::read_to_string(&target).expect("ran"), "pushed\n");
    tmux.wait_for("not driven");

    // A terminal of 20×5 gets a message, not a panic; q still quits.
    tmux.resize(20, 5);
    tmux.wait_for("needs at");
    tmux.keys(&["q"]);
    tmux.wait_until("the UI to exit", |_| tmux.exited());
}

#[test]
fn a_follow_up_to_a_stopped_session_revives_the_target_and_shows_its_answer() {
    let ws = Workspace::new();
    let day1 = write_script(
        &ws,
        "day1.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "worker_a", "message": "first task"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "root done"}]]},
            {"match": "/root/worker_a", "responses": [[{"say": "a done with {{input}}"}]]}
        ]}),
    );
    let out = ws
        .arbor()
        .args(["exec", "--script"])
        .arg(&day1)
        .arg("--cwd")
        .arg(ws.project())
        .arg("go")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("exec");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let day2 = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
            {"match": "/root/worker_a", "responses": [[{"say": "a on day two: {{input}}"}]]},
            {"match": "/root", "responses": [[{"say": "root on day two: {{input}}"}]]}
        ]}),
    );
    let args = format!("{session} --script {}", day2.display());
    let tmux = Tmux::start(ws.dir.path(), 120, 30, &ui_command(&ws, &args));
    tmux.wait_for("not driven");
    tmux.keys(&["/"]);
    tmux.type_text("worker_a");
    tmux.keys(&["Enter"]);
    tmux.wait_for("a done with first task");
    tmux.keys(&["i"]);
    tmux.type_text("and the tests");
    tmux.keys(&["Enter"]);
    // The UI takes the session, revives worker_a, and its answer shows.
    tmux.wait_for("a on day two: and the tests");
    tmux.wait_for("not driven");
    let log = ws.run(&["log", &session, "/root/worker_a"]);
    assert!(
        text(&log.stdout).contains("a on day two: and the tests"),
        "{}",
        text(&log.stdout)
    );
    // To the root: its next turn runs, and the status line says how it ended, not that it
    // started.
    tmux.keys(&["Escape"]);
    tmux.wait_for("i writes to the selected agent");
    tmux.keys(&["g", "i"]);
    tmux.wait_for("to /root ›");
    tmux.type_text("wrap up");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_until("the root's answer and the turn's end", |screen| {
        screen.contains("root on day two: ") && screen.contains("→ /root: turn completed")
    });
    assert!(!screen.contains("turn started"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("i writes to the selected agent");
    tmux.keys(&["q"]);
    tmux.wait_until("the UI to exit", |_| tmux.exited());
}

#[test]
fn a_session_that_does_not_exist_is_a_usage_error_before_the_terminal_is_taken() {
    let ws = Workspace::new();
    // No store at all yet.
    let out = ws.run(&["ui", "0123456789abcdef"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/script.json");
    assert!(ws.exec(&script, &[]).status.success());
    let out = ws.run(&["ui", "0123456789abcdef"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("0123456789abcdef"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_ui_attaches_by_handle_and_by_last_and_shows_the_handle() {
    let ws = Workspace::new();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/script.json");
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = text(&out.stderr);
    let handle = first
        .lines()
        .find_map(|line| line.strip_prefix("handle: "))
        .expect("handle: <handle>")
        .to_string();
    for (i, args) in [handle.as_str(), "--last"].into_iter().enumerate() {
        let dir = ws.dir.path().join(format!("tmux-{i}"));
        std::fs::create_dir(&dir).expect("dir");
        let tmux = Tmux::start(&dir, 120, 30, &ui_command(&ws, args));
        // The tree's title is the session's handle.
        tmux.wait_for(&format!("{handle} "));
        tmux.wait_for("not driven");
        tmux.keys(&["q"]);
        tmux.wait_until("the UI to exit", |_| tmux.exited());
    }
}
