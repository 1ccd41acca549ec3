//! Whole-tree resume, and `send`, `interrupt` and `close` on live and stopped sessions.

use std::sync::Arc;

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentPath, AgentStatus, MailKind};
use serde_json::{Value, json};

use super::{Driver, agent, agents, root_waits_for_w, write_script};
use crate::cli::{Workspace, session_of, text};

/// Matches the end of a completed turn of `path`.
fn turn_done(path: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "turn.completed" && e["path"] == path
}

/// Matches a call of tool `name` by `path`.
fn tool_call(path: &'static str, name: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "tool.call" && e["path"] == path && e["name"] == name
}

fn fan_out(n: usize) -> Value {
    let spawns: Vec<Value> = (0..n)
        .map(|i| json!({"call": "spawn_agent", "args": {"task_name": format!("worker_{i}"), "message": format!("task {i}")}}))
        .collect();
    json!({"agents": [
        {"match": "/root", "responses": [spawns, [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}], [{"say": "fanned out"}]]},
        {"match": "/root/*", "responses": [[{"say": "{{task_name}} did {{input}}"}]]}
    ]})
}

#[tokio::test]
async fn resume_of_fifty_agents_spends_nothing_until_a_followup_reaches_the_same_agent() {
    let ws = Workspace::new();
    let day_one = write_script(&ws, "day1.json", &fan_out(50));
    let out = ws.exec(&day_one, &["--max-running", "50", "--max-resident", "50"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let before = agents(&ws, &session);
    assert_eq!(before.len(), 51);
    let worker_7 = agent(&before, "/root/worker_7")["id"].clone();

    // Resume without a prompt prints the tree and needs no model.
    let shown = ws.run(&["resume", &session]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(text(&shown.stdout).contains("/root/worker_49"));

    let day_two = json!({"agents": [{"match": "/root/*", "responses": [[{"say": "{{task_name}} again: {{input}}"}]]}]});
    let model = Arc::new(ScriptedModel::from_json(&day_two.to_string()).expect("script"));
    let mut config = RunConfig::new(ws.home(), ws.project());
    config.root_driven = false;
    let (orch, info) = Orchestrator::resume(config, model.clone(), &session[..8])
        .await
        .expect("resume");
    assert_eq!(info.agents, 51);
    assert_eq!(model.requests().len(), 0, "resume spends no model request");
    assert_eq!(orch.resident_children().await, 0, "resume loads no runtime");
    orch.send_from_user("/root/worker_7", MailKind::Followup, "once more")
        .await
        .expect("followup");
    orch.wait_quiescent().await;
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "only worker_7 was asked");
    assert_eq!(requests[0].agent.path.as_str(), "/root/worker_7");
    assert_eq!(
        requests[0].agent.thread_id.to_string(),
        worker_7.as_str().expect("id")
    );
    // Its history is day one's: the spawn task and its answer, then the follow-up.
    let history = arbor_tests::texts(&requests[0].input);
    assert_eq!(history, ["task 7", "worker_7 did task 7", "once more"]);
    let view = orch
        .agent(&AgentPath::parse("/root/worker_7").expect("path"))
        .await
        .expect("agent");
    assert_eq!(
        view.status,
        AgentStatus::Completed(Some("worker_7 again: once more".into()))
    );
    orch.shutdown("done").await;
}

#[test]
fn send_reaches_a_live_session_and_waits_durably_in_a_stopped_one() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "live.json",
        &root_waits_for_w(json!([
            [{"call": "exec_command", "args": {"cmd": "while [ ! -f flag ]; do sleep 0.01; done", "timeout_ms": 600000}}],
            [{"say": "w read: {{input}}"}],
            [{"say": "w day two: {{input}}"}]])),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    driver.until(|e| e["type"] == "tool.call" && e["path"] == "/root/w");
    let sent = ws.run(&["send", &driver.session, "/root/w", "hello from outside"]);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    let mail_id = text(&sent.stdout).trim().to_string();
    // The driver picks the mail up from the journal on its own.
    let announced = driver.until(|e| e["type"] == "mail.sent" && e["id"] == mail_id.as_str());
    assert_eq!(announced["author"], "/root");
    assert_eq!(announced["from_user"], true, "{announced}");
    std::fs::write(ws.project().join("flag"), "").expect("flag");
    let session = driver.session.clone();
    assert_eq!(driver.wait(), 0);
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root/w")["status"],
        json!({"completed": "w read: hello from outside"})
    );

    // Stopped: the mail waits durably and is delivered before the follow-up that revives w.
    let note = ws.run(&["send", &session, "/root/w", "a note for tomorrow"]);
    assert!(note.status.success());
    let waiting = ws.run(&["mail", &session, "/root/w", "--json"]);
    let waiting: Value = serde_json::from_slice(&waiting.stdout).expect("json");
    assert_eq!(waiting[0]["content"], "a note for tomorrow");
    assert_eq!(waiting[0]["kind"], "message");
    assert_eq!(waiting[0]["from_user"], true);
    // People read it as the user's: it is sent from the root's place, not by the root agent.
    let human = text(&ws.run(&["mail", &session, "/root/w"]).stdout);
    assert!(human.contains("  message  the user → /root/w\n"), "{human}");
    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
        {"match": "/root/w", "responses": [[{"say": "w saw {{input}}"}]]}]}),
    );
    let out = ws
        .arbor()
        .args(["followup", &session, "/root/w", "start again", "--script"])
        .arg(&day_two)
        .output()
        .expect("followup");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "w saw start again");
    let log = ws.run(&["log", &session, "/root/w"]);
    let log = text(&log.stdout);
    let note_at = log.find("a note for tomorrow").expect("note delivered");
    let followup_at = log
        .find("mail read followup from the user: start again")
        .expect("follow-up delivered");
    assert!(
        note_at < followup_at,
        "queued mail comes before the follow-up:\n{log}"
    );
    let waiting = ws.run(&["mail", &session, "/root/w", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&waiting.stdout).expect("json"),
        json!([])
    );
}

