//! Orchestration overhead per model response through the OpenAI Responses provider against a
//! local mock server answering at once: `/root` makes N tool calls one response at a time,
//! then answers. Every response is a real HTTP request with a streamed body.

use std::sync::Arc;
use std::time::Instant;

use arbor_model::{HttpProviderConfig, ProviderKind, build_provider};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::AgentStatus;
use arbor_tests::mock_http::{MockServer, Output, Reply, responses_events};
use serde_json::json;

use crate::{bench_dir, report};

/// Runs the workload with `responses` model responses.
pub fn run(responses: usize) -> Result<(), String> {
    let runtime = arbor_orchestrator::session_runtime().map_err(|err| err.to_string())?;
    runtime.block_on(async move {
        let server = MockServer::start(move |request| {
            let outputs = request.body["input"].as_array().map_or(0, |items| {
                items
                    .iter()
                    .filter(|i| i["type"] == "function_call_output")
                    .count()
            });
            if outputs + 1 >= responses {
                Reply::sse(responses_events(&[Output::text("done")]))
            } else {
                let id = format!("call_{outputs}");
                Reply::sse(responses_events(&[Output::call(
                    &id,
                    "list_agents",
                    &json!({}),
                )]))
            }
        })
        .await;
        let dir = bench_dir()?;
        let mut http = HttpProviderConfig::new(server.base_url());
        http.api_key = Some("bench".into());
        let model = build_provider(ProviderKind::OpenAi, http).map_err(|err| err.to_string())?;
        let mut config = RunConfig::new(dir.path().join("home"), dir.path().to_path_buf());
        config.model = "bench-model".into();
        config.max_turn_responses = responses + 1;
        let orch = Orchestrator::new(config, Arc::clone(&model))
            .await
            .map_err(|err| err.to_string())?;
        let started = Instant::now();
        orch.start("call list_agents repeatedly")
            .await
            .map_err(|err| err.to_string())?;
        orch.wait_quiescent().await;
        let wall = started.elapsed().as_secs_f64();
        let status = orch.root_status().await;
        orch.shutdown("done").await;
        if status != AgentStatus::Completed(Some("done".into())) {
            return Err(format!("http overhead run ended as {status}"));
        }
        report(
            json!({"bench": "http_response_overhead", "responses": responses,
            "wall_s": wall, "ms_per_response": wall * 1000.0 / responses as f64,
            "requests_seen": server.requests().len()}),
        );
        Ok(())
    })
}
