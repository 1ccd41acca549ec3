//! `arbor mcp-server` driven by a real MCP client (the Python `mcp` package's stdio client):
//! it starts a scripted tree, polls its status until an approval is pending, approves it, and
//! gets the final answer with progress notifications on the way.

use std::process::Command;

use serde_json::{Value, json};

use crate::cli::{Workspace, text};
use crate::resume::write_script;

#[test]
fn a_python_mcp_client_starts_a_tree_answers_its_approval_and_gets_the_answer() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "approval.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [{"call": "exec_command", "args": {"cmd": "echo from-the-tree > report.txt && cat report.txt",
              "sandbox_permissions": "require_escalated", "justification": "write the report"}}],
            [{"say": "done: {{last_output}}"}]]}]}),
    );
    let driver = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/mcp/drive_tree.py");
    let out = Command::new(arbor_tests::tools::python())
        .arg(driver)
        .arg(env!("CARGO_BIN_EXE_arbor"))
        .arg(ws.home())
        .arg(&script)
        .arg(ws.project())
        .env_remove("ARBOR_HOME")
        .output()
        .expect("the client runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the client's summary");
    assert_eq!(
        seen["tools"],
        json!(["answer", "approve", "send", "start_tree", "tree_status"])
    );
    assert_eq!(seen["status_while_pending"], "awaiting_approval");
    let pending = &seen["pending"][0];
    assert_eq!(pending["path"], "/root");
    assert_eq!(pending["action"]["tool"], "exec_command");
    assert!(
        pending["action"]["command"]
            .as_str()
            .is_some_and(|cmd| cmd.contains("from-the-tree")),
        "{pending}"
    );
    assert!(
        seen["approved"]
            .as_str()
            .is_some_and(|said| said.starts_with("approved request")),
        "{}",
        seen["approved"]
    );
    let answer = &seen["answer"];
    assert_eq!(answer["exit_code"], 0, "{answer}");
    assert_eq!(answer["running"], false);
    assert_eq!(answer["session"], seen["session"]);
    let final_message = answer["final_message"].as_str().unwrap_or_default();
    assert!(final_message.starts_with("done: "), "{answer}");
    assert!(final_message.contains("from-the-tree"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(ws.project().join("report.txt")).expect("the approved command ran"),
        "from-the-tree\n"
    );
    let progress: Vec<&str> = seen["progress"]
        .as_array()
        .expect("progress")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(progress.contains(&"session completed"), "{progress:?}");
    assert!(
        progress
            .iter()
            .any(|line| line.starts_with("approval ") && line.ends_with(": allow")),
        "{progress:?}"
    );
    assert!(
        seen["bad_arguments"]
            .as_str()
            .is_some_and(|text| text.contains("missing field `request`")),
        "{}",
        seen["bad_arguments"]
    );
}
