//! Approvals on the Restate engine: a command that asks for escalation waits (its turn
//! suspended on an awakeable) until `arbor approve` or `arbor deny` decides it, while the rest
//! of the tree runs on and the tree does not complete; policy `never`, nobody to ask, and
//! `untrusted`, with the local engine's texts and outputs.

use arbor_guardian::{DENIED_SENTENCE, NO_APPROVER_SENTENCE, POLICY_NEVER_SENTENCE};
use serde_json::{Value, json};

use super::cluster::Cluster;
use super::driver::{Driver, escalated, ok, outputs, refused, stderr};
use crate::sandbox::{exec_result, outside_dir};

/// `arbor approvals SESSION --json`, checked for the keys cli.md fixes.
fn approvals(cluster: &Cluster, session: &str) -> Vec<Value> {
    let out = cluster.arbor(&["approvals", session, "--json"]);
    let rows: Value = serde_json::from_str(&ok(&out)).expect("approvals --json");
    let rows = rows.as_array().expect("an array").clone();
    for row in &rows {
        for key in [
            "id",
            "path",
            "action",
            "outcome",
            "decided_by",
            "risk_level",
            "rationale",
            "requested_at",
            "decided_at",
        ] {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
    }
    rows
}

fn agent<'a>(rows: &'a [Value], path: &str) -> &'a Value {
    rows.iter()
        .find(|row| row["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed: {rows:?}"))
}

fn agents(cluster: &Cluster, session: &str) -> Vec<Value> {
    let out = cluster.arbor(&["agents", session, "--json"]);
    serde_json::from_str(&ok(&out)).expect("agents --json")
}

#[test]
fn approve_and_deny_decide_pending_requests_while_the_tree_waits_for_them() {
    let cluster = Cluster::start(2);
    let outside = outside_dir();
    let approved = outside.path().join("approved.txt");
    let denied = outside.path().join("denied.txt");
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w1", "message": "escalate"}},
             {"call": "spawn_agent", "args": {"task_name": "w2", "message": "escalate too"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
            [{"say": "root waited"}],
            [{"say": "root got {{input}}"}]
        ]},
        {"match": "/root/w1", "responses": [
            [escalated(&format!("echo approved > {}", approved.display()))],
            [{"say": "w1: {{last_output}}"}]
        ]},
        {"match": "/root/w2", "responses": [
            [escalated(&format!("echo denied > {}", denied.display()))],
            [{"say": "w2 was told: {{last_output}}"}]
        ]}
    ]});
    let mut driver = Driver::exec(&cluster, &script, "go", &["--approval-wait", "600"]);
    let session = driver.session.clone();
    let first = driver.until(|e| e["type"] == "approval.requested");
    let second = driver.until(|e| e["type"] == "approval.requested");
    let id_of = |path: &str| {
        [&first, &second]
            .into_iter()
            .find(|e| e["path"] == path)
            .and_then(|e| e["id"].as_str())
            .unwrap_or_else(|| panic!("no request of {path}"))
            .to_string()
    };
    let (w1, w2) = (id_of("/root/w1"), id_of("/root/w2"));
    assert_eq!(first["action"]["sandbox_permissions"], "require_escalated");
    assert_eq!(first["action"]["tool"], "exec_command");
    // The root's wait returned early, saying why; the root's turn ends meanwhile.
    driver.until(|e| e["type"] == "turn.completed" && e["path"] == "/root");
    let waits = driver.outputs("/root", "wait_agent");
    let wait: Value = serde_json::from_str(&waits[0]).expect("wait output");
    assert!(
        wait["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("is waiting for an approval")),
        "{wait}"
    );
    // Pending: the requesters wait, the tree is not complete, the command line shows both.
    let rows = agents(&cluster, &session);
    for path in ["/root/w1", "/root/w2"] {
        assert_eq!(agent(&rows, path)["status"], "awaiting_approval");
        assert_eq!(agent(&rows, path)["pending_approvals"], 1);
    }
    let page = cluster
        .runtime
        .block_on(cluster.ingress().events(&session, 0))
        .expect("events");
    assert!(!page.completed && !page.quiescent);
    assert!(driver.running(), "exec waits for the pending requests");
    let listed = approvals(&cluster, &session);
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|row| row["outcome"] == "pending"));
    assert!(listed.iter().all(|row| row["decided_by"].is_null()));
    let human = ok(&cluster.arbor(&["approvals", &session]));
    assert!(human.contains(&format!("{w1}  ")), "{human}");
    assert!(
        human.contains("  justification: the task needs it"),
        "{human}"
    );
    // A follow-up while the run is in progress is handed to it.
    let handed = cluster.arbor(&["followup", &session, "/root/w2", "and then stop"]);
    let mail_id = ok(&handed);
    assert!(mail_id.trim().len() >= 32, "{mail_id}");
    assert!(
        stderr(&handed).contains(&format!(
            "handed to the run in progress of session {session}"
        )),
        "{}",
        stderr(&handed)
    );

    let out = cluster.arbor(&["approve", &session, &w1]);
    assert_eq!(
        ok(&out).trim(),
        format!(
            "approved request {w1} of /root/w1; if it no longer waits, its identical retry runs once"
        )
    );
    let decided = driver.until(|e| e["type"] == "approval.decided" && e["id"] == w1.as_str());
    assert_eq!(
        (decided["outcome"].as_str(), decided["decided_by"].as_str()),
        (Some("allow"), Some("user"))
    );
    let out = cluster.arbor(&["deny", &session, &w2]);
    assert_eq!(ok(&out).trim(), format!("denied request {w2} of /root/w2"));
    let decided = driver.until(|e| e["type"] == "approval.decided" && e["id"] == w2.as_str());
    assert_eq!(decided["outcome"], "deny");
    let run = driver.finish();
    run.ok();
    assert!(
        run.final_message()
            .is_some_and(|answer| answer.starts_with("root got ")),
        "the results woke the root once: {:?}",
        run.final_message()
    );
    assert_eq!(
        std::fs::read_to_string(&approved).expect("the approved command ran"),
        "approved\n"
    );
    assert!(!denied.exists(), "the denied command ran");
    let w2_output = run.outputs("/root/w2", "exec_command");
    assert_eq!(
        w2_output,
        [format!("{DENIED_SENTENCE} Reason: denied by the user")]
    );
    let listed = approvals(&cluster, &session);
    let row = |id: &str| {
        listed
            .iter()
            .find(|r| r["id"] == id)
            .expect("listed")
            .clone()
    };
    assert_eq!(
        (row(&w1)["outcome"].clone(), row(&w1)["decided_by"].clone()),
        (json!("allow"), json!("user"))
    );
    assert_eq!(row(&w1)["override"]["used_by"], w1.as_str());
    assert_eq!(row(&w2)["outcome"], "deny");
    // Answers after the decision: the local engine's refusals and override.
    refused(
        &cluster.arbor(&["approve", &session, &w1]),
        &format!("approval request {w1} is already decided: allow by user"),
    );
    assert_eq!(
        ok(&cluster.arbor(&["approve", &session, &w2])).trim(),
        format!("override: the identical retry of request {w2} by /root/w2 runs once")
    );
    refused(
        &cluster.arbor(&["deny", &session, "no-such-request"]),
        &format!("approval request `no-such-request` not found in session {session}"),
    );
    let rows = agents(&cluster, &session);
    assert!(rows.iter().all(|row| row["pending_approvals"] == 0));
}

