//! Output limits: `max_output_tokens` in the request body of every API, and responses cut at
//! the limit (`finish_reason: length`, `response.incomplete`, `stop_reason: max_tokens`):
//! their complete calls run, a call cut mid-way does not, and the model is told.

use arbor_model::ProviderKind;
use arbor_orchestrator::config::RoleModel;
use arbor_protocol::{AgentStatus, Event};
use arbor_tests::mock_http::{
    MockServer, Output, Reply, chat_events_cut, messages_events_cut, responses_events_cut,
};
use serde_json::{Value, json};

use super::{KINDS, Run, events};

fn cut(kind: ProviderKind, outputs: &[Output]) -> Reply {
    Reply::sse(match kind {
        ProviderKind::OpenAi => responses_events_cut(outputs),
        ProviderKind::Chat => chat_events_cut(outputs),
        ProviderKind::Anthropic => messages_events_cut(outputs),
    })
}

/// The text of the newest user message of a request of any API.
fn last_user_text(kind: ProviderKind, body: &Value) -> String {
    let (list, text) = match kind {
        ProviderKind::OpenAi => ("input", "/content/0/text"),
        ProviderKind::Chat => ("messages", "/content"),
        // Tool results come first in a user message; the text after them.
        ProviderKind::Anthropic => {
            let last = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .rfind(|m| m["role"] == "user");
            return last
                .and_then(|m| m["content"].as_array())
                .and_then(|blocks| blocks.iter().rfind(|b| b["type"] == "text"))
                .and_then(|b| b["text"].as_str())
                .unwrap_or_default()
                .to_string();
        }
    };
    body[list]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|item| item["role"] == "user")
        .and_then(|item| item.pointer(text))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_output_tokens_reaches_the_request_body_of_every_api() {
    for kind in KINDS {
        let server =
            MockServer::start(move |_| Reply::sse(events(kind, &[Output::text("ok")]))).await;
        let global = Run::new(
            kind,
            &server,
            |_| {},
            |c| c.max_output_tokens = Some(123),
            "hi",
        )
        .await;
        assert_eq!(global.orch.root_last_message().await.as_deref(), Some("ok"));
        // The root's role (`default`) has a limit of its own: it wins over the global one.
        let by_role = |c: &mut arbor_orchestrator::RunConfig| {
            c.max_output_tokens = Some(123);
            c.role_models.insert(
                "default".into(),
                RoleModel {
                    max_output_tokens: Some(55),
                    ..RoleModel::default()
                },
            );
        };
        Run::new(kind, &server, |_| {}, by_role, "hi").await;
        let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
        assert_eq!(bodies.len(), 2, "{kind}");
        let field = match kind {
            ProviderKind::OpenAi => "max_output_tokens",
            ProviderKind::Chat | ProviderKind::Anthropic => "max_tokens",
        };
        assert_eq!(
            (&bodies[0][field], &bodies[1][field]),
            (&json!(123), &json!(55)),
            "{kind}"
        );
        assert!(bodies[0].get("max_completion_tokens").is_none(), "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_length_finish_with_a_complete_call_runs_the_call() {
    for kind in KINDS {
        let server = MockServer::start(move |request| {
            let answered = request.body.to_string().contains("did not run");
            if answered {
                return Reply::sse(events(kind, &[Output::text("done")]));
            }
            cut(
                kind,
                &[
                    Output::text("writing both files"),
                    Output::call(
                        "call_whole",
                        "exec_command",
                        &json!({"cmd": "echo ran > ran.txt"}),
                    ),
                    Output::Call(
                        "call_cut".into(),
                        "exec_command".into(),
                        "{\"cmd\": \"echo never > nev".into(),
                    ),
                ],
            )
        })
        .await;
        let run = Run::new(
            kind,
            &server,
            |_| {},
            |c| c.max_output_tokens = Some(64),
            "go",
        )
        .await;

        assert_eq!(
            run.orch.root_status().await,
            AgentStatus::Completed(Some("done".into())),
            "{kind}"
        );
        assert!(
            run.cwd.path().join("ran.txt").exists(),
            "{kind}: the complete call ran"
        );
        assert!(!run.cwd.path().join("never.txt").exists(), "{kind}");
        let outputs = run.tool_outputs();
        assert_eq!(outputs.len(), 2, "{kind}: {outputs:?}");
        assert!(
            outputs[1].starts_with("exec_command did not run"),
            "{kind}: {}",
            outputs[1]
        );
        // The text is announced before the calls that follow it.
        let types = run.types();
        let message = types.iter().position(|t| *t == "agent.message");
        let call = types.iter().position(|t| *t == "tool.call");
        assert!(
            matches!((message, call), (Some(m), Some(c)) if m < c),
            "{kind}: {types:?}"
        );
        // The next request keeps the cut text and tells the model what happened.
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        let note = last_user_text(kind, &requests[1].body);
        assert!(
            note.starts_with("Your last response was cut at the output limit of 64 tokens (max_output_tokens). Its complete tool calls ran"),
            "{kind}: {note}"
        );
        assert!(
            requests[1].body.to_string().contains("writing both files"),
            "{kind}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_cut_again_and_again_without_a_call_is_stopped() {
    for kind in KINDS {
        let server =
            MockServer::start(move |_| cut(kind, &[Output::text("and so on and so on")])).await;
        let run = Run::new(
            kind,
            &server,
            |_| {},
            |c| c.max_output_tokens = Some(8),
            "ramble",
        )
        .await;
        assert_eq!(
            run.orch.root_status().await,
            AgentStatus::Errored(
                "the model's response was cut at the output limit of 8 tokens (max_output_tokens) \
                 3 times in a row; raise max_output_tokens or ask for shorter answers"
                    .into()
            ),
            "{kind}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{kind}");
        let note = last_user_text(kind, &requests[1].body);
        assert!(
            note.contains("its text ends where it was cut"),
            "{kind}: {note}"
        );
        let messages = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::AgentMessage { .. }))
            .count();
        assert_eq!(messages, 3, "{kind}");
    }
}
