//! Determinism: the same script gives the same run twice.

use arbor_protocol::Event;
use serde_json::json;

use arbor_tests::Session;

use super::json_of;

#[tokio::test]
async fn the_same_script_gives_the_same_run_twice() {
    // Every step waits for the one before, so the whole trace is fixed by the script.
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "one"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "two"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/*", "responses": [
            [{"call": "exec_command", "args": {"cmd": "echo {{task_name}}"}}],
            [{"say": "{{task_name}}: {{input}}"}]
        ]}
    ]});
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut s = Session::new(script.clone(), |_| {}).await;
        s.run("same").await;
        let nicknames: Vec<String> = s
            .seen
            .iter()
            .filter_map(|l| match &l.event {
                Event::AgentSpawned {
                    nickname: Some(n), ..
                } => Some(n.clone()),
                _ => None,
            })
            .collect();
        let trace: Vec<String> = s
            .seen
            .iter()
            .filter(|l| {
                !matches!(
                    l.event,
                    Event::SessionStarted { .. }
                        | Event::SessionCompleted { .. }
                        | Event::Usage { .. }
                )
            })
            .map(|l| {
                let mut value = serde_json::to_value(&l.event).expect("event json");
                for key in ["id", "nickname", "ts"] {
                    value.as_object_mut().map(|o| o.remove(key));
                }
                // exec_command reports how long it took: the one field allowed to differ.
                if value["name"] == "exec_command" && value["output"].is_string() {
                    let mut output = json_of(value["output"].as_str().unwrap_or_default());
                    output.as_object_mut().map(|o| o.remove("duration_ms"));
                    value["output"] = output;
                }
                // Nicknames are drawn per session; everything else must match.
                nicknames.iter().fold(value.to_string(), |line, nick| {
                    line.replace(nick.as_str(), "<nickname>")
                })
            })
            .collect();
        runs.push((trace, s.orch.root_status().await));
    }
    assert_eq!(runs[0], runs[1]);
}
