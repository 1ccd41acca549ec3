//! The providers a run's options and config describe: which one is the session's default,
//! what the model references resolve to, and what is refused.

use clap::{Args, FromArgMatches};

use super::*;

fn options(args: &[&str]) -> RunOptions {
    let matches = RunOptions::augment_args(clap::Command::new("exec"))
        .try_get_matches_from(std::iter::once("exec").chain(args.iter().copied()))
        .expect("options parse");
    RunOptions::from_arg_matches(&matches).expect("options")
}

fn config(text: &str) -> FileConfig {
    toml::from_str(text).expect("config parses")
}

const TWO: &str = "[providers.claude]\nkind = \"anthropic\"\n\
                   [providers.local]\nkind = \"chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\n";

#[test]
fn the_session_model_may_name_its_provider() {
    let plan = Plan::new(
        &options(&["--model", "claude/claude-opus-4-1"]),
        &config(TWO),
    )
    .expect("plan");
    assert_eq!(plan.catalog().default_provider(), "claude");
    assert_eq!(plan.model(), Some("claude-opus-4-1"));
    // Without any, the top-level keys' provider, named by its kind.
    let plan = Plan::new(&options(&["--model", "gpt-5"]), &config(TWO)).expect("plan");
    assert_eq!(plan.catalog().default_provider(), "openai");
    assert_eq!(plan.catalog().names(), ["claude", "local", "openai"]);
    // A kind's name picks that kind's implicit provider.
    let plan = Plan::new(
        &options(&["--model", "anthropic/claude-haiku-4-5"]),
        &config(""),
    )
    .expect("plan");
    assert_eq!(plan.catalog().default_provider(), "anthropic");
    // A chat server's model names may hold a `/`.
    let plan = Plan::new(
        &options(&["--provider", "chat", "--model", "openai/gpt-5"]),
        &config(""),
    )
    .expect("plan");
    assert_eq!(
        (plan.catalog().default_provider(), plan.model()),
        ("chat", Some("openai/gpt-5"))
    );
}

#[test]
fn conflicts_and_unknown_names_are_refused_with_what_to_do() {
    let message = |args: &[&str], file: &str| {
        Plan::new(&options(args), &config(file))
            .expect_err("refused")
            .message
    };
    assert_eq!(
        message(&["--provider", "openai", "--model", "claude/opus"], TWO),
        "the model `claude/opus` names provider `claude`, but the session's provider is `openai` (--provider or `provider`): name one of them"
    );
    assert_eq!(
        message(&[], &format!("provider = \"gemini\"\n{TWO}")),
        "config: provider must be openai, chat, anthropic, script or one of [providers] (claude, local), not `gemini`"
    );
    assert_eq!(
        message(&[], "[providers.x]\nkind = \"gemini\"\n"),
        "config: `providers.x.kind`: unknown provider kind `gemini`, expected openai, chat or anthropic"
    );
    assert_eq!(
        message(
            &[],
            &format!("provider = \"claude\"\nbase_url = \"http://x/v1\"\n{TWO}")
        ),
        "config: base_url describe the provider of the top-level keys, but the session's provider `claude` is configured under [providers.claude]: set them there"
    );
    assert_eq!(
        message(
            &["--model", "m"],
            &format!("fallbacks = [\"claud/opus\"]\n{TWO}")
        ),
        "config: `fallbacks`: unknown provider `claud` in `claud/opus`, expected one of claude, local, openai (the providers of config.toml)"
    );
}

#[test]
fn building_needs_the_keys_of_the_providers_the_config_relies_on() {
    let file = config(
        "[providers.claude]\nkind = \"anthropic\"\napi_key_env = \"ARBOR_TEST_UNSET_CLAUDE_KEY\"\n\
         [providers.local]\nkind = \"chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
         [roles.explorer]\nfallbacks = [\"claude/haiku\"]\n",
    );
    let run = options(&["--provider", "chat", "--model", "m"]);
    let error = Plan::new(&run, &file)
        .expect("plan")
        .build(&run, &file)
        .map(|_| ())
        .expect_err("no key for a fallback");
    assert_eq!(
        error.message,
        "config: `roles.explorer.fallbacks`: provider `claude` cannot be used: model configuration: ARBOR_TEST_UNSET_CLAUDE_KEY is not set; export it or set api_key_env"
    );
    // Without the fallback, a provider nothing relies on may lack its key: the router knows
    // why it cannot serve.
    let file = config(
        "[providers.claude]\nkind = \"anthropic\"\napi_key_env = \"ARBOR_TEST_UNSET_CLAUDE_KEY\"\n",
    );
    let model = Plan::new(&run, &file)
        .expect("plan")
        .build(&run, &file)
        .expect("built");
    assert!(
        model
            .catalog()
            .resolve("claude/haiku")
            .is_err_and(|e| e.contains("ARBOR_TEST_UNSET_CLAUDE_KEY is not set"))
    );
    let plan = Plan::new(&run, &file).expect("plan");
    assert_eq!(
        plan.key_variables(),
        ["ARBOR_TEST_UNSET_CLAUDE_KEY", "OPENAI_API_KEY"]
    );
}

#[test]
fn the_providers_example_in_the_models_doc_plans_as_it_says() {
    let doc = include_str!("../../../docs/models.md");
    let (_, section) = doc.split_once("## Providers by name").expect("section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|block| block.split_once("```"))
        .map(|(toml, _)| toml)
        .expect("a toml block");
    let plan = Plan::new(&options(&[]), &config(block)).expect("plan");
    assert_eq!(plan.catalog().default_provider(), "claude");
    assert_eq!(plan.catalog().names(), ["claude", "gpt", "local"]);
    assert_eq!(plan.model(), Some("claude-sonnet-4-5"));
}
