//! The guardian as reviewer on the Restate engine: `/root/guardian`, an internal `Agent`
//! object, reviews each request in a turn of its own; its allow runs the escalation, its deny
//! and an unparsable verdict refuse it with the local engine's texts; it is listed by `arbor
//! agents` but left out of `list_agents`, result mail and the root's wake-once.

use arbor_guardian::{DENIED_SENTENCE, REVIEW_UNAVAILABLE_SENTENCE};
use serde_json::{Value, json};

use super::cluster::Cluster;
use super::driver::{Driver, escalated, ok};
use crate::sandbox::{exec_result, outside_dir};

const ALLOW: &str = r#"{"outcome": "allow", "risk_level": "low", "user_authorization": "high", "rationale": "writes one report file"}"#;
const DENY: &str =
    r#"{"outcome": "deny", "risk_level": "high", "rationale": "it reaches outside the task"}"#;

#[test]
fn the_guardians_verdicts_decide_and_it_stays_internal() {
    let cluster = Cluster::start(2);
    let outside = outside_dir();
    let report = outside.path().join("report.txt");
    let never = outside.path().join("never.txt");
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "write the report"}}],
            [{"say": "spawned"}],
            [{"call": "list_agents", "args": {}},
             {"call": "spawn_agent", "args": {"task_name": "guardian", "message": "hi"}}],
            [{"say": "root got {{input}}"}]
        ]},
        {"match": "/root/w", "responses": [
            [escalated(&format!("echo report > {}", report.display()))],
            [escalated(&format!("touch {}", never.display()))],
            [escalated(&format!("touch {}.2", never.display()))],
            [{"say": "w done"}]
        ]},
        {"match": "role:guardian", "responses": [
            [{"say": ALLOW}],
            [{"say": DENY}],
            [{"say": "Looks fine to me!"}]
        ]}
    ]});
    let driver = Driver::exec(
        &cluster,
        &script,
        "Write the quarterly report",
        &["--reviewer", "guardian"],
    );
    let session = driver.session.clone();
    let run = driver.finish();
    run.ok();
    assert_eq!(run.final_message().as_deref(), Some("root got w done"));
    let results = run.outputs("/root/w", "exec_command");
    assert_eq!(exec_result(&results[0])["exit_code"], 0, "{}", results[0]);
    assert_eq!(
        std::fs::read_to_string(&report).expect("the allowed command ran"),
        "report\n"
    );
    assert_eq!(
        results[1],
        format!("{DENIED_SENTENCE} Reason: it reaches outside the task")
    );
    // Nobody can be asked (no terminal, no --approval-wait): the failed review decides.
    assert!(
        results[2].starts_with(REVIEW_UNAVAILABLE_SENTENCE),
        "{}",
        results[2]
    );
    assert!(!never.exists());
    let out = cluster.arbor(&["approvals", &session, "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&ok(&out)).expect("approvals");
    let decided: Vec<(&str, &str, Option<&str>)> = rows
        .iter()
        .map(|row| {
            (
                row["outcome"].as_str().unwrap_or_default(),
                row["decided_by"].as_str().unwrap_or_default(),
                row["risk_level"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        decided,
        [
            ("allow", "guardian", Some("low")),
            ("deny", "guardian", Some("high")),
            ("review_unavailable", "guardian", None),
        ]
    );
    assert_eq!(rows[0]["rationale"], "writes one report file");
    assert!(
        rows[2]["rationale"]
            .as_str()
            .is_some_and(|r| r.starts_with("malformed verdict")),
        "{}",
        rows[2]
    );
    // The guardian saw the request: the requester, the action, the root's task.
    let guardian = arbor_protocol::AgentPath::parse("/root/guardian").expect("path");
    let history = cluster.history(&session, &guardian);
    let asked = history
        .items
        .iter()
        .find_map(|item| match item {
            arbor_protocol::ResponseItem::Message { role, content } if role == "user" => {
                Some(content.clone())
            }
            _ => None,
        })
        .expect("a review request");
    assert!(asked.contains("`/root/w`"), "{asked}");
    assert!(asked.contains("Write the quarterly report"), "{asked}");
    assert!(asked.contains("report.txt"), "{asked}");
    // Internal: listed by `arbor agents`, not by list_agents; not spawnable; no result mail;
    // its turns did not wake the root (the root ran its two turns, woken once by w).
    let out = cluster.arbor(&["agents", &session, "--json"]);
    let agents: Vec<Value> = serde_json::from_str(&ok(&out)).expect("agents");
    let listed = agents
        .iter()
        .find(|row| row["path"] == "/root/guardian")
        .expect("the guardian is listed");
    assert_eq!(listed["role"], "guardian");
    assert!(listed["status"]["completed"].is_string(), "{listed}");
    let list_agents = &run.outputs("/root", "list_agents")[0];
    assert!(!list_agents.contains("guardian"), "{list_agents}");
    assert_eq!(
        run.outputs("/root", "spawn_agent")[1],
        "agent path `/root/guardian` already exists"
    );
    let from_guardian = run
        .events
        .iter()
        .filter(|e| e["type"] == "mail.sent" && e["author"] == "/root/guardian")
        .count();
    assert_eq!(from_guardian, 0);
    let root_turns = run
        .events
        .iter()
        .filter(|e| e["type"] == "turn.started" && e["path"] == "/root")
        .count();
    assert_eq!(root_turns, 2);
    let guardian_turns = run
        .events
        .iter()
        .filter(|e| e["type"] == "turn.started" && e["path"] == "/root/guardian")
        .count();
    assert_eq!(guardian_turns, 3, "one review per turn");
}

#[test]
fn the_engines_say_the_same_when_the_guardian_would_have_to_ask() {
    assert_eq!(
        arbor_restate::approval::GUARDIAN_CANNOT_ASK,
        arbor_orchestrator::GUARDIAN_CANNOT_ASK_SENTENCE
    );
}
