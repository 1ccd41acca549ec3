//! A spawn is one write: the child's header and its parent's task for it are neighbouring
//! lines of the log. A log cut between them (a write torn by a crash) leaves a child that
//! never got its task; resume ends it as errored, naming why, instead of leaving it waiting.

use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};
use crate::resume::{agent, agents, write_script};

fn kind(line: &Value) -> &str {
    line["type"].as_str().unwrap_or_default()
}

#[test]
fn a_log_cut_between_a_spawn_and_its_task_resumes_with_the_child_errored() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "s.json",
        &json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "go"}}],
                [{"say": "started"}]]},
            {"match": "/root/w", "responses": [[{"say": "w done"}]]}
        ]}),
    );
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let log = crate::store_lag::find_log(&ws, &session);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a log line"))
        .collect();
    let header = lines
        .iter()
        .position(|l| kind(l) == "session_meta" && l["payload"]["path"] == "/root/w")
        .expect("w's header");
    let task = &lines[header + 1];
    assert_eq!(kind(task), "mail_sent", "{task}");
    assert_eq!(task["payload"]["recipient"], "/root/w");

    // What a write torn after the header leaves: the log ends there, nothing projected
    // beyond it (the store and rollouts are rebuilt from the log).
    let kept: String = lines[..=header].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept).expect("cut the log");
    let folder = log.parent().expect("folder");
    for path in crate::store_lag::walk(folder) {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
        {
            std::fs::remove_file(path).expect("remove a rollout");
        }
    }
    for name in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"] {
        let _ = std::fs::remove_file(ws.home().join(name));
    }
    let rebuilt = ws.run(&["doctor", "--rebuild"]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));

    let day2 = write_script(
        &ws,
        "r.json",
        &json!({"agents": [{"match": "/root", "responses": [[{"say": "ok"}]]}]}),
    );
    let resumed = ws
        .arbor()
        .args(["resume", &session, "--script"])
        .arg(&day2)
        .arg("continue")
        .output()
        .expect("arbor runs");
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let list = agents(&ws, &session);
    let w = agent(&list, "/root/w");
    assert_eq!(
        w["status"]["errored"],
        "its task was lost: arbor stopped before the task reached the session log",
        "{w}"
    );
    assert_eq!(agent(&list, "/root")["status"]["completed"], "ok");
}
