//! A tool call starts as soon as its item is done, while the response still streams.

use std::sync::Arc;

use arbor_model::{HttpProviderConfig, ProviderKind, build_provider};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentStatus, Event};
use arbor_tests::mock_http::{MockServer, Output, Part, Reply, responses_events};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_starts_before_the_stream_ends() {
    let home = tempfile::TempDir::new().expect("home");
    let work = tempfile::TempDir::new().expect("work");
    let marker = work.path().join("early_marker");
    let held = marker.clone();
    let server = MockServer::start(move |request| {
        let first = request.body["input"]
            .as_array()
            .is_some_and(|items| items.len() == 1);
        if !first {
            return Reply::sse(responses_events(&[Output::text("done")]));
        }
        let events = responses_events(&[Output::call(
            "call_1",
            "exec_command",
            &json!({"cmd": "touch early_marker"}),
        )]);
        let completed = events
            .iter()
            .position(|e| e.contains("response.completed"))
            .expect("a completed event");
        let mut reply = Reply::sse(events.clone());
        // The stream holds until the call has run: only an early start can get it going.
        reply.body.insert(completed, Part::UntilFile(held.clone()));
        reply
    })
    .await;
    let mut http = HttpProviderConfig::new(server.base_url());
    http.api_key = Some("test-key".into());
    let model = build_provider(ProviderKind::OpenAi, http).expect("provider");
    let mut config = RunConfig::new(home.path().to_path_buf(), work.path().to_path_buf());
    config.model = "m".into();
    let orch = Orchestrator::new(config, Arc::clone(&model))
        .await
        .expect("session");
    let mut events = orch.subscribe();
    orch.start("touch the marker").await.expect("start");
    orch.wait_quiescent().await;
    assert_eq!(
        orch.root_status().await,
        AgentStatus::Completed(Some("done".into()))
    );
    assert!(marker.exists());
    let mut order = Vec::new();
    while let Ok(line) = events.try_recv() {
        match line.event {
            Event::ToolCall { name, .. } => order.push(format!("call {name}")),
            Event::Usage { .. } => order.push("usage".to_string()),
            _ => {}
        }
    }
    assert_eq!(
        order[..2],
        ["call exec_command".to_string(), "usage".to_string()],
        "{order:?}"
    );
    orch.shutdown("done").await;
}
