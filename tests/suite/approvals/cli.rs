//! Approvals through the real binary: `arbor approve` from a second process, a pending request
//! across a SIGKILL and a resume, the `arbor approvals --json` shape, errors and exit codes.

use std::ffi::OsString;

use arbor_agent_graph::Store;
use arbor_protocol::ThreadId;
use serde_json::{Value, json};

use super::escalated;
use crate::cli::{Workspace, session_of, text};
use crate::resume::{Driver, agent, agents, write_script};
use crate::sandbox::outside_dir;

const ROW_KEYS: &[&str] = &[
    "id",
    "path",
    "action",
    "outcome",
    "decided_by",
    "risk_level",
    "rationale",
    "requested_at",
    "decided_at",
];

fn approvals(ws: &Workspace, session: &str) -> Vec<Value> {
    let out = ws.run(&["approvals", session, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("approvals json");
    let rows = rows.as_array().expect("an array").clone();
    for row in &rows {
        for key in ROW_KEYS {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
    }
    rows
}

fn args(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

#[test]
fn arbor_approve_from_a_second_process_unblocks_the_worker_while_its_sibling_runs() {
    let ws = Workspace::new();
    let outside = outside_dir();
    let target = outside.path().join("w1.txt");
    // A first script as a newcomer writes it: spawn, wait for all, answer. The root's wait
    // goes on while w1 waits for the user, so the script needs nothing more.
    let script = write_script(
        &ws,
        "approve.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w1", "agent_type": "worker", "message": "escalate"}},
                 {"call": "spawn_agent", "args": {"task_name": "w2", "agent_type": "worker", "message": "work on"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root waited: {{last_output}}"}]]},
            {"match": "/root/w1", "responses": [
                [escalated(&format!("echo approved > {}", target.display()))],
                [{"say": "w1: {{last_output}}"}]]},
            {"match": "/root/w2", "responses": [
                [{"call": "exec_command", "args": {"cmd": "echo sibling"}}],
                [{"say": "w2 done"}]]}
        ]}),
    );
    let script = script.to_string_lossy().into_owned();
    let project = ws.project().to_string_lossy().into_owned();
    let mut driver = Driver::spawn(
        &ws,
        &args(&[
            "exec",
            "--json",
            "--script",
            &script,
            "--cwd",
            &project,
            "--approval-wait",
            "600",
            "go",
        ]),
    );
    let requested = driver.until(|e| e["type"] == "approval.requested");
    assert_eq!(requested["path"], "/root/w1");
    assert_eq!(
        requested["action"]["sandbox_permissions"],
        "require_escalated"
    );
    let id = requested["id"].as_str().expect("id").to_string();
    // The sibling runs to its end while w1 waits, and the root's wait does not return.
    let event = driver.until(|e| {
        (e["type"] == "turn.completed" && e["path"] == "/root/w2")
            || (e["type"] == "tool.result" && e["name"] == "wait_agent")
    });
    assert_eq!(event["type"], "turn.completed", "{event}");
    let session = driver.session.clone();
    // The request and the requester's status are committed together, before the event.
    let list = agents(&ws, &session);
    assert_eq!(agent(&list, "/root/w1")["status"], "awaiting_approval");
    assert_eq!(agent(&list, "/root/w1")["pending_approvals"], 1);
    let rows = approvals(&ws, &session);
    assert_eq!(rows[0]["outcome"], "pending");
    assert_eq!(rows[0]["decided_by"], Value::Null);

    let approved = ws.run(&["approve", &session, &id]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    let decided = driver.until(|e| e["type"] == "approval.decided");
    assert_eq!(decided["id"], id.as_str());
    assert_eq!(decided["outcome"], "allow");
    assert_eq!(decided["decided_by"], "user");
    // The wait returns once both are done; the root's turn completes and the run exits 0.
    let waited = driver.until(|e| e["type"] == "tool.result" && e["name"] == "wait_agent");
    let output: Value =
        serde_json::from_str(waited["output"].as_str().expect("output")).expect("json");
    assert_eq!(output["timed_out"], false, "{output}");
    assert!(
        output["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("all targets are idle")),
        "{output}"
    );
    assert_eq!(output.get("awaiting_approval"), None, "{output}");
    let completed = driver.until(|e| e["type"] == "session.completed");
    assert!(
        completed["final_message"]
            .as_str()
            .is_some_and(|m| m.starts_with("root waited: ")),
        "{completed}"
    );
    assert_eq!(driver.wait(), 0);
    let root = agent(&agents(&ws, &session), "/root")["status"].clone();
    assert!(root.get("completed").is_some(), "{root}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("written"),
        "approved\n"
    );
    let rows = approvals(&ws, &session);
    assert_eq!(
        (rows[0]["outcome"].as_str(), rows[0]["decided_by"].as_str()),
        (Some("allow"), Some("user"))
    );
    assert_eq!(
        rows[0]["override"]["used_by"],
        id.as_str(),
        "its waiter used the approval"
    );
    let again = ws.run(&["approve", &session, &id]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(
        text(&again.stderr).trim(),
        format!("error: approval request {id} is already decided: allow by user")
    );
}

#[test]
fn a_pending_request_survives_a_kill_and_its_approval_lets_the_retry_through_after_resume() {
    let ws = Workspace::new();
    let outside = outside_dir();
    let target = outside.path().join("after_resume.txt");
    let write = escalated(&format!("echo resumed > {}", target.display()));
    let day_one = write_script(
        &ws,
        "day1.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "escalate"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "unreachable"}]]},
            {"match": "/root/w", "responses": [[write.clone()], [{"say": "unreachable"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &day_one, &["--approval-wait", "600"]);
    let first = driver.until(|e| e["type"] == "approval.requested");
    let id = first["id"].as_str().expect("id").to_string();
    let session = driver.session.clone();
    driver.kill();

    let rows = approvals(&ws, &session);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0]["outcome"], "pending",
        "a kill leaves the request pending"
    );
    let list = agents(&ws, &session);
    assert_eq!(agent(&list, "/root/w")["pending_approvals"], 1);

    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "exec_command", "args": {"cmd": "while [ ! -f flag ]; do sleep 0.01; done", "timeout_ms": 600000}}],
                [{"call": "followup_task", "args": {"target": "/root/w", "message": "try again"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
                [{"say": "root done"}],
                [{"say": "root got {{input}}"}]]},
            {"match": "/root/w", "responses": [[write], [{"say": "w: {{last_output}}"}]]}
        ]}),
    );
    let day_two = day_two.to_string_lossy().into_owned();
    let mut resumed = Driver::spawn(
        &ws,
        &args(&[
            "resume",
            &session,
            "carry on",
            "--json",
            "--script",
            &day_two,
            "--approval-wait",
            "600",
        ]),
    );
    resumed.until(|e| e["type"] == "tool.call" && e["path"] == "/root");
    let approved = ws.run(&["approve", &session[..8], &id]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    // The live driver notices the answer to the request from before the restart.
    let decided = resumed.until(|e| e["type"] == "approval.decided");
    assert_eq!(
        (decided["id"].as_str(), decided["outcome"].as_str()),
        (Some(id.as_str()), Some("allow"))
    );
    std::fs::write(ws.project().join("flag"), "").expect("flag");
    let retry = resumed.until(|e| e["type"] == "approval.decided");
    assert_eq!(retry["outcome"], "allow");
    assert_eq!(
        retry["rationale"],
        format!("override: the user approved request {id}").as_str()
    );
    assert_eq!(resumed.wait(), 0);
    assert_eq!(
        std::fs::read_to_string(&target).expect("written"),
        "resumed\n"
    );
    let rows = approvals(&ws, &session);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["override"]["used_by"], rows[1]["id"]);
    assert_eq!(rows[1]["decided_by"], "user");
    // The answer given after the restart reached w's rollout when w was revived.
    let store = Store::open(&ws.home()).expect("store");
    let id = ThreadId::parse(&session).expect("session id");
    super::assert_audit_complete(&store, &store.approvals(id).expect("log"));
    store.close();
    drop(store);
    // So the approval log can be rebuilt from the rollouts alone.
    let rebuilt = ws.run(&["doctor", "--rebuild"]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));
    let decisions = |rows: &[Value]| -> Vec<(Value, Value, Value)> {
        rows.iter()
            .map(|r| {
                (
                    r["id"].clone(),
                    r["outcome"].clone(),
                    r["decided_by"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(decisions(&approvals(&ws, &session)), decisions(&rows));
}

#[test]
fn bad_rules_unknown_requests_and_the_audit_on_the_command_line() {
    let ws = Workspace::new();
    let rules = ws.project().join(".arbor/rules");
    std::fs::create_dir_all(&rules).expect("rules dir");
    std::fs::write(
        rules.join("bad.toml"),
        "[[rule]]\npattern = [\"git\", \"push\"]\ndecision = \"prompt\"\nmatch = [\"git status\"]\n",
    )
    .expect("rules");
    let script = write_script(
        &ws,
        "never.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [escalated("true")],
            [{"say": "{{last_output}}"}]]}]}),
    );
    let out = ws.exec(&script, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("bad.toml: rule 1: example \"git status\" should match but does not"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_file(rules.join("bad.toml")).expect("fixed");

    let out = ws.exec(&script, &["--approval-policy", "never"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unsandboxed = ws.exec(&script, &["--sandbox", "danger-full-access"]);
    let stderr = text(&unsandboxed.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("session: "), "{stderr}");
    assert!(lines[1].starts_with("handle: "), "{stderr}");
    assert!(
        lines[2].starts_with("warning: commands run without a sandbox (sandbox: none)"),
        "the user is told at session start: {stderr}"
    );
    assert_eq!(
        text(&out.stdout).trim(),
        arbor_guardian::POLICY_NEVER_SENTENCE
    );
    let session = session_of(&text(&out.stderr));
    let rows = approvals(&ws, &session);
    assert_eq!(rows[0]["outcome"], "deny");
    assert_eq!(rows[0]["decided_by"], "policy");
    assert_eq!(rows[0]["path"], "/root");
    let human = ws.run(&["approvals", &session]);
    assert!(
        text(&human.stdout).contains("deny by policy"),
        "{}",
        text(&human.stdout)
    );

    let unknown = ws.run(&["deny", &session, "no-such-request"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        text(&unknown.stderr).trim(),
        format!("error: approval request `no-such-request` not found in session {session}")
    );
    let id = rows[0]["id"].as_str().expect("id");
    let policy = ws.run(&["approve", &session, id]);
    assert_eq!(policy.status.code(), Some(2));
    assert_eq!(
        text(&policy.stderr).trim(),
        format!("error: approval request {id} is already decided: deny by policy")
    );
}
