//! The router: model references, routing by provider, fallbacks and their cooldown.

use std::collections::VecDeque;

use arbor_protocol::{AgentPath, Thinking, ThreadId, Usage};
use tokio::sync::mpsc;

use super::*;
use crate::{AgentIdentity, Finish};

/// A provider that answers with the results it is given, in order, and records each request's
/// model.
struct Fake {
    name: &'static str,
    answers: Mutex<VecDeque<Result<ModelResponse, ModelError>>>,
    asked: Mutex<Vec<String>>,
}

impl Fake {
    fn new(name: &'static str, answers: Vec<Result<ModelResponse, ModelError>>) -> Arc<Self> {
        Arc::new(Self {
            name,
            answers: Mutex::new(answers.into()),
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("lock").clone()
    }
}

impl ModelClient for Fake {
    fn provider(&self) -> &str {
        self.name
    }

    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        _events: &'a ModelEvents,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.asked.lock().expect("lock").push(request.model.clone());
        let answer = self
            .answers
            .lock()
            .expect("lock")
            .pop_front()
            .unwrap_or_else(|| Err(ModelError::Script("no answer left".into())));
        Box::pin(async move { answer })
    }
}

fn answer(text: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        items: vec![ResponseItem::Message {
            role: "assistant".into(),
            content: text.into(),
        }],
        usage: Some(Usage::default()),
        finish: Finish::Completed,
        served_by: None,
    })
}

fn overloaded() -> Result<ModelResponse, ModelError> {
    Err(ModelError::Transport(
        "http 529: Overloaded (gave up after 3 attempts)".into(),
    ))
}

fn reference(provider: &str, model: &str) -> ModelRef {
    ModelRef {
        provider: provider.into(),
        model: model.into(),
    }
}

fn request(role: &str, provider: Option<&str>, model: &str) -> ModelRequest {
    ModelRequest {
        agent: AgentIdentity {
            thread_id: ThreadId::new(),
            path: AgentPath::root(),
            nickname: None,
            role: role.into(),
        },
        provider: provider.map(str::to_string),
        model: model.into(),
        reasoning_effort: None,
        instructions: "".into(),
        input: Arc::new(vec![ResponseItem::Reasoning {
            summary: vec!["thought".into()],
            encrypted_content: None,
            thinking: Some(Box::new(Thinking::Thinking {
                signature: "sig".into(),
            })),
        }]),
        tools: Arc::new(Vec::new()),
        parallel_tool_calls: true,
        max_output_tokens: None,
    }
}

async fn ask(
    router: &Router,
    request: &ModelRequest,
) -> (Result<ModelResponse, ModelError>, Vec<ModelEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = router.respond(request, &tx).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (result, events)
}

fn two(claude: &Arc<Fake>, gpt: &Arc<Fake>) -> Router {
    Router::new("claude")
        .with_provider(
            "claude",
            Some(ProviderKind::Anthropic),
            Ok(claude.clone() as Arc<dyn ModelClient>),
        )
        .with_provider(
            "gpt",
            Some(ProviderKind::OpenAi),
            Ok(gpt.clone() as Arc<dyn ModelClient>),
        )
}

#[tokio::test]
async fn requests_go_to_the_provider_they_name() {
    let claude = Fake::new("anthropic", vec![answer("c")]);
    let gpt = Fake::new("openai", vec![answer("g")]);
    let router = two(&claude, &gpt);
    let (result, _) = ask(&router, &request("default", None, "opus")).await;
    let response = result.expect("answer");
    assert_eq!(
        response.served_by,
        Some(ServedBy {
            provider: "claude".into(),
            model: "opus".into()
        })
    );
    let (result, _) = ask(&router, &request("default", Some("gpt"), "gpt-5")).await;
    assert_eq!(
        result.expect("answer").served_by.expect("by").provider,
        "gpt"
    );
    assert_eq!(claude.asked(), ["opus"]);
    assert_eq!(gpt.asked(), ["gpt-5"]);
    let (result, _) = ask(&router, &request("default", Some("nope"), "m")).await;
    assert_eq!(
        result.map(|_| ()),
        Err(ModelError::Config(
            "unknown provider `nope`, expected one of claude, gpt".into()
        ))
    );
}

