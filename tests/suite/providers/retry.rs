//! Retries: a 429 with `retry-after`, a 500, cut or short streams, giving up, refused connections.

use arbor_model::ModelError;
use arbor_tests::mock_http::{MockServer, Output, Reply, split_every};
use serde_json::json;

use super::{KINDS, config, events, items, respond, retries, stream_text, tool_calls};

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    let outputs = [Output::text("after the wait")];
    for kind in KINDS {
        let limited = Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "1");
        let ok = Reply::sse(split_every(&stream_text(kind, &outputs), 64));
        let server = MockServer::with_replies(vec![limited, ok]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
        assert_eq!(
            retries(&events),
            [(
                "http 429: Rate limit reached (attempt 1 of 3)".to_string(),
                1000
            )],
            "{kind}"
        );
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_500_then_success() {
    let outputs = [Output::text("recovered")];
    for kind in KINDS {
        let failing = Reply::json(
            500,
            &json!({"error": {"message": "The server had an error"}}),
        );
        let ok = Reply::sse([stream_text(kind, &outputs)]);
        let server = MockServer::with_replies(vec![failing, ok]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{kind}: {retries:?}");
        assert_eq!(
            retries[0].0,
            "http 500: The server had an error (attempt 1 of 3)"
        );
        assert!(retries[0].1 <= 20, "backoff within max_delay: {retries:?}");
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_retried_from_the_start() {
    let outputs = tool_calls();
    for kind in KINDS {
        let all = events(kind, &outputs);
        let text = all.concat();
        // Cut in the middle of an event, then the connection drops.
        let dropped = Reply::sse(split_every(&text[..text.len() / 2], 50)).then_drop();
        // A body that ends cleanly, but early, is as incomplete as a dropped one.
        let ended = Reply::sse(all[..all.len() / 2].to_vec());
        let ok = Reply::sse(split_every(&text, 50));
        let server = MockServer::with_replies(vec![dropped, ended, ok]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result.map(|r| r.items), Ok(items(&outputs)), "{kind}");
        let reasons: Vec<String> = retries(&events).into_iter().map(|r| r.0).collect();
        assert_eq!(reasons.len(), 2, "{kind}: {reasons:?}");
        assert!(
            reasons[0].starts_with("the stream broke"),
            "{kind}: {reasons:?}"
        );
        assert!(
            reasons[1].starts_with("the stream ended before"),
            "{kind}: {reasons:?}"
        );
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn running_out_of_attempts() {
    for kind in KINDS {
        let limited = || Reply::json(429, &json!({"error": {"message": "slow down"}}));
        let server = MockServer::with_replies(vec![limited(), limited(), limited()]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(result, Err(ModelError::RateLimited), "{kind}");
        assert_eq!((retries(&events).len(), server.requests().len()), (2, 3));

        // Answers that differ each time are retried until the attempts run out.
        let down = |n: u32| {
            Reply::json(
                503,
                &json!({"error": {"message": format!("overloaded ({n})")}}),
            )
        };
        let server = MockServer::with_replies(vec![down(1), down(2), down(3)]).await;
        let (result, _) = respond(kind, config(&server)).await;
        assert_eq!(
            result,
            Err(ModelError::Transport(
                "http 503: overloaded (3) (gave up after 3 attempts)".to_string()
            )),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn client_errors_are_not_retried_but_408_409_and_429_are() {
    for kind in KINDS {
        for status in [400, 403, 404, 413, 422] {
            let refused = Reply::json(status, &json!({"error": {"message": "no"}}));
            let server = MockServer::with_replies(vec![refused]).await;
            let (result, events) = respond(kind, config(&server)).await;
            assert_eq!(
                result,
                Err(ModelError::Http {
                    status,
                    message: "no".to_string()
                }),
                "{kind} {status}"
            );
            assert_eq!((retries(&events).len(), server.requests().len()), (0, 1));
        }
        let outputs = [Output::text("later")];
        for status in [408, 409, 429] {
            let busy = Reply::json(status, &json!({"error": {"message": "busy"}}));
            let ok = Reply::sse([stream_text(kind, &outputs)]);
            let server = MockServer::with_replies(vec![busy, ok]).await;
            let (result, _) = respond(kind, config(&server)).await;
            assert_eq!(
                result.map(|r| r.items),
                Ok(items(&outputs)),
                "{kind} {status}"
            );
            assert_eq!(server.requests().len(), 2, "{kind} {status}");
        }
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let server = MockServer::with_replies(Vec::new()).await;
    let mut config = config(&server);
    drop(server);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    config.base_url = format!("http://127.0.0.1:{port}/v1");
    config.retry.max_attempts = 2;
    for kind in KINDS {
        let (result, events) = respond(kind, config.clone()).await;
        assert_eq!(retries(&events).len(), 1);
        match result {
            Err(ModelError::Transport(reason)) => {
                assert!(reason.contains("gave up after 2 attempts"), "{reason}");
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
}
