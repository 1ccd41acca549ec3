//! `arbor log --engine restate` (an agent's rollout from its `Agent` object) and `arbor export
//! SESSION --to-local`: a finished Restate tree becomes a local session that `agents`, `log`,
//! `doctor` and `resume` take as their own, children's histories and unread mail included.

use std::time::Duration;

use serde_json::{Value, json};

use super::cluster::Cluster;
use super::driver::{ok, stderr};

fn strip_times(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            line.split_once(' ')
                .map_or(line, |(_, rest)| rest)
                .to_string()
        })
        .collect()
}

#[test]
fn a_finished_tree_is_logged_and_exported_to_a_local_session_that_resumes() {
    let cluster = Cluster::start(2);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "task a"}},
             {"call": "spawn_agent", "args": {"task_name": "b", "message": "task b"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "close_agent", "args": {"target": "b"}}],
            [{"say": "root done"}]
        ]},
        {"match": "/root/*", "responses": [[{"say": "{{task_name}} did {{input}}"}]]}
    ]});
    let run = cluster.exec(&script, "export me", Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let session = run.session();
    ok(&cluster.arbor(&["send", &session, "/root/a", "a note"]));

    let restate_log = ok(&cluster.arbor(&["log", &session, "/root/a"]));
    let described = strip_times(&restate_log);
    assert!(described[0].starts_with("agent /root/a ("), "{restate_log}");
    assert!(
        described.contains(&"turn 1 started".to_string()),
        "{restate_log}"
    );
    assert!(
        described.contains(&"mail read spawn from /root: task a".to_string()),
        "{restate_log}"
    );
    assert!(
        described.contains(&"assistant: a did task a".to_string()),
        "{restate_log}"
    );
    assert!(
        described.contains(&"turn 1 completed".to_string()),
        "{restate_log}"
    );
    let json_log = ok(&cluster.arbor(&["log", &session, "/root/a", "--json"]));
    let first: Value =
        serde_json::from_str(json_log.lines().next().expect("a line")).expect("json");
    assert_eq!(first["type"], "session_meta");

    let home = cluster.dir.path().join("local-home");
    let home_arg = home.to_str().expect("utf-8");
    let export = cluster.arbor(&["--home", home_arg, "export", &session, "--to-local"]);
    assert_eq!(ok(&export).trim(), session);
    let again = cluster.arbor(&["--home", home_arg, "export", &session, "--to-local"]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("exists already"),
        "{}",
        stderr(&again)
    );

    let local = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
            .arg("--home")
            .arg(&home)
            .env_remove("ARBOR_HOME")
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("arbor runs")
    };
    let agents: Vec<Value> =
        serde_json::from_str(&ok(&local(&["agents", &session, "--json"]))).expect("agents");
    let row = |path: &str| {
        agents
            .iter()
            .find(|row| row["path"] == path)
            .unwrap_or_else(|| panic!("{path} missing: {agents:?}"))
            .clone()
    };
    assert_eq!(row("/root")["status"]["completed"], "root done");
    assert_eq!(row("/root/a")["edge"], "open");
    assert_eq!(row("/root/a")["unread"], 1);
    assert_eq!(row("/root/a")["status"]["completed"], "a did task a");
    assert_eq!(row("/root/b")["edge"], "closed");
    let local_log = ok(&local(&["log", &session, "/root/a"]));
    assert_eq!(local_log, restate_log);
    ok(&local(&["doctor"]));
    let mail = ok(&local(&["mail", &session, "/root/a"]));
    assert!(mail.contains("a note"), "{mail}");

    // Resumed locally: the child followed up answers from its history (its turn 1 is there,
    // the unread note joins its next turn).
    let next = cluster.dir.path().join("next.json");
    std::fs::write(
        &next,
        json!({"agents": [
            {"match": "/root", "responses": [
                [{"call": "followup_task", "args": {"target": "a", "message": "more"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "root next done"}]
            ]},
            {"match": "/root/a", "responses": [[{"say": "a again after {{input}}"}]]}
        ]})
        .to_string(),
    )
    .expect("script");
    let cwd = cluster.dir.path().to_str().expect("utf-8").to_string();
    let resumed = local(&[
        "resume",
        &session,
        "--script",
        next.to_str().expect("utf-8"),
        "--cwd",
        &cwd,
        "next",
    ]);
    assert_eq!(
        ok(&resumed).trim(),
        "root next done",
        "{}",
        stderr(&resumed)
    );
    let after = strip_times(&ok(&local(&["log", &session, "/root/a"])));
    let turn2 = after
        .iter()
        .position(|line| line == "turn 2 started")
        .unwrap_or_else(|| panic!("{after:?}"));
    assert!(after[..turn2].contains(&"assistant: a did task a".to_string()));
    assert!(
        after[turn2..].iter().any(|line| line.contains("a note")),
        "{after:?}"
    );
    assert!(
        after.contains(&"assistant: a again after more".to_string()),
        "{after:?}"
    );
}
