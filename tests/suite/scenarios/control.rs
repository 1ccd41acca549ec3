//! Control: close, interrupt, `max_running` queueing and the `max_turn_responses` limit.

use arbor_protocol::{AgentStatus, Event};
use serde_json::{Value, json};

use arbor_tests::Session;

use super::{completed, json_of, wait_for_file};

#[tokio::test]
async fn close_stops_the_subtree_and_later_mail_is_refused() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "spawn b"}}],
            [{"call": "wait_agent", "args": {"targets": ["a"], "timeout_ms": 60000}}],
            [{"call": "exec_command", "args": {"cmd": wait_for_file("b_started")}}],
            [{"call": "close_agent", "args": {"target": "a"}}],
            [{"call": "send_message", "args": {"target": "/root/a", "message": "hello?"}},
             {"call": "close_agent", "args": {"target": "/root"}},
             {"call": "list_agents", "args": {}}],
            [{"say": "closed"}]
        ]},
        {"match": "/root/a", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "block"}}],
            [{"say": "a spawned b"}]
        ]},
        {"match": "/root/a/b", "responses": [
            [{"call": "exec_command", "args": {"cmd": format!("touch b_started; {}", wait_for_file("never"))}}],
            [{"say": "unreachable"}]
        ]}
    ]});
    let mut s = Session::new(script, |c| c.max_depth = 2).await;
    s.run("close").await;
    assert_eq!(s.orch.root_status().await, completed("closed"));
    assert_eq!(
        json_of(&s.tool_output("/root", "list_agents")),
        json!({"agents": [{"agent_name": "/root", "agent_status": "running", "nickname": null,
            "role": "default", "resident": true, "unread": 0}]})
    );
    let closes: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(n, _)| n == "close_agent")
        .map(|(_, o)| o)
        .collect();
    assert_eq!(
        json_of(&closes[0]),
        json!({"previous_status": {"completed": "a spawned b"}})
    );
    assert_eq!(closes[1], "root is not a spawned agent");
    assert_eq!(s.tool_results("/root")[4].1, "agent /root/a is closed");
    let a = s.orch.agent(&Session::path("/root/a")).await.expect("a");
    assert_eq!(a.status, AgentStatus::Closed);
    let b = s.orch.agent(&Session::path("/root/a/b")).await.expect("b");
    assert_eq!(b.status, AgentStatus::Interrupted("parent_closed".into()));
    let store = s.orch.store();
    assert_eq!(
        store.edge(a.id).expect("edge").map(|e| e.1.as_str()),
        Some("closed")
    );
    assert_eq!(
        store.edge(b.id).expect("edge").map(|e| e.1.as_str()),
        Some("open")
    );
    s.drain();
    assert!(s.seen.iter().any(|l| matches!(&l.event, Event::TurnAborted { path, reason } if path.as_str() == "/root/a/b" && reason == "parent_closed")));
}

#[tokio::test]
async fn interrupt_stops_the_turn_and_keeps_the_agent_usable() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "block"}}],
            [{"call": "exec_command", "args": {"cmd": wait_for_file("started")}}],
            [{"call": "interrupt_agent", "args": {"target": "w"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "followup_task", "args": {"target": "w", "message": "try again"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "recovered"}]
        ]},
        {"match": "/root/w", "responses": [
            [{"call": "exec_command", "args": {"cmd": format!("touch started; {}", wait_for_file("never"))}}],
            [{"say": "back: {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("interrupt").await;
    assert_eq!(
        json_of(&s.tool_output("/root", "interrupt_agent")),
        json!({"previous_status": "running"})
    );
    assert_eq!(
        s.orch
            .agent(&Session::path("/root/w"))
            .await
            .expect("w")
            .status,
        completed("back: try again")
    );
    let results = s.mail_in_request("/root", 6, "FINAL_ANSWER");
    assert_eq!(results, ["interrupted: interrupted", "back: try again"]);
}

#[tokio::test]
async fn max_running_queues_turns_and_starts_them_in_order() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w1", "message": "one"}},
             {"call": "spawn_agent", "args": {"task_name": "w2", "message": "two"}},
             {"call": "spawn_agent", "args": {"task_name": "w3", "message": "three"}},
             {"call": "list_agents", "args": {}}],
            [{"call": "exec_command", "args": {"cmd": "touch go"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "all ran"}]
        ]},
        {"match": "/root/w1", "responses": [
            [{"call": "exec_command", "args": {"cmd": wait_for_file("go")}}],
            [{"say": "w1 ran"}]
        ]},
        {"match": "/root/w*", "responses": [[{"say": "{{task_name}} ran"}]]}
    ]});
    let mut s = Session::new(script, |c| c.max_running = 1).await;
    s.run("queue").await;
    let listed = json_of(&s.tool_output("/root", "list_agents"));
    let statuses: Vec<Value> = listed["agents"].as_array().expect("agents")[1..]
        .iter()
        .map(|a| a["agent_status"].clone())
        .collect();
    assert!(
        statuses[0] == json!("running") || statuses[0] == json!("pending_init"),
        "{statuses:?}"
    );
    assert_eq!(statuses[1..], [json!("queued"), json!("queued")]);
    let positions: Vec<Value> = listed["agents"].as_array().expect("agents")[2..]
        .iter()
        .map(|a| a["queue_position"].clone())
        .collect();
    assert_eq!(positions, [json!(1), json!(2)]);
    let order: Vec<(String, &str)> = s
        .seen
        .iter()
        .filter_map(|l| match &l.event {
            Event::TurnStarted { path } if path.as_str() != "/root" => {
                Some((path.to_string(), "start"))
            }
            Event::TurnCompleted { path, .. } if path.as_str() != "/root" => {
                Some((path.to_string(), "end"))
            }
            _ => None,
        })
        .collect();
    let expected: Vec<(String, &str)> = ["w1", "w2", "w3"]
        .iter()
        .flat_map(|w| {
            [
                (format!("/root/{w}"), "start"),
                (format!("/root/{w}"), "end"),
            ]
        })
        .collect();
    assert_eq!(order, expected, "one child turn at a time, in spawn order");
}

#[tokio::test]
async fn a_turn_stops_at_max_turn_responses() {
    let script = json!({"agents": [
        {"match": "/root", "repeat": true, "responses": [[{"call": "list_agents", "args": {}}]]}
    ]});
    let mut s = Session::new(script, |c| c.max_turn_responses = 3).await;
    s.run("loop forever").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Errored("turn response limit reached".into())
    );
    assert_eq!(s.model.requests_for(&Session::path("/root")).len(), 3);
}
