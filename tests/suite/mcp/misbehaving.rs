//! A server that crashes, one that hangs at start and one that answers garbage: each gives the
//! model a clear tool error, the session goes on, and nothing any of them started is left
//! running afterwards (checked in the process table). Tools no provider would take are left
//! out with a notice.

use arbor_protocol::{AgentStatus, Event};
use arbor_tests::Session;
use serde_json::json;

use super::{left_running, misbehaving, offered, pids};

#[tokio::test]
async fn crashing_hanging_and_garbage_servers_give_clear_errors_and_leave_nothing_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let call = |name: &str, args: serde_json::Value| json!([{"call": name, "args": args}]);
    let script = json!({"agents": [{"match": "/root", "responses": [
        call("mcp__crashy__echo", json!({"text": "one"})),
        call("mcp__crashy__crash", json!({})),
        call("mcp__crashy__echo", json!({"text": "two"})),
        call("mcp__crashy__garbage", json!({})),
        call("mcp__crashy__crash", json!({})),
        call("mcp__crashy__echo", json!({"text": "three"})),
        call("mcp__hang__anything", json!({})),
        call("mcp__junk__anything", json!({})),
        [{"say": "carried on"}]]}]});
    let servers = vec![
        misbehaving("crashy", "ok", &pidfile, |raw| {
            raw.tool_timeout_ms = Some(500)
        }),
        // Long enough for Python to start (and record its pids) on a loaded machine.
        misbehaving("hang", "hang-at-start", &pidfile, |raw| {
            raw.startup_timeout_ms = Some(1500)
        }),
        misbehaving("junk", "garbage-at-start", &pidfile, |raw| {
            raw.startup_timeout_ms = Some(1500)
        }),
    ];
    let mut s = Session::new(script, |config| config.mcp_servers = servers).await;
    s.run("exercise the servers").await;
    let outputs: Vec<String> = s
        .tool_results("/root")
        .into_iter()
        .map(|(_, output)| output)
        .collect();
    let expect_start = [
        "one",
        "mcp server `crashy` stopped during `crash`: it exited (exit status 3; its stderr ends with \"crashing on purpose\"); whether the call took effect is unknown; it is started again at the next call",
        "two",
        "mcp server `crashy` did not answer `garbage` within 500 ms (tool_timeout_ms); the call was cancelled",
        "mcp server `crashy` stopped during `crash`: it exited (exit status 3; its stderr ends with \"crashing on purpose\"); whether the call took effect is unknown; it is not started again in this session",
    ];
    assert_eq!(outputs[..5], expect_start, "{outputs:#?}");
    assert!(
        outputs[5].starts_with("mcp server `crashy` is unavailable in this session: it exited"),
        "{}",
        outputs[5]
    );
    assert_eq!(
        outputs[6],
        "mcp server `hang` is unavailable in this session: it did not answer `initialize` within 1500 ms (startup_timeout_ms)"
    );
    assert!(
        outputs[7].starts_with(
            "mcp server `junk` is unavailable in this session: it did not answer `initialize` within 1500 ms (startup_timeout_ms) (its last output was \"this is not json\")"
        ),
        "{}",
        outputs[7]
    );
    assert_eq!(
        s.orch.root_status().await,
        AgentStatus::Completed(Some("carried on".into()))
    );
    // The first request offered the good tools only; the bad ones came with notices.
    let tools = offered(&s, "/root", 0);
    for name in [
        "mcp__crashy__echo",
        "mcp__crashy__write",
        "mcp__crashy__crash",
    ] {
        assert!(tools.contains(&name.to_string()), "{tools:?}");
    }
    assert!(!tools.iter().any(|t| t.contains("bad")), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__hang")),
        "{tools:?}"
    );
    let notices: Vec<String> = s
        .seen
        .iter()
        .filter_map(|line| match &line.event {
            Event::McpNotice { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    for expected in [
        "mcp server `crashy`: tool `bad-schema` is not offered: its input schema has type \"array\", not \"object\"",
        "mcp server `crashy`: tool `bad.name` is not offered: its name has characters model providers refuse (only letters, digits, `_` and `-`)",
        "mcp server `crashy` restarted (start 2 of 2)",
    ] {
        assert!(
            notices.iter().any(|n| n == expected),
            "{expected}\n{notices:#?}"
        );
    }
    s.orch.shutdown("done").await;
    let started = pids(&pidfile);
    // crashy twice, hang and junk once each: a server and its grandchild per start.
    assert_eq!(started.len(), 8, "{started:?}");
    let left = tokio::task::spawn_blocking(move || left_running(&started))
        .await
        .expect("join");
    assert!(left.is_empty(), "still running after the session: {left:?}");
}
