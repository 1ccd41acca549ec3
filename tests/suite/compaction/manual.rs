//! `arbor compact SESSION TARGET`: compaction by hand on a stopped session; its next revival
//! starts from the new window. A driven session is refused (exit 3), a failing model is a
//! failed run (exit 1).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_model::ScriptedModel;
use arbor_orchestrator::{Orchestrator, RunConfig, SUMMARY_HEADER};
use arbor_protocol::ResponseItem;
use arbor_tests::texts;
use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};

fn write(ws: &Workspace, name: &str, script: &Value) -> PathBuf {
    let path = ws.dir.path().join(name);
    std::fs::write(&path, script.to_string()).expect("script");
    path
}

fn root_says(text: &str) -> Value {
    json!({"agents": [{"match": "/root", "responses": [[{"say": text}]]}]})
}

fn compact(ws: &Workspace, session: &str, script: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["compact", session, "/root", "--script"];
    let script = script.to_string_lossy().into_owned();
    args.push(&script);
    args.extend_from_slice(extra);
    ws.run(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_by_hand_starts_the_next_turn_from_the_summary() {
    let ws = Workspace::new();
    let out = ws.exec(&write(&ws, "day1.json", &root_says("hello")), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));

    let summary = write(
        &ws,
        "summary.json",
        &root_says("SUMMARY: renamed nothing yet"),
    );

    // A model that answers with a call writes no summary: the run fails, nothing changes.
    let calls = write(
        &ws,
        "calls.json",
        &json!({"agents": [{"match": "/root", "repeat": true, "responses": [[{"call": "list_agents"}]]}]}),
    );
    let out = compact(&ws, &session, &calls, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("compaction failed: the model called a tool"),
        "{}",
        text(&out.stderr)
    );

    let out = compact(&ws, &session, &summary, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["path"], "/root");
    assert_eq!(report["summary"], "SUMMARY: renamed nothing yet");
    let log = text(&ws.run(&["log", &session]).stdout);
    assert!(log.contains("compacted (arbor compact"), "{log}");
    assert!(log.contains("usage (compaction)"), "{log}");
    let out = ws.run(&["compact", &session, "/root/nobody", "--script"]);
    assert_eq!(out.status.code(), Some(2));

    // The next turn starts from the summary and the recent input.
    let model =
        Arc::new(ScriptedModel::from_json(&root_says("again").to_string()).expect("script"));
    let config = RunConfig::new(ws.home(), ws.project());
    let (orch, _) = Orchestrator::resume(config, model.clone(), &session)
        .await
        .expect("resume");
    orch.start("continue").await.expect("the root runs");
    orch.wait_quiescent().await;
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].input[0],
        ResponseItem::Message {
            role: "user".into(),
            content: format!("{SUMMARY_HEADER}SUMMARY: renamed nothing yet"),
        }
    );
    assert_eq!(
        texts(&requests[0].input[1..]),
        ["Rename fetch_data to load_records", "continue"]
    );
    orch.shutdown("done").await;
    drop(orch);

    // A driven session is refused.
    let driver = crate::gc::Driver::start(&ws, &session);
    let out = compact(&ws, &session, &summary, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("driven by another process"),
        "{}",
        text(&out.stderr)
    );
    driver.stop();
}
