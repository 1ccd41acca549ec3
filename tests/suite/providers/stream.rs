//! Stream framing, tool calls, skipped events, and an early tool call with cancellation.

use arbor_model::{ModelEvent, ProviderKind, build_provider};
use arbor_protocol::ResponseItem;
use arbor_tests::mock_http::{MockServer, Output, Reply, split_every};
use serde_json::json;
use tokio::sync::mpsc;

use super::{
    KINDS, config, endpoint, events, items, key_header, request, respond, stream_text, tool_calls,
    usage, user,
};

#[tokio::test]
async fn a_plain_text_answer_in_any_framing() {
    let outputs = [Output::text("Hello there, this is a streamed answer.")];
    for kind in KINDS {
        let text = stream_text(kind, &outputs);
        let framings = [
            vec![text.clone().into_bytes()],
            split_every(&text, 7),
            split_every(&text, 1),
        ];
        for chunks in framings {
            let reads = chunks.len();
            let server = MockServer::with_replies(vec![Reply::sse(chunks)]).await;
            let (result, events) = respond(kind, config(&server)).await;
            let response = result.unwrap_or_else(|e| panic!("{kind} in {reads} reads: {e}"));
            assert_eq!(response.items, items(&outputs), "{kind} in {reads} reads");
            assert_eq!(response.usage, usage(), "{kind}");
            assert_eq!(events, [ModelEvent::ItemDone(items(&outputs)[0].clone())]);
            let requests = server.requests();
            assert_eq!(requests.len(), 1);
            let sent = &requests[0];
            assert_eq!(
                (sent.method.as_str(), sent.path.as_str()),
                ("POST", endpoint(kind))
            );
            let (header, key) = key_header(kind);
            assert_eq!(sent.header(header), Some(key.as_str()), "{kind}");
            assert_eq!(sent.header("x-arbor-test"), Some("providers"));
            assert_eq!(sent.body["model"], "mock-model");
            assert_eq!(sent.body["stream"], true);
        }
    }
}

#[tokio::test]
async fn one_and_several_parallel_tool_calls_with_arguments_in_pieces() {
    let one = vec![Output::call(
        "call_9",
        "list_agents",
        &json!({"path_prefix": "/root"}),
    )];
    for kind in KINDS {
        for outputs in [one.clone(), tool_calls()] {
            let text = stream_text(kind, &outputs);
            let server = MockServer::with_replies(vec![Reply::sse(split_every(&text, 11))]).await;
            let (result, events) = respond(kind, config(&server)).await;
            let response = result.unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(response.items, items(&outputs), "{kind}");
            let done: Vec<ResponseItem> = events
                .into_iter()
                .filter_map(|e| match e {
                    ModelEvent::ItemDone(item) => Some(item),
                    ModelEvent::Retrying { .. } | ModelEvent::Fallback(_) => None,
                })
                .collect();
            assert_eq!(
                done,
                items(&outputs),
                "{kind}: every item reported once, in order"
            );
        }
    }
}

#[tokio::test]
async fn keep_alive_comments_and_unknown_events_are_skipped() {
    let outputs = tool_calls();
    for kind in KINDS {
        let unknown = match kind {
            ProviderKind::OpenAi => {
                "event: response.some_future_event\ndata: {\"type\":\"response.some_future_event\",\"x\":1}\n\n"
            }
            ProviderKind::Chat => "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            ProviderKind::Anthropic => {
                "event: some_future_event\ndata: {\"type\":\"some_future_event\",\"x\":1}\n\n"
            }
        };
        let mut text = String::from(": connected\r\n\r\n");
        for event in events(kind, &outputs) {
            text.push_str(&event);
            text.push_str(": keep-alive\n\n");
            text.push_str(unknown);
        }
        let server = MockServer::with_replies(vec![Reply::sse(split_every(&text, 13))]).await;
        let (result, _) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
    }
}

#[tokio::test]
async fn a_tool_call_is_reported_before_the_stream_ends_and_dropping_the_request_closes_it() {
    let outputs = [Output::call("call_early", "list_agents", &json!({}))];
    for kind in KINDS {
        // Everything up to (not including) the completion, then silence.
        let all = events(kind, &outputs);
        let keep = match kind {
            ProviderKind::OpenAi => all.len() - 1,
            // The chat call is done at its finish chunk; usage and [DONE] never come.
            ProviderKind::Chat => all.len() - 2,
            // The block is done at its stop; the message's delta and stop never come.
            ProviderKind::Anthropic => all.len() - 2,
        };
        let server =
            MockServer::with_replies(vec![Reply::sse(all[..keep].to_vec()).then_stall()]).await;
        let provider = build_provider(kind, config(&server)).expect("provider");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let request = request(vec![user("hi")]);
            provider.respond(&request, &tx).await
        });
        let first = rx.recv().await.expect("an event before the end");
        assert_eq!(
            first,
            ModelEvent::ItemDone(items(&outputs)[0].clone()),
            "{kind}"
        );
        assert!(
            !task.is_finished(),
            "{kind}: the response is still streaming"
        );
        task.abort();
        assert!(task.await.expect_err("aborted").is_cancelled());
        // The server sees the connection close: the interrupt reached the socket.
        server.wait_for_clients_to_leave(1).await;
    }
}
