//! How a turn ends: its end line and its result mail go to the log together, the result
//! reaches the parent before the final status, and waits see the order the contract fixes;
//! turns that end faster than a disk syncs cost no sync of their own.

use arbor_protocol::{AgentStatus, Event, MailKind};
use serde_json::{Value, json};

use arbor_tests::Session;

/// A follow-up that reaches an agent while it samples its final answer waits for the next
/// turn; that turn starts right after, and a `wait_agent` in mode `all` covers both turns.
#[tokio::test]
async fn a_follow_up_during_the_final_answer_gets_its_own_turn_inside_the_wait() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "go"}},
             {"call": "spawn_agent", "args": {"task_name": "b", "message": "go"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        {"match": "/root/a", "responses": [
            [{"call": "exec_command", "args": {"cmd": "touch ready"}}],
            // Long enough for b's follow-up to arrive while this answer is being sampled.
            {"delay_ms": 500, "items": [{"say": "first"}]},
            [{"say": "second: {{input}}"}]
        ]},
        {"match": "/root/b", "responses": [
            [{"call": "exec_command", "args": {"cmd": "while [ ! -f ready ]; do sleep 0.01; done"}}],
            [{"call": "followup_task", "args": {"target": "/root/a", "message": "again"}}],
            [{"say": "b done"}]
        ]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("settle").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("done".into()))
    );
    let a = s.orch.agent(&Session::path("/root/a")).await.expect("a");
    assert_eq!(
        a.status,
        AgentStatus::Completed(Some("second: again".into()))
    );
    // The wait returned only after a's second turn had settled: the root's next request
    // carried all three results, a's in order.
    let results = s.mail_in_request("/root", 2, "FINAL_ANSWER");
    assert_eq!(results.len(), 3, "{results:?}");
    let first = results.iter().position(|r| r == "first").expect("first");
    let second = results.iter().position(|r| r == "second: again");
    assert!(second.is_some_and(|second| first < second), "{results:?}");
    assert!(results.contains(&"b done".to_string()), "{results:?}");
    // Every turn of a ended before the next began, and before the wait returned.
    let order: Vec<String> = s
        .seen
        .iter()
        .filter_map(|line| match &line.event {
            Event::TurnStarted { path } if path.as_str() == "/root/a" => Some("start".into()),
            Event::TurnCompleted { path, .. } if path.as_str() == "/root/a" => Some("end".into()),
            Event::ToolResult { path, name, .. } if path.is_root() && name == "wait_agent" => {
                Some("wait returned".into())
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, ["start", "end", "start", "end", "wait returned"]);
}

/// A child's result mail is in the log before its final status, and before the parent's wait
/// returns.
#[tokio::test]
async fn results_are_recorded_before_statuses_and_waits_see_them() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "work"}}],
            [{"call": "wait_agent", "args": {"mode": "any", "timeout_ms": 60000}}],
            [{"say": "heard back"}]
        ]},
        {"match": "/root/w", "responses": [[{"say": "result of {{input}}"}]]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.orch.start("go").await.expect("start");
    let status = s
        .wait_event(|event| {
            matches!(event, Event::AgentStatus { path, status: AgentStatus::Completed(_) }
                if path.as_str() == "/root/w")
        })
        .await;
    // The status event follows the result: its mail is already in the log, before the line
    // of the final status.
    let sent = s
        .seen
        .iter()
        .find_map(|l| match &l.event {
            Event::MailSent {
                id,
                kind: MailKind::Result,
                ..
            } => Some(*id),
            _ => None,
        })
        .unwrap_or_else(|| panic!("status {status:?} came before the result was announced"));
    s.orch.flush().await.expect("flush");
    let log = s.orch.log().path().to_path_buf();
    let lines: Vec<Value> = arbor_rollout::log::read_log(&log, 0)
        .expect("log")
        .lines
        .into_iter()
        .map(|(line, _)| serde_json::to_value(&line).expect("line"))
        .collect();
    let mail_line = lines
        .iter()
        .position(|l| l["type"] == "mail_sent" && l["payload"]["id"] == sent.to_string())
        .expect("the result's line");
    let status_line = lines
        .iter()
        .position(|l| l["type"] == "status" && l["payload"]["status"]["completed"].is_string())
        .expect("a completed status line");
    assert!(mail_line < status_line, "{lines:?}");
    s.orch.wait_quiescent().await;
    s.drain();
    assert_eq!(
        s.mail_in_request("/root", 2, "FINAL_ANSWER"),
        ["result of work"]
    );
    let sent_before_status = s
        .seen
        .iter()
        .position(|l| {
            matches!(
                &l.event,
                Event::MailSent {
                    kind: MailKind::Result,
                    ..
                }
            )
        })
        .expect("mail.sent");
    let final_status = s
        .seen
        .iter()
        .position(|l| {
            matches!(&l.event, Event::AgentStatus { path, status: AgentStatus::Completed(_) }
                if path.as_str() == "/root/w")
        })
        .expect("final status");
    let completed = s
        .seen
        .iter()
        .position(
            |l| matches!(&l.event, Event::TurnCompleted { path, .. } if path.as_str() == "/root/w"),
        )
        .expect("turn.completed");
    assert!(completed < sent_before_status && sent_before_status < final_status);
}

