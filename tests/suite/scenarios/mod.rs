//! Multi-agent scenarios on the scripted model, through the `Orchestrator`; one module per
//! area, with the helpers they share here.

mod control;
mod determinism;
mod mail;
mod project_docs;
mod settings;
mod spawning;

use arbor_protocol::AgentStatus;
use serde_json::Value;

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
