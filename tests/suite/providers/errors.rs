//! Errors not retried (a 400, JSON for a stream) and key hygiene in errors and events.

use arbor_model::ModelError;
use arbor_tests::mock_http::{MockServer, Reply};
use serde_json::json;

use super::{KEY, KEY_ENV, KINDS, config, respond, retries};

#[tokio::test]
async fn a_400_surfaces_the_server_message_without_retrying() {
    for kind in KINDS {
        let bad = Reply::json(
            400,
            &json!({"error": {"message": "Invalid value for 'model': 'nope'.", "type": "invalid_request_error", "param": "model"}}),
        );
        let server = MockServer::with_replies(vec![bad]).await;
        let (result, events) = respond(kind, config(&server)).await;
        assert_eq!(
            result,
            Err(ModelError::Http {
                status: 400,
                message: "Invalid value for 'model': 'nope'.".to_string()
            }),
            "{kind}"
        );
        assert!(retries(&events).is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_json_answer_to_a_streamed_request_is_not_retried() {
    for kind in KINDS {
        let json = Reply::json(
            200,
            &json!({"error": {"message": "streaming is not supported"}}),
        );
        let server = MockServer::with_replies(vec![json]).await;
        let (result, _) = respond(kind, config(&server)).await;
        assert_eq!(
            result,
            Err(ModelError::Failed(
                "the server answered with json, not an event stream: streaming is not supported"
                    .to_string()
            )),
            "{kind}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_rejected_key_names_the_variable_and_never_the_key() {
    for kind in KINDS {
        let rejected = Reply::json(
            401,
            &json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "code": "invalid_api_key"}}),
        );
        let server = MockServer::with_replies(vec![rejected]).await;
        let (result, _) = respond(kind, config(&server)).await;
        let error = result.expect_err("401");
        let text = format!("{error} {error:?}");
        assert!(
            matches!(error, ModelError::Http { status: 401, .. }),
            "{text}"
        );
        assert!(text.contains("api key was rejected"), "{text}");
        assert!(text.contains(KEY_ENV), "{text}");
        assert!(!text.contains(KEY), "{text}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn the_key_never_shows_in_debug_errors_or_retry_events() {
    for kind in KINDS {
        // A server that echoes the key in every kind of error.
        let echo = json!({"error": {"message": format!("bad key {KEY}")}});
        let replies = vec![
            Reply::json(500, &echo),
            Reply::sse([format!(
                "data: {{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"{KEY}\"}}\n\n"
            )]),
            Reply::json(403, &echo),
        ];
        let server = MockServer::with_replies(replies).await;
        let config = config(&server);
        let (result, events) = respond(kind, config.clone()).await;
        let text = format!("{config:?} {result:?} {events:?}");
        assert!(
            matches!(result, Err(ModelError::Http { status: 403, .. })),
            "{text}"
        );
        assert!(!text.contains(KEY), "{kind}: {text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
