//! A server's tools are cached in the home: the next session offers them without starting the
//! server, which starts only when one of its tools is first called (checked with the pids the
//! server writes).

use arbor_tests::Session;
use serde_json::json;

use super::{misbehaving, offered, pids};

#[tokio::test]
async fn the_next_session_starts_a_server_only_when_its_tool_is_called() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = || misbehaving("crashy", "ok", &pidfile, |_| {});
    let first =
        json!({"agents": [{"match": "/root", "responses": [[{"say": "nothing to call"}]]}]});
    let mut one = Session::new(first, |config| config.mcp_servers = vec![server()]).await;
    one.run("list the tools").await;
    one.orch.shutdown("done").await;
    assert_eq!(
        pids(&pidfile).len(),
        2,
        "the first session started the server once"
    );

    let count = format!("wc -l < {}", pidfile.display());
    let second = json!({"agents": [{"match": "/root", "responses": [
        [{"call": "exec_command", "args": {"cmd": count}}],
        [{"call": "mcp__crashy__echo", "args": {"text": "started now"}}],
        [{"call": "exec_command", "args": {"cmd": count}}],
        [{"say": "done"}]]}]});
    let home = one.home.path().to_path_buf();
    let mut two = Session::new(second, |config| {
        config.home = home;
        config.mcp_servers = vec![server()];
    })
    .await;
    two.run("call it").await;
    let outputs: Vec<String> = two
        .tool_results("/root")
        .into_iter()
        .map(|(_, output)| output)
        .collect();
    let lines = |output: &str| {
        let result: serde_json::Value = serde_json::from_str(output).expect("exec json");
        result["stdout"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    assert_eq!(
        lines(&outputs[0]),
        "1",
        "not started before the call: {outputs:?}"
    );
    assert_eq!(outputs[1], "started now");
    assert_eq!(lines(&outputs[2]), "2", "started by the call: {outputs:?}");
    assert!(offered(&two, "/root", 0).contains(&"mcp__crashy__echo".to_string()));
    two.orch.shutdown("done").await;
    let started = pids(&pidfile);
    let left = tokio::task::spawn_blocking(move || super::left_running(&started))
        .await
        .expect("join");
    assert!(left.is_empty(), "{left:?}");
}
