//! A sandboxed agent cannot approve its own request, with `ARBOR_HOME` under `/tmp` (writable
//! by every sandbox but for the home itself): not with the marker, not without it.

use serde_json::{Value, json};

use crate::approvals::escalated;
use crate::cli::{Workspace, text};
use crate::resume::{Driver, write_script};
use crate::sandbox::outside_dir;

#[test]
fn a_sandboxed_agent_cannot_approve_its_own_request() {
    let ws = Workspace::new();
    assert!(ws.home().starts_with("/tmp"), "the home lies in a temp dir");
    let outside = outside_dir();
    let target = outside.path().join("pwned");
    let escalate = escalated(&format!("touch {}", target.display()));
    let script = write_script(
        &ws,
        "self.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [escalate.clone()],
            [{"call": "exec_command", "args": {
                "cmd": "while [ ! -f go ]; do sleep 0.01; done; sh approve.sh",
                "timeout_ms": 60000}}],
            [escalate],
            [{"say": "done"}]]}]}),
    );
    let mut driver = Driver::start(&ws, &script, &[]);
    let requested = driver.until(|e| e["type"] == "approval.requested");
    let id = requested["id"].as_str().expect("id").to_string();
    let decided = driver.until(|e| e["type"] == "approval.decided");
    assert_eq!(decided["outcome"], "no_approver");
    // Both ways in: as the agent would run it, and with the sandbox marker removed.
    let arbor = env!("CARGO_BIN_EXE_arbor");
    let home = ws.home().display().to_string();
    let session = driver.session.clone();
    std::fs::write(
        ws.project().join("approve.sh"),
        format!(
            "{arbor} --home {home} approve {session} {id}; echo \"marked: $?\"\n\
             env -u ARBOR_SANDBOX {arbor} --home {home} approve {session} {id}; \
             echo \"unmarked: $?\"\n"
        ),
    )
    .expect("approve.sh");
    std::fs::write(ws.project().join("go"), "").expect("go");
    let answered = driver.until(|e| {
        e["type"] == "tool.result" && e["output"].as_str().is_some_and(|o| o.contains("marked: "))
    });
    let output: Value =
        serde_json::from_str(answered["output"].as_str().expect("output")).expect("json");
    let (stdout, stderr) = (
        output["stdout"].as_str().unwrap_or_default(),
        output["stderr"].as_str().unwrap_or_default(),
    );
    assert!(
        stdout.contains("marked: 2") && stdout.contains("unmarked: 2"),
        "{output}"
    );
    assert!(
        stderr.contains("cannot answer approval requests from inside an agent's sandbox"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot answer approval requests: the arbor home"),
        "{stderr}"
    );
    let retry = driver.until(|e| e["type"] == "approval.decided");
    assert_eq!(
        retry["outcome"], "no_approver",
        "the identical retry asked again"
    );
    assert_eq!(driver.wait(), 0);
    assert!(!target.exists(), "the escalation ran unsandboxed");
    let rows = ws.run(&["approvals", &session, "--json"]);
    assert!(rows.status.success(), "{}", text(&rows.stderr));
    let rows: Value = serde_json::from_slice(&rows.stdout).expect("json");
    let rows = rows.as_array().expect("array");
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        assert_eq!(row["outcome"], "no_approver", "{row}");
        assert_eq!(row["override"], Value::Null, "{row}");
    }
}
