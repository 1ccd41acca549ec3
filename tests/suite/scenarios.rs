//! Multi-agent scenarios on the scripted model, through the `Orchestrator`.

use arbor_protocol::{AgentStatus, Event, ResponseItem};
use serde_json::{Value, json};

use arbor_tests::Session;

fn completed(text: &str) -> AgentStatus {
    AgentStatus::Completed(Some(text.to_string()))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("not json ({err}): {text}"))
}

/// Shell loop that waits for a file in the workspace (a model's tool, not a test sleep).
fn wait_for_file(name: &str) -> String {
    format!("while [ ! -f {name} ]; do sleep 0.01; done; echo {name}")
}

#[tokio::test]
async fn root_spawns_workers_waits_and_summarises() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "worker_a", "agent_type": "worker", "message": "task a"}},
             {"call": "spawn_agent", "args": {"task_name": "worker_b", "agent_type": "worker", "message": "task b"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "both workers are done"}]
        ]},
        {"match": "/root/worker_*", "responses": [
            [{"call": "list_agents", "args": {}}],
            [{"say": "done with {{input}}"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("refactor").await;
    assert_eq!(s.orch.root_status(), completed("both workers are done"));
    for (name, task) in [("worker_a", "task a"), ("worker_b", "task b")] {
        let worker = s
            .orch
            .agent(&Session::path(&format!("/root/{name}")))
            .expect("worker");
        assert_eq!(worker.status, completed(&format!("done with {task}")));
        assert_eq!(worker.role, "worker");
        assert!(worker.nickname.is_some());
    }
    let spawned = json_of(&s.tool_results("/root")[0].1);
    assert_eq!(spawned["task_name"], "/root/worker_a");
    // The root's last request carried both results.
    let mut finals = s.mail_in_request("/root", 2, "FINAL_ANSWER");
    finals.sort();
    assert_eq!(finals, ["done with task a", "done with task b"]);
}

#[tokio::test]
async fn spawn_depth_duplicates_and_names_are_checked() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "go deeper"}}],
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "again"}},
             {"call": "spawn_agent", "args": {"task_name": "Bad-Name", "message": "x"}},
             {"call": "spawn_agent", "args": {"task_name": "guardian", "message": "x"}},
             {"call": "spawn_agent", "args": {"task_name": "b", "message": "  "}},
             {"call": "spawn_agent", "args": {"task_name": "c", "message": "x", "agent_type": "nope"}},
             {"call": "spawn_agent", "args": {"task_name": "d", "message": "x", "agent_type": "guardian"}},
             {"call": "spawn_agent", "args": {"task_name": "e", "message": "x", "colour": "red"}},
             {"call": "spawn_agent", "args": {"task_name": "f", "message": "x", "fork_turns": "0"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "checked"}]
        ]},
        {"match": "/root/a", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "deepest"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "a done"}]
        ]},
        {"match": "/root/a/b", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "c", "message": "too deep"}}],
            [{"say": "b done"}]
        ]}
    ]});
    let mut s = Session::new(script, |c| c.max_depth = 2).await;
    s.run("check spawning").await;
    assert_eq!(s.orch.root_status(), completed("checked"));
    let root = s.tool_results("/root");
    let errors: Vec<&str> = root[1..9].iter().map(|(_, o)| o.as_str()).collect();
    assert_eq!(errors[0], "agent path `/root/a` already exists");
    assert_eq!(
        errors[1],
        "agent_name must use only lowercase letters, digits, and underscores"
    );
    assert_eq!(errors[2], "agent path `/root/guardian` already exists");
    assert_eq!(errors[3], "Empty message can't be sent to an agent");
    assert_eq!(errors[4], "unknown agent_type 'nope'");
    assert_eq!(
        errors[5],
        "agent_type 'guardian' is internal and cannot be spawned"
    );
    assert!(
        errors[6].starts_with("invalid arguments for spawn_agent: unknown field `colour`"),
        "{}",
        errors[6]
    );
    assert!(errors[7].starts_with("fork_turns must be"), "{}", errors[7]);
    assert_eq!(
        s.tool_output("/root/a/b", "spawn_agent"),
        "agent depth limit reached: max depth is 2"
    );
    assert_eq!(
        s.orch.agent(&Session::path("/root/a/b")).expect("b").status,
        completed("b done")
    );
}