/// Two agents rally follow-ups as fast as the scripted model goes: every result reaches the
/// parent once, in turn order per agent, and no turn waits for a sync.
#[tokio::test]
async fn fast_turns_keep_their_results_in_order_without_syncs_of_their_own() {
    const HOPS: usize = 40;
    let mut ping = Vec::new();
    let mut pong = vec![json!([{"say": "ready"}])];
    for hop in 0..HOPS / 2 {
        let (to_pong, to_ping) = (2 * hop + 1, 2 * hop + 2);
        ping.push(json!([{"call": "followup_task", "args": {"target": "/root/pong", "message": format!("ball {to_pong:02}")}}]));
        ping.push(json!([{"say": "{{input}} sent"}]));
        pong.push(json!([{"call": "followup_task", "args": {"target": "/root/ping", "message": format!("ball {to_ping:02}")}}]));
        pong.push(json!([{"say": "{{input}} sent"}]));
    }
    ping.push(json!([{"say": "over"}]));
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "pong", "message": "wait"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"call": "spawn_agent", "args": {"task_name": "ping", "message": "serve"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "rally over"}]
        ]},
        {"match": "/root/ping", "responses": ping},
        {"match": "/root/pong", "responses": pong}
    ]});
    // One child turn at a time, so that every ball starts a turn of its own.
    let mut s = Session::new(script, |c| c.max_running = 1).await;
    s.run("rally").await;
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("rally over".into()))
    );
    let results = s.mail_in_request("/root", 4, "FINAL_ANSWER");
    let from = |parity: usize| -> Vec<String> {
        results
            .iter()
            .filter(|r| {
                r.strip_prefix("ball ")
                    .and_then(|r| r.get(..2))
                    .and_then(|n| n.parse::<usize>().ok())
                    .is_some_and(|n| n % 2 == parity)
            })
            .cloned()
            .collect()
    };
    // Pong's turns answer the odd balls, ping's the even ones; ping answers the last ball,
    // the 40th, with "over".
    let expected = |parity: usize| -> Vec<String> {
        (1..HOPS)
            .filter(|n| n % 2 == parity)
            .map(|n| format!("ball {n:02} sent"))
            .collect()
    };
    assert_eq!(from(1), expected(1));
    assert_eq!(from(0), expected(0));
    for first in ["ready", "serve sent", "over"] {
        assert!(results.contains(&first.to_string()), "{results:?}");
    }
    assert_eq!(results.len(), HOPS + 2, "{results:?}");
    // Nothing in the rally waits for the disk: the log syncs when the session starts and when
    // the test reads the files, not once per turn.
    let syncs = s.orch.log_totals().syncs;
    let turns = s
        .seen
        .iter()
        .filter(|l| matches!(l.event, Event::TurnCompleted { .. }))
        .count() as u64;
    assert!(syncs <= 4, "{syncs} syncs for {turns} turns");
}
