//! A session an earlier arbor made (rollouts without line numbers, a journal of what came from
//! outside, no session log) is taken over: its log is written from them, it resumes, the
//! journal's mail reaches its recipient, and `doctor` agrees afterwards.

use arbor_protocol::{AgentPath, Mail, MailKind, RolloutItem};
use arbor_rollout::read_rollout;
use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};
use crate::resume::{agent, agents, write_script};

/// Turns a session into what an earlier arbor left: rollout lines without `seq` and `thread`,
/// no log, a journal holding a follow-up to `target`.
fn make_legacy(ws: &Workspace, session: &str, target: &str, recipient: &str) {
    let log = crate::store_lag::find_log(ws, session);
    let folder = log.parent().expect("folder").to_path_buf();
    std::fs::remove_file(&log).expect("remove the log");
    for path in crate::store_lag::walk(&folder) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if !name.is_some_and(|n| n.starts_with("rollout-")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("rollout");
        let stripped: Vec<String> = text
            .lines()
            .map(|line| {
                let mut value: Value = serde_json::from_str(line).expect("line");
                let object = value.as_object_mut().expect("object");
                object.remove("seq");
                object.remove("thread");
                value.to_string()
            })
            .collect();
        std::fs::write(&path, stripped.join("\n") + "\n").expect("rewrite");
    }
    let mail = Mail::new(
        AgentPath::root(),
        AgentPath::root().resolve(target).expect("path"),
        MailKind::Followup,
        "from the journal".into(),
    );
    let entry = json!({"type": "mail", "recipient_id": recipient, "mail": mail});
    std::fs::write(
        folder.join(format!("journal-{session}.jsonl")),
        format!("{entry}\n"),
    )
    .expect("journal");
}

#[test]
fn a_session_of_an_earlier_arbor_gets_its_log_and_resumes() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "s.json",
        &json!({"agents": [
            {"match": "/root", "repeat": true, "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "first"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "root done"}]]},
            {"match": "/root/w", "repeat": true, "responses": [[{"say": "w: {{input}}"}]]}
        ]}),
    );
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let w = agent(&agents(&ws, &session), "/root/w")["id"]
        .as_str()
        .expect("id")
        .to_string();
    make_legacy(&ws, &session, "/root/w", &w);
    // Readable as it is, before anything is converted.
    assert_eq!(agents(&ws, &session).len(), 2);
    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
            {"match": "/root", "repeat": true, "responses": [
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
                [{"say": "all collected"}]]},
            {"match": "/root/w", "repeat": true, "responses": [[{"say": "w: {{input}}"}]]}
        ]}),
    );
    let resumed = ws
        .arbor()
        .args(["resume", &session, "wait for all", "--script"])
        .arg(&day_two)
        .output()
        .expect("resume");
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert!(
        text(&resumed.stderr).contains("made by an earlier arbor"),
        "{}",
        text(&resumed.stderr)
    );
    let read = read_rollout(&crate::store_lag::find_rollout(&ws, &w)).expect("rollout");
    let consumed: Vec<String> = read
        .items()
        .filter_map(|item| match item {
            RolloutItem::MailConsumed(c) => Some(c.mail.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(consumed, ["first", "from the journal"]);
    assert!(read.lines.iter().all(|(_, line)| line.seq.is_some()));
    let doctor = ws.run(&["doctor"]);
    assert!(doctor.status.success(), "{}", text(&doctor.stdout));
}
