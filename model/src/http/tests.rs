//! Provider configuration: redaction, validation, the missing-key error, error bodies.

use super::*;

#[test]
fn debug_never_shows_the_key_or_header_values() {
    let mut config = HttpProviderConfig::new("http://localhost:8000/v1");
    config.api_key = Some("sk-secret-123".to_string());
    config.extra_headers = vec![("x-api-key".to_string(), "hdr-secret-456".to_string())];
    let text = format!("{config:?}");
    assert!(
        !text.contains("sk-secret-123") && !text.contains("hdr-secret-456"),
        "{text}"
    );
    assert!(
        text.contains("[redacted]") && text.contains("x-api-key"),
        "{text}"
    );
    let client = HttpClient::new(config, ProviderKind::OpenAi).expect("client");
    let text = format!("{client:?}");
    assert!(
        !text.contains("sk-secret-123") && !text.contains("hdr-secret-456"),
        "{text}"
    );
}

#[test]
fn bad_urls_and_headers_are_configuration_errors() {
    let build =
        |config: HttpProviderConfig| HttpClient::new(config, ProviderKind::OpenAi).map(|_| ());
    assert!(matches!(
        build(HttpProviderConfig::new("localhost:8000")),
        Err(ModelError::Config(m)) if m.contains("http://")
    ));
    assert!(matches!(
        build(HttpProviderConfig::new("not a url")),
        Err(ModelError::Config(m)) if m.contains("not a valid url")
    ));
    let mut config = HttpProviderConfig::new("http://x/v1/");
    config.extra_headers = vec![("bad header".into(), "v".into())];
    assert_eq!(
        build(config),
        Err(ModelError::Config(
            "invalid header name `bad header`".into()
        ))
    );
    let mut config = HttpProviderConfig::new("http://x/v1");
    config.api_key = Some("line\nbreak".into());
    let error = build(config).expect_err("bad key");
    assert!(!error.to_string().contains("break"), "{error}");
}

#[test]
fn a_missing_key_says_what_to_do() {
    let var = "ARBOR_TEST_SURELY_UNSET_KEY_VAR";
    assert_eq!(
        api_key_from_env(var).map_err(|e| e.to_string()),
        Err(format!(
            "model configuration: {var} is not set; export it or set api_key_env"
        ))
    );
}

#[test]
fn provider_kinds_parse() {
    assert_eq!("openai".parse::<ProviderKind>(), Ok(ProviderKind::OpenAi));
    assert_eq!(
        "responses".parse::<ProviderKind>(),
        Ok(ProviderKind::OpenAi)
    );
    assert_eq!("chat".parse::<ProviderKind>(), Ok(ProviderKind::Chat));
    assert_eq!(
        "anthropic".parse::<ProviderKind>(),
        Ok(ProviderKind::Anthropic)
    );
    assert_eq!(
        "gemini".parse::<ProviderKind>().map_err(|e| e.to_string()),
        Err("model configuration: unknown provider kind `gemini`, expected openai, chat or anthropic".into())
    );
}

#[test]
fn error_messages_come_from_the_body() {
    let message = |body: &str| error_message(body.as_bytes(), Some("Bad Request"));
    assert_eq!(
        message(r#"{"error": {"message": "bad model", "type": "invalid_request_error"}}"#),
        "bad model"
    );
    assert_eq!(message(r#"{"error": "plain"}"#), "plain");
    assert_eq!(message(r#"{"detail": "fastapi style"}"#), "fastapi style");
    assert_eq!(message("  upstream down \n"), "upstream down");
    assert_eq!(message(""), "bad request");
    let long = "x".repeat(10_000);
    assert!(message(&long).len() < MAX_ERROR_MESSAGE_BYTES + 40);
}

#[test]
fn redaction_scrubs_every_copy() {
    assert_eq!(
        redact("key sk-1 and sk-1 again", Some("sk-1")),
        "key [redacted] and [redacted] again"
    );
    assert_eq!(redact("nothing", Some("")), "nothing");
    assert_eq!(redact("nothing", None), "nothing");
}

#[test]
fn the_messages_api_gets_its_key_in_x_api_key_only() {
    let mut config = HttpProviderConfig::new("http://x/v1");
    config.api_key = Some("sk-ant-secret".into());
    let client = HttpClient::new(config, ProviderKind::Anthropic).expect("client");
    let key = client.headers.get("x-api-key").expect("the key header");
    assert!(key.is_sensitive());
    assert_eq!(key, "sk-ant-secret");
    assert!(client.headers.get(header::AUTHORIZATION).is_none());
    assert_eq!(client.headers["anthropic-version"], ANTHROPIC_VERSION);
    let mut config = HttpProviderConfig::new("http://x/v1");
    config.api_key = Some("sk-secret".into());
    let client = HttpClient::new(config, ProviderKind::Chat).expect("client");
    assert!(client.headers.get("x-api-key").is_none());
    assert!(client.headers.get("anthropic-version").is_none());
    assert!(client.headers[header::AUTHORIZATION].is_sensitive());
}