#[test]
fn never_nobody_to_ask_and_untrusted_decide_as_on_the_local_engine() {
    let cluster = Cluster::start(1);
    let script = json!({"agents": [{"match": "/root", "responses": [
        [escalated("true")],
        [{"call": "exec_command", "args": {"cmd": "ls"}}],
        [{"call": "exec_command", "args": {"cmd": "touch made.txt"}}],
        [{"say": "{{last_output}}"}]
    ]}]});
    let run = |extra: &[&str]| {
        let driver = Driver::exec(&cluster, &script, "go", extra);
        let session = driver.session.clone();
        let run = driver.finish();
        run.ok();
        (session, run.events)
    };
    let (session, events) = run(&["--approval-policy", "never"]);
    assert_eq!(
        outputs(&events, "/root", "exec_command")[0],
        POLICY_NEVER_SENTENCE
    );
    let listed = approvals(&cluster, &session);
    assert_eq!(listed.len(), 1, "only the escalation asked");
    assert_eq!(
        (&listed[0]["outcome"], &listed[0]["decided_by"]),
        (&json!("deny"), &json!("policy"))
    );
    assert!(ok(&cluster.arbor(&["approvals", &session])).contains("deny by policy"));

    // Without a terminal and without --approval-wait, nobody can be asked.
    let (session, events) = run(&[]);
    assert_eq!(
        outputs(&events, "/root", "exec_command")[0],
        NO_APPROVER_SENTENCE
    );
    let listed = approvals(&cluster, &session);
    assert_eq!(
        (&listed[0]["outcome"], &listed[0]["decided_by"]),
        (&json!("no_approver"), &json!("policy"))
    );

    // Untrusted: a known read-only command runs; anything else asks (the runs above made the
    // file: their policy lets a sandboxed command run).
    let made = cluster.dir.path().join("made.txt");
    std::fs::remove_file(&made).expect("made by the runs above");
    let (session, events) = run(&["--approval-policy", "untrusted"]);
    let results = outputs(&events, "/root", "exec_command");
    assert_eq!(results[0], NO_APPROVER_SENTENCE);
    assert_eq!(exec_result(&results[1])["exit_code"], 0, "{}", results[1]);
    assert_eq!(results[2], NO_APPROVER_SENTENCE);
    let listed = approvals(&cluster, &session);
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1]["action"]["command"], "touch made.txt");
    assert!(
        listed[1]["action"]["approval_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("approval policy untrusted")),
        "{}",
        listed[1]
    );
    assert!(!made.exists());
}
