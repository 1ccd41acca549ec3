//! "Allow for the session" from another process (the UI's `s`): the driver lets the same
//! command in the same cwd through without asking for the rest of its run.

use serde_json::json;

use crate::cli::{Workspace, text};
use crate::resume::{Driver, write_script};

#[test]
fn an_approval_for_the_session_from_another_process_covers_the_same_command_again() {
    let ws = Workspace::new();
    let escalated = |cmd: &str| {
        json!({"call": "exec_command", "args": {"cmd": cmd,
            "sandbox_permissions": "require_escalated", "justification": "needs it"}})
    };
    let script = write_script(
        &ws,
        "twice.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [escalated("echo once")],
                [escalated("echo once")],
                [escalated("echo other")],
                [{"say": "root done"}]]}
        ]}),
    );
    let mut driver = Driver::start(&ws, &script, &["--approval-wait", "600"]);
    let first = driver.until(|e| e["type"] == "approval.requested");
    let id = first["id"].as_str().expect("id").to_string();
    let answered =
        arbor_orchestrator::answer_external_with(&ws.home(), &driver.session, &id, true, true)
            .expect("answered");
    assert!(answered.handed_to.is_some());
    // The identical command runs without a request; a different one asks again.
    let next = driver
        .until(|e| e["type"] == "approval.requested" && e["action"]["command"] == "echo other");
    let other = next["id"].as_str().expect("id").to_string();
    let out = ws.run(&["deny", &driver.session, &other]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = driver.session.clone();
    assert_eq!(driver.wait(), 0);
    let rows: serde_json::Value =
        serde_json::from_slice(&ws.run(&["approvals", &session, "--json"]).stdout).expect("json");
    let rows = rows.as_array().expect("array");
    let outcomes: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["action"]["command"].as_str().unwrap_or("").to_string(),
                r["rationale"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 3, "{outcomes:?}");
    assert_eq!(outcomes[1].0, "echo once");
    assert_eq!(outcomes[1].1, "approved for the session", "{outcomes:?}");
    assert_eq!(rows[1]["decided_by"], "user");
    assert_eq!(rows[2]["outcome"], "deny");
}