#[test]
fn interrupt_and_close_from_the_command_line_act_on_live_and_stopped_sessions() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "ic.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "block"}},
                 {"call": "spawn_agent", "args": {"task_name": "v", "message": "finish"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root done"}]]},
            {"match": "/root/w", "responses": [
                [{"call": "exec_command", "args": {"cmd": "sleep 600", "timeout_ms": 600000}}]]},
            {"match": "/root/v", "responses": [[{"say": "v done"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    driver.until(|e| e["type"] == "tool.call" && e["path"] == "/root/w");
    let session = driver.session.clone();
    let out = ws.run(&["interrupt", &session, "/root/w"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "interrupted /root/w: its turn (running) is stopped; it stays available\n"
    );
    // The driver applies it: w's turn ends as interrupted, and the tree finishes.
    driver.until(|e| {
        e["type"] == "turn.aborted" && e["path"] == "/root/w" && e["reason"] == "interrupted"
    });
    assert_eq!(driver.wait(), 0);
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root/w")["status"],
        json!({"interrupted": "interrupted"})
    );
    // Stopped session: interrupt changes nothing, close closes the edge.
    let idle = ws.run(&["interrupt", &session, "/root/v", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&idle.stdout).expect("json"),
        json!({"previous_status": {"completed": "v done"}})
    );
    let idle = ws.run(&["interrupt", &session, "/root/v"]);
    assert!(
        text(&idle.stdout).starts_with("/root/v had no turn to interrupt (it is completed"),
        "{}",
        text(&idle.stdout)
    );
    let closed = ws.run(&["close", &session, "/root/v"]);
    assert!(closed.status.success(), "{}", text(&closed.stderr));
    assert!(
        text(&closed.stdout).starts_with("closed /root/v (it was completed"),
        "{}",
        text(&closed.stdout)
    );
    let list = agents(&ws, &session);
    assert_eq!(agent(&list, "/root/v")["edge"], "closed");
    assert_eq!(agent(&list, "/root/v")["status"], "closed");
    let again = ws.run(&["send", &session, "/root/v", "hello"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("agent /root/v is closed"),
        "{}",
        text(&again.stderr)
    );
    let root = ws.run(&["close", &session, "/root"]);
    assert_eq!(root.status.code(), Some(2));
    assert!(text(&root.stderr).contains("root is not a spawned agent"));
}

/// Another process holding the store's write lock holds up nothing: the agents run, mail is
/// delivered and waits return (the session log is what they wait for, not the store); once
/// the lock is let go, the store catches up and agrees with the log.
#[test]
fn a_held_store_lock_holds_up_no_agent() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "locked.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "b", "message": "wait"}},
                 {"call": "spawn_agent", "args": {"task_name": "a", "message": "send"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root done"}]]},
            {"match": "/root/a", "responses": [
                [{"call": "exec_command", "args": {"cmd": "while [ ! -f locked ]; do sleep 0.01; done"}}],
                [{"call": "followup_task", "args": {"target": "/root/b", "message": "hello"}}],
                [{"say": "a done"}]]},
            {"match": "/root/b", "responses": [
                [{"say": "b ready"}],
                [{"say": "b got {{input}}"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    let session = driver.session.clone();
    driver.until_each(&[&turn_done("/root/b"), &tool_call("/root/a", "exec_command")]);
    let conn = rusqlite::Connection::open(ws.home().join(arbor_agent_graph::STATE_FILE_NAME))
        .expect("sqlite");
    conn.execute_batch("BEGIN IMMEDIATE").expect("write lock");
    std::fs::write(ws.project().join("locked"), "").expect("file");
    let done = driver.until(|e| {
        e["type"] == "turn.completed" && e["path"] == "/root/b" && e["last_message"] != "b ready"
    });
    assert!(
        done["last_message"]
            .as_str()
            .is_some_and(|m| m.starts_with("b got") && m.contains("hello")),
        "{done}"
    );
    // Reads do not wait for the lock either, and see what the log holds.
    assert_eq!(
        agent(&agents(&ws, &session), "/root/b")["status"],
        json!({"completed": done["last_message"]})
    );
    conn.execute_batch("COMMIT").expect("release");
    assert_eq!(driver.wait(), 0);
    let doctor = ws.run(&["doctor"]);
    assert!(doctor.status.success(), "{}", text(&doctor.stdout));
}

/// A line of another process (a follow-up its sender appended, then died) and a line that is
/// not a log line at all, appended to `session`'s log. Returns the mail's id.
fn external_and_garbage(ws: &Workspace, session: &str, path: &str, content: &str) -> String {
    let id = agent(&agents(ws, session), path)["id"]
        .as_str()
        .expect("id")
        .to_string();
    let recipient = arbor_protocol::ThreadId::parse(&id).expect("id");
    let mail = arbor_protocol::Mail::new(
        AgentPath::root(),
        AgentPath::root().resolve(path).expect("path"),
        MailKind::Followup,
        content.to_string(),
    );
    let log = crate::store_lag::find_log(ws, session);
    let line = arbor_protocol::RolloutItem::UserMail(Box::new(arbor_protocol::UserMail {
        recipient_id: recipient,
        mail: mail.clone(),
    }));
    arbor_rollout::log::append_external(&log, recipient, &[line]).expect("append");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{torn by a crash\n"))
        .expect("garbage");
    mail.id.to_string()
}

/// A live driver delivers what another process appended to the log, skips a line that is not
/// a log line, and goes on applying what comes after both.
#[test]
fn a_live_driver_applies_lines_of_other_processes_and_skips_bad_ones() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "external_live.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "first"}}],
                // Keeps the session live until the test is done (bounded, should it never be).
                [{"call": "exec_command", "args": {"cmd": "while [ ! -f end ]; do sleep 0.01; done", "timeout_ms": 60000}}],
                [{"say": "root done"}],
                // w's later results wake the root once more.
                [{"say": "root read the results"}]]},
            {"match": "/root/w", "responses": [
                [{"say": "w: {{input}}"}], [{"say": "w: {{input}}"}], [{"say": "w: {{input}}"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    let session = driver.session.clone();
    driver.until_each(&[&turn_done("/root/w"), &tool_call("/root", "exec_command")]);
    let external = external_and_garbage(&ws, &session, "/root/w", "external");
    let out = ws.run(&["followup", &session, "/root/w", "after"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = text(&out.stdout).trim().to_string();
    let delivered = |id: &str| {
        let id = id.to_string();
        move |e: &Value| e["type"] == "mail.delivered" && e["id"] == id.as_str()
    };
    driver.until(delivered(&external));
    driver.until(delivered(&after));
    std::fs::write(ws.project().join("end"), "").expect("end");
    assert_eq!(driver.wait(), 0);
    assert_eq!(agent(&agents(&ws, &session), "/root/w")["unread"], 0);
}

/// Lines of a stopped session's log that its store never saw (another process appended them)
/// are applied when the session is next taken up: a follow-up among them is owed a turn and
/// reaches its recipient before the user's own; a line that is not a log line is skipped with
/// a notice.
#[test]
fn resuming_applies_lines_the_store_never_saw_before_the_follow_up() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "external_stopped.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "first"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "root done"}]]},
            {"match": "/root/w", "responses": [[{"say": "w: {{input}}"}]]}
        ]}),
    );
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let external = external_and_garbage(&ws, &session, "/root/w", "external");
    let day_two = write_script(
        &ws,
        "external_day2.json",
        &json!({"agents": [{"match": "/root/w", "repeat": true, "responses": [[{"say": "w: {{input}}"}]]}]}),
    );
    let out = ws.run(&[
        "followup",
        &session,
        "/root/w",
        "after",
        "--script",
        day_two.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("skipped the line at byte"),
        "the skipped line is reported: {}",
        text(&out.stderr)
    );
    // The external follow-up was owed a turn: it reached w before the user's follow-up.
    assert_eq!(text(&out.stdout).trim(), "w: after");
    let log = ws.run(&["log", &session, "/root/w", "--json"]);
    assert!(log.status.success(), "{}", text(&log.stderr));
    let consumed: Vec<String> = text(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("line"))
        .filter(|l| l["type"] == "mail_consumed")
        .map(|l| {
            l["payload"]["mail"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(consumed, ["first", "external", "after"], "{external}");
    assert_eq!(agent(&agents(&ws, &session), "/root/w")["unread"], 0);
}
