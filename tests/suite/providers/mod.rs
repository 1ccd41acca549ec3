//! The HTTP providers (`openai`: Responses, `chat`: Chat Completions, `anthropic`: Messages)
//! against local mock servers: stream framing, tool calls, retries, errors, cancellation, key
//! hygiene, a full multi-agent run through the mock Responses server, replays of exchanges
//! recorded with a real llama.cpp server, output limits, the Messages API's own rules
//! (`anthropic`), named providers per agent and fallbacks (`routing`); one module each, with
//! the helpers they share here.

mod anthropic;
mod errors;
mod limits;
mod llama;
mod multi_agent;
mod retry;
mod routing;
mod stream;

use std::time::Duration;

use arbor_model::{
    AgentIdentity, HttpProviderConfig, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ProviderKind, RetryPolicy, build_provider,
};
use arbor_orchestrator::{Orchestrator, RunConfig};
use arbor_protocol::{AgentPath, ApprovalPolicy, Event, ResponseItem, ThreadId, ToolSpec, Usage};
use arbor_tests::mock_http::{
    MockServer, Output, USAGE, chat_events, messages_events, responses_events, signature_of,
};
use serde_json::json;
use tokio::sync::mpsc;

const KEY: &str = "sk-test-SECRET-7f3a9c1e5b";
const KEY_ENV: &str = "ARBOR_TEST_API_KEY";
const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenAi,
    ProviderKind::Chat,
    ProviderKind::Anthropic,
];

pub(crate) fn config(server: &MockServer) -> HttpProviderConfig {
    HttpProviderConfig {
        base_url: server.base_url(),
        api_key: Some(KEY.to_string()),
        api_key_env: KEY_ENV.to_string(),
        request_timeout: Duration::from_secs(20),
        extra_headers: vec![("x-arbor-test".to_string(), "providers".to_string())],
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
    }
}

fn request(input: Vec<ResponseItem>) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::root(),
            nickname: None,
            role: "default".to_string(),
        },
        provider: None,
        model: "mock-model".to_string(),
        reasoning_effort: None,
        instructions: "you are a test".into(),
        input: input.into(),
        tools: std::sync::Arc::new(vec![ToolSpec {
            name: "list_agents".to_string(),
            description: "List the agents.".to_string(),
            parameters: json!({"type": "object", "properties": {}}),
        }]),
        parallel_tool_calls: true,
        max_output_tokens: None,
    }
}

fn user(text: &str) -> ResponseItem {
    ResponseItem::Message {
        role: "user".to_string(),
        content: text.to_string(),
    }
}

/// The events of a stream answering with `outputs`, in `kind`'s wire format.
fn events(kind: ProviderKind, outputs: &[Output]) -> Vec<String> {
    match kind {
        ProviderKind::OpenAi => responses_events(outputs),
        ProviderKind::Chat => chat_events(outputs),
        ProviderKind::Anthropic => messages_events(outputs),
    }
}

fn stream_text(kind: ProviderKind, outputs: &[Output]) -> String {
    events(kind, outputs).concat()
}

/// The items the provider should return for `outputs` (reasoning as the Messages API's).
fn items(outputs: &[Output]) -> Vec<ResponseItem> {
    outputs
        .iter()
        .map(|output| match output {
            Output::Text(text) => ResponseItem::Message {
                role: "assistant".to_string(),
                content: text.clone(),
            },
            Output::Call(call_id, name, arguments) => ResponseItem::FunctionCall {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
            Output::Thinking(text) => ResponseItem::Reasoning {
                summary: vec![text.clone()],
                encrypted_content: None,
                thinking: Some(Box::new(arbor_protocol::Thinking::Thinking {
                    signature: signature_of(text),
                })),
            },
        })
        .collect()
}

fn usage() -> Option<Usage> {
    let (input_tokens, cached_input_tokens, output_tokens) = USAGE;
    Some(Usage {
        input_tokens,
        cached_input_tokens,
        output_tokens,
        ..Usage::default()
    })
}

/// Runs one request against `server` and collects the events the provider sent.
async fn respond(
    kind: ProviderKind,
    config: HttpProviderConfig,
) -> (Result<ModelResponse, ModelError>, Vec<ModelEvent>) {
    let provider = build_provider(kind, config).expect("provider");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider.respond(&request(vec![user("hi")]), &tx).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (result, events)
}

fn retries(events: &[ModelEvent]) -> Vec<(String, u64)> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::Retrying {
                reason,
                retry_in_ms,
            } => Some((reason.clone(), *retry_in_ms)),
            ModelEvent::ItemDone(_) | ModelEvent::Fallback(_) => None,
        })
        .collect()
}

fn endpoint(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "/v1/responses",
        ProviderKind::Chat => "/v1/chat/completions",
        ProviderKind::Anthropic => "/v1/messages",
    }
}

/// The header that carries the key, and its value.
fn key_header(kind: ProviderKind) -> (&'static str, String) {
    match kind {
        ProviderKind::OpenAi | ProviderKind::Chat => ("authorization", format!("Bearer {KEY}")),
        ProviderKind::Anthropic => ("x-api-key", KEY.to_string()),
    }
}

fn tool_calls() -> Vec<Output> {
    vec![
        Output::text("Spawning both."),
        Output::call(
            "call_1",
            "spawn_agent",
            &json!({"task_name": "worker_a", "message": "rename foo to bar in every file of src/"}),
        ),
        Output::call(
            "call_2",
            "exec_command",
            &json!({"cmd": "grep -rn 'foo' src/ | head -n 50", "timeout_ms": 10000}),
        ),
        Output::call("call_3", "list_agents", &json!({})),
    ]
}

/// A session whose root ran on the provider of `kind` against `server` until quiescent.
struct Run {
    orch: Orchestrator,
    /// Every event of the run, in order.
    events: Vec<Event>,
    cwd: tempfile::TempDir,
    _home: tempfile::TempDir,
}

impl Run {
    /// Starts a session in temporary dirs (`setup` fills the workspace, `configure` adjusts the
    /// run), gives the root `prompt` and waits until the tree is quiescent.
    async fn new(
        kind: ProviderKind,
        server: &MockServer,
        setup: impl FnOnce(&std::path::Path),
        configure: impl FnOnce(&mut RunConfig),
        prompt: &str,
    ) -> Self {
        let model = build_provider(kind, config(server)).expect("provider");
        let home = tempfile::TempDir::new().expect("home");
        let cwd = tempfile::TempDir::new().expect("cwd");
        setup(cwd.path());
        let mut run = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
        run.model = "mock-model".to_string();
        run.approval_policy = ApprovalPolicy::Never;
        configure(&mut run);
        let orch = Orchestrator::new(run, model).await.expect("session");
        let mut receiver = orch.subscribe();
        orch.start(prompt).await.expect("start");
        orch.wait_quiescent().await;
        let mut events = Vec::new();
        while let Ok(line) = receiver.try_recv() {
            events.push(line.event);
        }
        Self {
            orch,
            events,
            cwd,
            _home: home,
        }
    }

    /// The `(call_id, name)` of every `tool.call` event.
    fn tool_calls(&self) -> Vec<(String, String)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::ToolCall { call_id, name, .. } => Some((call_id.clone(), name.clone())),
                _ => None,
            })
            .collect()
    }

    /// The output of every `tool.result` event.
    fn tool_outputs(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::ToolResult { output, .. } => Some(output.clone()),
                _ => None,
            })
            .collect()
    }

    /// The event types of the run, in order.
    fn types(&self) -> Vec<&'static str> {
        self.events.iter().map(Event::type_name).collect()
    }
}
