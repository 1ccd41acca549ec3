//! Compaction against the mock servers of the HTTP providers: the compaction request and the
//! request after it are exactly as `docs/compaction.md` says.

use arbor_model::{ProviderKind, build_provider};
use arbor_orchestrator::{COMPACTION_PROMPT, Orchestrator, RunConfig, SUMMARY_HEADER};
use arbor_protocol::{AgentStatus, ApprovalPolicy};
use arbor_tests::mock_http::{
    MockServer, Output, Recorded, Reply, chat_events, messages_events, responses_events,
};
use serde_json::{Value, json};

const SUMMARY: &str = "SUMMARY: listed the agents; nothing else is open";

/// The messages (Chat) or input items (Responses) of a request body.
fn inputs(kind: ProviderKind, body: &Value) -> Vec<Value> {
    let key = match kind {
        ProviderKind::OpenAi => "input",
        ProviderKind::Chat | ProviderKind::Anthropic => "messages",
    };
    body[key].as_array().cloned().unwrap_or_default()
}

/// The text of a message item in either format.
fn text_of(item: &Value) -> String {
    match &item["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// The mock model: a call reported at 45 000 input tokens, then (the compaction request,
/// known by its last input) the summary, then the final answer.
fn reply(kind: ProviderKind, request: &Recorded) -> Reply {
    let items = inputs(kind, &request.body);
    let last = items.last().map(text_of).unwrap_or_default();
    let first_user = items
        .iter()
        .find(|item| item["role"] == "user")
        .map(text_of)
        .unwrap_or_default();
    let (outputs, big) = if last == COMPACTION_PROMPT {
        (vec![Output::text(SUMMARY)], false)
    } else if first_user.starts_with(SUMMARY_HEADER) {
        (vec![Output::text("finished")], false)
    } else {
        (
            vec![Output::call("call_1", "list_agents", &json!({}))],
            true,
        )
    };
    let mut events = match kind {
        ProviderKind::OpenAi => responses_events(&outputs),
        ProviderKind::Chat => chat_events(&outputs),
        ProviderKind::Anthropic => messages_events(&outputs),
    };
    if big {
        // The provider says the history is large: the next request would pass 40 000.
        for event in &mut events {
            *event = event
                .replace(r#""input_tokens":100"#, r#""input_tokens":45000"#)
                .replace(r#""prompt_tokens":100"#, r#""prompt_tokens":45000"#)
                .replace(r#""input_tokens":60"#, r#""input_tokens":45000"#);
        }
    }
    Reply::sse(events.into_iter().map(String::into_bytes))
}

async fn run(kind: ProviderKind) -> Vec<Recorded> {
    let server = MockServer::start(move |request| reply(kind, request)).await;
    let model = build_provider(kind, crate::providers::config(&server)).expect("provider");
    let home = tempfile::TempDir::new().expect("home");
    let cwd = tempfile::TempDir::new().expect("cwd");
    let mut config = RunConfig::new(home.path().to_path_buf(), cwd.path().to_path_buf());
    config.model = "mock-model".into();
    config.approval_policy = ApprovalPolicy::Never;
    config.model_context_window = Some(50_000);
    let orch = Orchestrator::new(config, model).await.expect("session");
    orch.start("list the agents").await.expect("start");
    orch.wait_quiescent().await;
    assert_eq!(
        orch.root_status().await,
        AgentStatus::Completed(Some("finished".into()))
    );
    orch.shutdown("done").await;
    server.requests()
}

fn check(kind: ProviderKind, requests: &[Recorded]) {
    assert_eq!(
        requests.len(),
        3,
        "the turn, the compaction, the turn again"
    );
    let (first, compaction, after) = (&requests[0].body, &requests[1].body, &requests[2].body);
    let (first_in, compaction_in, after_in) = (
        inputs(kind, first),
        inputs(kind, compaction),
        inputs(kind, after),
    );

    // The compaction request: the same model and instructions, every item the turn has (its
    // input, the call and its output), then the prompt as a user message; no tools.
    assert_eq!(compaction["model"], "mock-model");
    assert_eq!(compaction["stream"], true);
    assert!(compaction.get("tools").is_none(), "{compaction}");
    assert!(compaction.get("tool_choice").is_none());
    assert!(compaction.get("parallel_tool_calls").is_none());
    assert_eq!(&compaction_in[..first_in.len()], &first_in[..]);
    let added = &compaction_in[first_in.len()..];
    if kind == ProviderKind::Anthropic {
        check_messages(first, compaction, after, added);
        return;
    }
    assert_eq!(added.len(), 3, "{added:?}");
    match kind {
        ProviderKind::OpenAi => {
            assert_eq!(compaction["instructions"], first["instructions"]);
            assert_eq!(added[0]["type"], "function_call");
            assert_eq!(added[0]["call_id"], "call_1");
            assert_eq!(added[1]["type"], "function_call_output");
            assert_eq!(added[1]["call_id"], "call_1");
        }
        ProviderKind::Chat | ProviderKind::Anthropic => {
            assert_eq!(added[0]["role"], "assistant");
            assert_eq!(added[0]["tool_calls"][0]["id"], "call_1");
            assert_eq!(added[1]["role"], "tool");
            assert_eq!(added[1]["tool_call_id"], "call_1");
        }
    }
    assert_eq!(added[2]["role"], "user");
    assert_eq!(text_of(&added[2]), COMPACTION_PROMPT);

    // The request after it: the instructions, the summary, then the recent user input; the
    // tools again.
    assert_eq!(after["tools"], first["tools"]);
    let user: Vec<String> = after_in
        .iter()
        .filter(|item| item["role"] == "user")
        .map(text_of)
        .collect();
    assert_eq!(
        user,
        [
            format!("{SUMMARY_HEADER}{SUMMARY}"),
            "list the agents".to_string()
        ]
    );
    match kind {
        ProviderKind::OpenAi => {
            assert_eq!(after["instructions"], first["instructions"]);
            assert_eq!(after_in.len(), 2, "{after_in:?}");
        }
        ProviderKind::Chat | ProviderKind::Anthropic => {
            // The system message, then the two user messages.
            assert_eq!(after_in.len(), 3, "{after_in:?}");
            assert_eq!(after_in[0], first_in[0]);
            assert_eq!(after_in[0]["role"], "system");
        }
    }
}

/// [`check`] for the Messages API: the call and its output are one message each, and the
/// prompt joins the output's message (a user message holds results first, then text).
fn check_messages(first: &Value, compaction: &Value, after: &Value, added: &[Value]) {
    assert_eq!(compaction["system"], first["system"]);
    assert_eq!(added.len(), 2, "{added:?}");
    assert_eq!(added[0]["role"], "assistant");
    assert_eq!(added[0]["content"][0]["type"], "tool_use");
    assert_eq!(added[0]["content"][0]["id"], "call_1");
    assert_eq!(added[1]["role"], "user");
    assert_eq!(added[1]["content"][0]["type"], "tool_result");
    assert_eq!(added[1]["content"][0]["tool_use_id"], "call_1");
    assert_eq!(added[1]["content"][1]["text"], COMPACTION_PROMPT);
    assert_eq!(after["tools"], first["tools"]);
    assert_eq!(after["system"], first["system"]);
    let after_in = inputs(ProviderKind::Anthropic, after);
    assert_eq!(after_in.len(), 1, "{after_in:?}");
    let texts: Vec<&str> = after_in[0]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            format!("{SUMMARY_HEADER}{SUMMARY}").as_str(),
            "list the agents"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_api_compaction_request_and_the_request_after_it() {
    let requests = run(ProviderKind::Anthropic).await;
    check(ProviderKind::Anthropic, &requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_compaction_request_and_the_request_after_it() {
    let requests = run(ProviderKind::OpenAi).await;
    check(ProviderKind::OpenAi, &requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_compaction_request_and_the_request_after_it() {
    let requests = run(ProviderKind::Chat).await;
    check(ProviderKind::Chat, &requests);
}