#[tokio::test]
async fn a_failing_model_falls_back_and_cools_down() {
    let claude = Fake::new("anthropic", vec![overloaded()]);
    let gpt = Fake::new("openai", vec![answer("one"), answer("two")]);
    let mut fallbacks = Fallbacks::default();
    fallbacks
        .roles
        .insert("explorer".into(), vec![reference("gpt", "gpt-5-mini")]);
    let router = two(&claude, &gpt).with_fallbacks(fallbacks);
    let (result, events) = ask(&router, &request("explorer", None, "opus")).await;
    assert_eq!(
        result.expect("answer").served_by.expect("by").model,
        "gpt-5-mini"
    );
    assert_eq!(
        events,
        [ModelEvent::Fallback(ModelFallback {
            from: "claude/opus".into(),
            to: "gpt/gpt-5-mini".into(),
            reason: "transport error: http 529: Overloaded (gave up after 3 attempts)".into(),
            note: Some(
                "1 reasoning item of the history left out: the openai API cannot take it".into()
            ),
        })]
    );
    // While it cools down, the failed model is not asked again, and the switch is reported.
    let (result, events) = ask(&router, &request("explorer", None, "opus")).await;
    assert!(result.is_ok());
    assert_eq!(claude.asked(), ["opus"]);
    assert!(matches!(&events[..], [ModelEvent::Fallback(f)]
        if f.reason.starts_with("it failed less than 60 s ago: transport error")));
    // A role without fallbacks takes the session's: none here, so the error stands.
    let claude = Fake::new("anthropic", vec![overloaded()]);
    let router = two(&claude, &gpt);
    let (result, events) = ask(&router, &request("default", None, "opus")).await;
    assert!(matches!(result, Err(ModelError::Transport(_))));
    assert!(events.is_empty());
}

#[tokio::test]
async fn only_availability_failures_fall_back() {
    let claude = Fake::new(
        "anthropic",
        vec![Err(ModelError::Http {
            status: 400,
            message: "messages.1: bad".into(),
        })],
    );
    let gpt = Fake::new("openai", vec![answer("never")]);
    let router = two(&claude, &gpt).with_fallbacks(Fallbacks {
        session: vec![reference("gpt", "gpt-5")],
        ..Fallbacks::default()
    });
    let (result, events) = ask(&router, &request("default", None, "opus")).await;
    assert!(matches!(result, Err(ModelError::Http { status: 400, .. })));
    assert!(events.is_empty());
    assert!(gpt.asked().is_empty());
}

#[test]
fn references_name_a_provider_or_a_model_of_the_default() {
    let gpt = Fake::new("openai", Vec::new());
    let local = Fake::new("chat", Vec::new());
    let router = Router::new("gpt")
        .with_provider(
            "gpt",
            Some(ProviderKind::OpenAi),
            Ok(gpt as Arc<dyn ModelClient>),
        )
        .with_provider(
            "local",
            Some(ProviderKind::Chat),
            Ok(local as Arc<dyn ModelClient>),
        )
        .with_provider(
            "claude",
            Some(ProviderKind::Anthropic),
            Err(ModelError::Config("ANTHROPIC_API_KEY is not set".into())),
        );
    let catalog = router.catalog();
    assert_eq!(catalog.resolve("gpt-5"), Ok(reference("gpt", "gpt-5")));
    assert_eq!(
        catalog.resolve("local/Qwen/Qwen3-8B"),
        Ok(reference("local", "Qwen/Qwen3-8B"))
    );
    assert_eq!(
        catalog.resolve("anthropc/claude-x"),
        Err("unknown provider `anthropc` in `anthropc/claude-x`, expected one of claude, gpt, local (the providers of config.toml)".into())
    );
    assert_eq!(
        catalog.resolve("claude/opus"),
        Err(
            "provider `claude` cannot be used: model configuration: ANTHROPIC_API_KEY is not set"
                .into()
        )
    );
    assert_eq!(
        catalog.resolve("gpt/"),
        Err("`gpt/` names provider `gpt` but no model".into())
    );
    // Why a provider cannot serve, for whoever reports it without the provider's name.
    assert_eq!(
        catalog.unavailable("claude"),
        Some("model configuration: ANTHROPIC_API_KEY is not set")
    );
    assert_eq!(catalog.unavailable("gpt"), None);
    assert_eq!(catalog.unavailable("nobody"), None);
    // A chat server's names may hold a `/`.
    let mut chat = catalog.clone();
    chat.set_default("local");
    assert_eq!(
        chat.resolve("openai/gpt-5"),
        Ok(reference("local", "openai/gpt-5"))
    );
}
