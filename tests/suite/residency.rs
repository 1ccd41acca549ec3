//! Residency: eviction under `max_resident`, revival from the rollout, and the history a
//! revived agent sends.

use arbor_protocol::{AgentStatus, Event, ResponseItem};
use arbor_tests::Session;
use serde_json::{Value, json};

fn evicted(s: &Session) -> Vec<String> {
    s.seen
        .iter()
        .filter_map(|l| match &l.event {
            Event::AgentEvicted { path } => Some(path.to_string()),
            _ => None,
        })
        .collect()
}

fn revived(s: &Session) -> Vec<String> {
    s.seen
        .iter()
        .filter_map(|l| match &l.event {
            Event::AgentRevived { path } => Some(path.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn followups_revive_evicted_workers_with_their_own_history() {
    let workers = ["w1", "w2", "w3", "w4", "w5"];
    let mut root = vec![json!(workers
        .iter()
        .map(|w| json!({"call": "spawn_agent", "args": {"task_name": w, "message": format!("first task of {w}")}}))
        .collect::<Vec<_>>())];
    root.push(json!([{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}]));
    for w in workers {
        root.push(json!([{"call": "followup_task", "args": {"target": w, "message": format!("second task of {w}")}}]));
        root.push(json!([{"call": "wait_agent", "args": {"targets": [w], "mode": "all", "timeout_ms": 60000}}]));
    }
    root.push(json!([{"call": "list_agents", "args": {}}]));
    root.push(json!([{"say": "all revived"}]));
    let script = json!({"agents": [
        {"match": "/root", "responses": root},
        {"match": "/root/*", "responses": [
            [{"say": "{{task_name}} did: {{input}}"}],
            [{"say": "{{task_name}} then did: {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |c| c.max_resident = 2).await;
    s.run("churn").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("all revived".into()))
    );
    // Spawning w3, w4, w5 evicted the oldest idle workers; each follow-up then revived its
    // target and evicted the least recently used one.
    assert_eq!(
        evicted(&s),
        ["w1", "w2", "w3", "w4", "w5", "w1", "w2", "w3"].map(|w| format!("/root/{w}"))
    );
    assert_eq!(revived(&s), workers.map(|w| format!("/root/{w}")));
    assert_eq!(s.orch.resident_children().await, 2);
    for w in workers {
        let path = Session::path(&format!("/root/{w}"));
        let requests = s.model.requests_for(&path);
        assert_eq!(requests.len(), 2, "{w}");
        // The revived request is the first request, plus the first answer, plus the follow-up.
        let (before, after) = (&requests[0].input, &requests[1].input);
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "{w} lost or changed history"
        );
        assert_eq!(
            after[before.len()],
            ResponseItem::Message {
                role: "assistant".into(),
                content: format!("{w} did: first task of {w}")
            }
        );
        assert_eq!(after.len(), before.len() + 2);
        let status = s.orch.agent(&path).await.expect("worker").status;
        assert_eq!(
            status,
            AgentStatus::Completed(Some(format!("{w} then did: second task of {w}")))
        );
    }
    // Listing shows evicted agents with their last status, never not_found.
    let listed: Value = serde_json::from_str(&s.tool_output("/root", "list_agents")).expect("json");
    let agents = listed["agents"].as_array().expect("agents");
    assert_eq!(agents.len(), 6);
    let non_resident: Vec<&Value> = agents.iter().filter(|a| a["resident"] == false).collect();
    assert_eq!(non_resident.len(), 3, "{listed}");
    for agent in non_resident {
        assert!(agent["agent_status"]["completed"].is_string(), "{agent}");
    }
}

#[tokio::test]
async fn queue_only_mail_does_not_revive_and_is_delivered_before_the_followup() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "one"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "two"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "send_message", "args": {"target": "a", "message": "a note while evicted"}},
             {"call": "interrupt_agent", "args": {"target": "a"}},
             {"call": "wait_agent", "args": {"targets": ["a"], "mode": "all", "timeout_ms": 1000}},
             {"call": "list_agents", "args": {}}],
            [{"call": "followup_task", "args": {"target": "a", "message": "now continue"}}],
            [{"call": "wait_agent", "args": {"targets": ["a"], "mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/*", "responses": [
            [{"say": "{{task_name}} ready"}],
            [{"say": "{{task_name}} got {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |c| c.max_resident = 1).await;
    s.run("evicted mail").await;
    let listed: Value = serde_json::from_str(&s.tool_output("/root", "list_agents")).expect("json");
    let a = &listed["agents"][1];
    assert_eq!(a["agent_name"], "/root/a");
    assert_eq!(
        a["resident"], false,
        "send, interrupt, wait and list never revive"
    );
    assert_eq!(a["unread"], 1);
    assert_eq!(
        json!({"previous_status": {"completed": "a ready"}}).to_string(),
        s.tool_output("/root", "interrupt_agent")
    );
    let requests = s.model.requests_for(&Session::path("/root/a"));
    assert_eq!(requests.len(), 2);
    let tail = arbor_tests::texts(&requests[1].input[requests[0].input.len() + 1..]);
    assert_eq!(tail, ["a note while evicted", "now continue"]);
    assert_eq!(revived(&s), ["/root/a"]);
}

#[tokio::test]
async fn a_revived_agent_keeps_its_own_model_role_and_sandbox() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "scout", "agent_type": "explorer", "model": "small-model", "message": "look"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "spawn_agent", "args": {"task_name": "other", "message": "push scout out"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "followup_task", "args": {"target": "scout", "message": "look again"}}],
            [{"call": "wait_agent", "args": {"targets": ["scout"], "mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/*", "repeat": true, "responses": [[{"say": "{{task_name}} ok"}]]}
    ]});
    let mut s = Session::new(script, |c| {
        c.max_resident = 1;
        c.model = "big-model".into();
    })
    .await;
    s.run("keep settings").await;
    assert_eq!(revived(&s), ["/root/scout"]);
    let requests = s.model.requests_for(&Session::path("/root/scout"));
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].model, "small-model");
    assert_eq!(requests[1].model, "small-model");
    assert_eq!(requests[1].agent.role, "explorer");
    assert_eq!(requests[0].tools, requests[1].tools);
    let scout = s
        .orch
        .agent(&Session::path("/root/scout"))
        .await
        .expect("scout");
    assert_eq!(scout.sandbox, "read-only");
    assert_eq!(scout.model, "small-model");
}
