//! Whole-tree resume, mail across processes, the lease, crash recovery and `doctor --rebuild`.

use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::Arc;

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentPath, AgentStatus, MailKind, RolloutItem};
use arbor_rollout::read_rollout;
use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};

pub(crate) fn write_script(ws: &Workspace, name: &str, script: &Value) -> PathBuf {
    let path = ws.dir.path().join(name);
    std::fs::write(&path, script.to_string()).expect("script");
    path
}

pub(crate) fn agents(ws: &Workspace, session: &str) -> Vec<Value> {
    let out = ws.run(&["agents", session, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout)
        .expect("json")
        .as_array()
        .expect("array")
        .clone()
}

pub(crate) fn agent<'a>(list: &'a [Value], path: &str) -> &'a Value {
    list.iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed"))
}

/// A driver started with `--json`, whose events the test reads as they come.
pub(crate) struct Driver {
    pub(crate) child: Child,
    events: Lines<BufReader<ChildStdout>>,
    pub(crate) session: String,
}

impl Driver {
    pub(crate) fn start(ws: &Workspace, script: &Path, extra: &[&str]) -> Self {
        let mut args: Vec<std::ffi::OsString> =
            vec!["exec".into(), "--json".into(), "--script".into()];
        args.push(script.into());
        args.push("--cwd".into());
        args.push(ws.project().into());
        args.extend(extra.iter().map(Into::into));
        args.push("go".into());
        Self::spawn(ws, &args)
    }

    /// Runs `arbor ARGS` (a command that drives a session with `--json`) with stdin closed, and
    /// reads events up to `session.started`.
    pub(crate) fn spawn(ws: &Workspace, args: &[std::ffi::OsString]) -> Self {
        let mut child = ws
            .arbor()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn arbor");
        let events = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut driver = Self {
            child,
            events,
            session: String::new(),
        };
        let started = driver.until(|e| e["type"] == "session.started");
        driver.session = started["session_id"].as_str().expect("id").to_string();
        driver
    }

    /// Reads events until one matches.
    pub(crate) fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        for line in self.events.by_ref() {
            let event: Value = serde_json::from_str(&line.expect("line")).expect("event json");
            if pred(&event) {
                return event;
            }
        }
        panic!("the driver ended before the awaited event");
    }

    pub(crate) fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    pub(crate) fn wait(mut self) -> i32 {
        for _ in self.events.by_ref() {}
        self.child.wait().expect("wait").code().unwrap_or(-1)
    }
}

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
    assert_eq!(orch.resident_children(), 0, "resume loads no runtime");
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
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "block"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root done"}]]},
            {"match": "/root/w", "responses": [
                [{"call": "exec_command", "args": {"cmd": "while [ ! -f flag ]; do sleep 0.01; done", "timeout_ms": 600000}}],
                [{"say": "w read: {{input}}"}],
                [{"say": "w day two: {{input}}"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    driver.until(|e| e["type"] == "tool.call" && e["path"] == "/root/w");
    let sent = ws.run(&["send", &driver.session, "/root/w", "hello from outside"]);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    let mail_id = text(&sent.stdout).trim().to_string();
    // The driver picks the mail up from the journal on its own.
    driver.until(|e| e["type"] == "mail.sent" && e["id"] == mail_id.as_str());
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
        .find("mail read followup from /root: start again")
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
        let ids = consumed_ids(Path::new(&record.rollout_path));
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
        serde_json::from_slice::<Value>(&out.stdout).expect("json"),
        json!({"previous_status": "running"})
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
    let idle = ws.run(&["interrupt", &session, "/root/v"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&idle.stdout).expect("json"),
        json!({"previous_status": {"completed": "v done"}})
    );
    let closed = ws.run(&["close", &session, "/root/v"]);
    assert!(closed.status.success(), "{}", text(&closed.stderr));
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