#[tokio::test]
async fn relative_names_reach_descendants_and_siblings_need_absolute_paths() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "first"}}],
            [{"call": "wait_agent", "args": {"targets": ["a"], "mode": "all"}}],
            [{"call": "spawn_agent", "args": {"task_name": "b", "message": "second"}}],
            [{"call": "wait_agent", "args": {"targets": ["b"], "mode": "all"}}],
            [{"say": "ok"}]
        ]},
        {"match": "/root/a", "responses": [[{"say": "a idle"}]]},
        {"match": "/root/b", "responses": [
            [{"call": "send_message", "args": {"target": "a", "message": "relative"}},
             {"call": "send_message", "args": {"target": "/root/a", "message": "absolute"}},
             {"call": "send_message", "args": {"target": "../a", "message": "dots"}}],
            [{"say": "b done"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("addressing").await;
    let outputs: Vec<String> = s
        .tool_results("/root/b")
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    assert_eq!(
        outputs,
        [
            "live agent path `/root/b/a` not found",
            "",
            "agent_name `..` is reserved"
        ]
    );
    let a = s.orch.agent(&Session::path("/root/a")).expect("a");
    assert_eq!(a.unread, 1, "the absolute message waits, unread");
}

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
        s.orch.agent(&Session::path("/root/w")).expect("w").status,
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
        s.orch.agent(&Session::path("/root/w")).expect("w").status,
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
            [{"call": "exec_command", "args": {"cmd": "touch flag"}}],
            [{"call": "wait_agent", "args": {"mode": "any", "timeout_ms": 60000}}],
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
    assert_eq!(s.mail_in_request("/root", 7, "FINAL_ANSWER"), ["slow done"]);
}

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
    assert_eq!(s.orch.root_status(), completed("closed"));
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
    let a = s.orch.agent(&Session::path("/root/a")).expect("a");
    assert_eq!(a.status, AgentStatus::Closed);
    let b = s.orch.agent(&Session::path("/root/a/b")).expect("b");
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
        s.orch.agent(&Session::path("/root/w")).expect("w").status,
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
    let root_requests = s.model.requests_for(&Session::path("/root"));
    assert_eq!(root_requests.len(), 3, "root woken exactly once");
    let mut finals = s.mail_in_request("/root", 2, "FINAL_ANSWER");
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
    let woken = ["woken with z result", "woken with a got b result"].map(completed);
    assert!(
        woken.contains(&s.orch.root_status()),
        "{:?}",
        s.orch.root_status()
    );
}

#[tokio::test]
async fn roles_narrow_and_never_widen() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "lead", "agent_type": "lead", "message": "delegate"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/lead", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "wide", "agent_type": "wide", "message": "try"}},
             {"call": "apply_patch", "args": {"patch": "*** Begin Patch\n*** End Patch"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "lead done"}]
        ]},
        {"match": "/root/lead/wide", "responses": [
            [{"call": "apply_patch", "args": {"patch": "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"}}],
            [{"say": "wide done"}]
        ]}
    ]});
    let setup = |cwd: &std::path::Path| {
        let roles = cwd.join(".arbor/roles");
        std::fs::create_dir_all(&roles).expect("roles dir");
        std::fs::write(
            roles.join("lead.toml"),
            "name = \"lead\"\ndescription = \"plans\"\ndeveloper_instructions = \"delegate\"\ntools = [\"spawn_agent\", \"wait_agent\", \"list_agents\"]\n",
        )
        .expect("lead role");
        std::fs::write(
            roles.join("wide.toml"),
            "name = \"wide\"\ndescription = \"wants more\"\ndeveloper_instructions = \"edit\"\nsandbox_mode = \"danger-full-access\"\ntools = [\"apply_patch\", \"exec_command\", \"list_agents\"]\n",
        )
        .expect("wide role");
    };
    let mut s = Session::with_workspace(script, setup, |c| {
        c.max_depth = 2;
        c.sandbox = arbor_protocol::SandboxMode::ReadOnly;
    })
    .await;
    s.run("narrowing").await;
    let wide = s
        .orch
        .agent(&Session::path("/root/lead/wide"))
        .expect("wide");
    assert_eq!(wide.sandbox, "read-only");
    let tools: Vec<String> = s.model.requests_for(&Session::path("/root/lead/wide"))[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(tools, ["list_agents"]);
    assert_eq!(
        s.tool_output("/root/lead", "apply_patch"),
        "tool `apply_patch` is not available to this agent"
    );
    assert_eq!(
        s.tool_output("/root/lead/wide", "apply_patch"),
        "tool `apply_patch` is not available to this agent"
    );
    assert!(!s.workspace().join("x.txt").exists());
}

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
        runs.push((trace, s.orch.root_status()));
    }
    assert_eq!(runs[0], runs[1]);
}

#[tokio::test]
async fn a_turn_stops_at_max_turn_responses() {
    let script = json!({"agents": [
        {"match": "/root", "repeat": true, "responses": [[{"call": "list_agents", "args": {}}]]}
    ]});
    let mut s = Session::new(script, |c| c.max_turn_responses = 3).await;
    s.run("loop forever").await;
    assert_eq!(
        s.orch.root_status(),
        AgentStatus::Errored("turn response limit reached".into())
    );
    assert_eq!(s.model.requests_for(&Session::path("/root")).len(), 3);
}
