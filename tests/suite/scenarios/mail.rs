//! Mail and waiting: queue-only and mid-turn mail, `wait_agent`, results to the parent only.

use arbor_protocol::ResponseItem;
use serde_json::json;

use arbor_tests::Session;

use super::{completed, json_of, wait_for_file};

#[tokio::test]
async fn queue_only_mail_waits_then_a_followup_delivers_it_first() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "start"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"call": "send_message", "args": {"target": "w", "message": "note one"}},
             {"call": "send_message", "args": {"target": "w", "message": "note two"}},
             {"call": "list_agents", "args": {}}],
            [{"call": "followup_task", "args": {"target": "w", "message": "now work"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/w", "responses": [
            [{"say": "started"}],
            [{"say": "got {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("mail").await;
    let listed = json_of(&s.tool_output("/root", "list_agents"));
    let w = &listed["agents"].as_array().expect("agents")[1];
    assert_eq!(w["agent_name"], "/root/w");
    assert_eq!(w["unread"], 2);
    assert_eq!(w["agent_status"], json!({"completed": "started"}));
    let requests = s.model.requests_for(&Session::path("/root/w"));
    assert_eq!(requests.len(), 2, "queue-only mail woke nobody");
    assert_eq!(
        s.mail_in_request("/root/w", 1, "MESSAGE"),
        ["note one", "note two"]
    );
    assert_eq!(
        s.mail_in_request("/root/w", 1, "NEW_TASK"),
        ["start", "now work"]
    );
    let last = requests[1].input.iter().rev().find_map(|i| match i {
        ResponseItem::Message { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert!(
        last.expect("a message").ends_with("now work"),
        "the follow-up comes after the queued notes"
    );
    assert_eq!(
        s.orch
            .agent(&Session::path("/root/w"))
            .await
            .expect("w")
            .status,
        completed("got now work")
    );
}

#[tokio::test]
async fn mail_to_a_running_agent_joins_its_next_request() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "wait for the flag"}}],
            [{"call": "exec_command", "args": {"cmd": wait_for_file("started")}}],
            [{"call": "send_message", "args": {"target": "w", "message": "mid-turn note"}}],
            [{"call": "exec_command", "args": {"cmd": "touch flag"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/w", "responses": [
            [{"call": "exec_command", "args": {"cmd": format!("touch started; {}", wait_for_file("flag"))}}],
            [{"say": "read {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("mid-turn mail").await;
    let w = s.model.requests_for(&Session::path("/root/w"));
    assert_eq!(w.len(), 2, "the note did not start a second turn");
    assert_eq!(
        s.mail_in_request("/root/w", 0, "MESSAGE"),
        Vec::<String>::new()
    );
    assert_eq!(
        s.mail_in_request("/root/w", 1, "MESSAGE"),
        ["mid-turn note"]
    );
    assert_eq!(
        s.orch
            .agent(&Session::path("/root/w"))
            .await
            .expect("w")
            .status,
        completed("read mid-turn note")
    );
}

#[tokio::test]
async fn wait_agent_modes_timeouts_and_bad_targets() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "wait_agent", "args": {}}],
            [{"call": "spawn_agent", "args": {"task_name": "slow", "message": "block"}}],
            [{"call": "wait_agent", "args": {"timeout_ms": 5}}],
            [{"call": "wait_agent", "args": {"timeout_ms": 3_600_001}}],
            [{"call": "wait_agent", "args": {"targets": ["/root"]}}],
            // Released and waited for in one response: the result reaches the wait however
            // soon the child finishes.
            [{"call": "exec_command", "args": {"cmd": "touch flag"}},
             {"call": "wait_agent", "args": {"mode": "any", "timeout_ms": 60000}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "waited"}]
        ]},
        {"match": "/root/slow", "responses": [
            [{"call": "exec_command", "args": {"cmd": wait_for_file("flag")}}],
            [{"say": "slow done"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("waits").await;
    let out: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .filter(|(n, _)| n == "wait_agent")
        .map(|(_, o)| o)
        .collect();
    assert_eq!(
        json_of(&out[0]),
        json!({"message": "no agents to wait for", "timed_out": false})
    );
    let raised = json_of(&out[1]);
    assert_eq!(raised["timed_out"], true);
    assert!(
        raised["message"]
            .as_str()
            .expect("text")
            .ends_with("Requested timeout of 5ms was raised to the minimum of 1000ms."),
        "{raised}"
    );
    assert_eq!(out[2], "timeout_ms must be at most 3600000");
    assert_eq!(
        out[3],
        "wait_agent cannot wait on the caller itself or an ancestor: /root"
    );
    let any = json_of(&out[4]);
    assert_eq!(
        any,
        json!({"message": "mail is waiting from /root/slow", "timed_out": false})
    );
    let all = json_of(&out[5]);
    assert_eq!(all["timed_out"], false);
    assert!(
        all["message"]
            .as_str()
            .expect("text")
            .contains("/root/slow completed: slow done"),
        "{all}"
    );
    // Waiting never consumed the result: it reached the root's next request.
    assert_eq!(s.mail_in_request("/root", 6, "FINAL_ANSWER"), ["slow done"]);
}

#[tokio::test]
async fn results_go_to_the_direct_parent_only_and_wake_it_once() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "lead"}},
             {"call": "spawn_agent", "args": {"task_name": "z", "message": "solo"}}],
            [{"say": "children started"}],
            [{"say": "woken with {{input}}"}]
        ]},
        {"match": "/root/a", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "leaf"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "a got {{input}}"}]
        ]},
        {"match": "/root/a/b", "responses": [[{"say": "b result"}]]},
        {"match": "/root/z", "responses": [[{"say": "z result"}]]}
    ]});
    let mut s = Session::new(script, |c| c.max_depth = 2).await;
    s.run("results").await;
    // A result that arrives while the root's turn runs joins that turn; the ones that arrive
    // after it ended wake it, once. Either way each result reaches it exactly once.
    let root_requests = s.model.requests_for(&Session::path("/root"));
    assert!(
        (2..=3).contains(&root_requests.len()),
        "root woken at most once: {} requests",
        root_requests.len()
    );
    let last = root_requests.len() - 1;
    let mut finals = s.mail_in_request("/root", last, "FINAL_ANSWER");
    finals.sort();
    assert_eq!(finals, ["a got b result", "z result"]);
    for request in &root_requests {
        let text = format!("{:?}", request.input);
        assert!(
            !text.contains("b result\"") || text.contains("a got b result"),
            "b's result reached the root"
        );
    }
    assert_eq!(
        s.mail_in_request("/root/a", 2, "FINAL_ANSWER"),
        ["b result"]
    );
    let ends: &[&str] = if last == 2 {
        &["woken with z result", "woken with a got b result"]
    } else {
        &["children started"]
    };
    let root = s.orch.root_status().await;
    assert!(
        ends.iter().map(|end| completed(end)).any(|end| end == root),
        "{:?}",
        s.orch.root_status().await
    );
}
