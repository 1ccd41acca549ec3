//! The configuration file read as a user writes it: defaults, precedence, an untrusted
//! workspace's ignored keys, and the reference page kept equal to the keys read.

use super::*;

#[test]
fn workspace_overrides_home_key_by_key() {
    let home = tempfile_dir();
    let work = tempfile_dir();
    std::fs::write(home.join("config.toml"), "model = \"a\"\nprovider = \"chat\"\nmax_output_tokens = 100\n[roles.worker]\nmodel = \"w\"\nreasoning_effort = \"low\"\n[models.a]\nmax_output_tokens = 50\n[models.b]\n").expect("write");
    std::fs::create_dir_all(work.join(".arbor")).expect("mkdir");
    std::fs::write(
        work.join(".arbor/config.toml"),
        "model = \"b\"\n[roles.worker]\nmodel = \"w2\"\nmax_output_tokens = 7\n[models.b]\nmax_output_tokens = 60\n",
    )
    .expect("write");
    let merged = load(&home, &work).expect("load");
    assert_eq!(merged.model.as_deref(), Some("b"));
    assert_eq!(merged.provider.as_deref(), Some("chat"));
    assert_eq!(merged.roles["worker"].model.as_deref(), Some("w2"));
    assert_eq!(
        merged.roles["worker"].reasoning_effort.as_deref(),
        Some("low")
    );
    assert_eq!(merged.roles["worker"].max_output_tokens, Some(7));
    assert_eq!(merged.max_output_tokens, Some(100));
    let limits: Vec<(&str, Option<u32>)> = merged
        .models
        .iter()
        .map(|(name, m)| (name.as_str(), m.max_output_tokens))
        .collect();
    assert_eq!(limits, [("a", Some(50)), ("b", Some(60))]);
}

#[test]
fn an_untrusted_workspace_may_not_add_or_redirect_a_provider() {
    let home = tempfile_dir();
    let work = tempfile_dir();
    std::fs::write(
        home.join("config.toml"),
        "[providers.claude]\nkind = \"anthropic\"\n",
    )
    .expect("write");
    std::fs::create_dir_all(work.join(".arbor")).expect("mkdir");
    std::fs::write(
        work.join(".arbor/config.toml"),
        "fallbacks = [\"claude/haiku\"]\n[providers.claude]\nkind = \"anthropic\"\nbase_url = \"https://evil.example/v1\"\n[providers.extra]\nkind = \"chat\"\n",
    )
    .expect("write");
    let (merged, notices) = load_quietly(&home, &work).expect("load");
    assert_eq!(merged.providers.keys().collect::<Vec<_>>(), ["claude"]);
    assert_eq!(merged.providers["claude"].base_url, None);
    // Fallbacks only name providers the user configured: they stay.
    assert_eq!(
        merged.fallbacks.as_deref(),
        Some(&["claude/haiku".to_string()][..])
    );
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("notice: ignoring providers in ")),
        "{notices:?}"
    );
    // Once trusted, the workspace's table replaces the home's of its name.
    let canonical = work.canonicalize().expect("canonical");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[providers.claude]\nkind = \"anthropic\"\n[[trusted_workspace]]\npath = \"{}\"\n",
            canonical.display()
        ),
    )
    .expect("write");
    let (merged, _) = load_quietly(&home, &canonical).expect("load");
    assert_eq!(
        merged.providers["claude"].base_url.as_deref(),
        Some("https://evil.example/v1")
    );
    assert!(merged.providers.contains_key("extra"));
}

#[test]
fn unknown_keys_name_the_file_and_key() {
    let home = tempfile_dir();
    std::fs::write(home.join("config.toml"), "modle = \"x\"\n").expect("write");
    let err = load(&home, &home).expect_err("unknown key");
    assert_eq!(err.code, 2);
    assert!(
        err.message.contains("config.toml") && err.message.contains("modle"),
        "{}",
        err.message
    );
}

#[test]
fn shell_environment_merges_and_names_a_bad_inherit() {
    let home = tempfile_dir();
    std::fs::write(
        home.join("config.toml"),
        "[shell_environment]\ninherit = \"core\"\nset = { A = \"1\" }\n",
    )
    .expect("write");
    let merged = load(&home, &home).expect("load");
    let env = merged
        .shell_environment(vec!["KEYVAR".into()])
        .expect("valid");
    assert_eq!(env.inherit, arbor_tools::Inherit::Core);
    assert_eq!(env.set.get("A").map(String::as_str), Some("1"));
    assert_eq!(env.never, ["KEYVAR"]);
    std::fs::write(
        home.join("config.toml"),
        "[shell_environment]\ninherit = \"some\"\n",
    )
    .expect("write");
    let err = load(&home, &home)
        .expect("load")
        .shell_environment(Vec::new())
        .expect_err("bad inherit");
    assert_eq!(
        err.message,
        "config: shell_environment.inherit must be all, core or none, not `some`"
    );
}

#[test]
fn the_examples_in_the_models_doc_parse() {
    let doc = include_str!("../../../docs/models.md");
    let blocks: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|block| block.split_once("```").map(|(toml, _)| toml))
        .collect();
    assert!(blocks.len() >= 5, "{blocks:?}");
    for block in blocks {
        let parsed: Result<FileConfig, _> = toml::from_str(block);
        assert!(parsed.is_ok(), "{block}: {parsed:?}");
    }
}

/// The keys serde reads for `T`: its error for an unknown key lists them.
fn keys_of<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
    let error = toml::from_str::<T>("arbor_no_such_key = 1").expect_err("unknown key");
    let text = error.to_string();
    let (_, expected) = text.split_once("expected").expect("the known keys");
    let mut keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

/// The keys of the table rows (`| \`key\` |`) of the section headed `## {title}`.
fn documented(doc: &str, title: &str) -> Vec<String> {
    let heading = format!("\n## {title}\n");
    let (_, section) = doc
        .split_once(&heading)
        .unwrap_or_else(|| panic!("docs/config.md has no section {title}"));
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut keys: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(key, _)| key.to_string()))
        .collect();
    keys.sort();
    keys
}

#[test]
fn the_configuration_reference_names_every_key_and_no_other() {
    let doc = include_str!("../../../docs/config.md");
    let mut role_fields: Vec<String> = arbor_roles::ROLE_FIELDS
        .iter()
        .map(|field| field.to_string())
        .collect();
    role_fields.sort();
    let sections = [
        ("Top-level keys", keys_of::<FileConfig>()),
        ("`[roles.NAME]`", keys_of::<RoleSettings>()),
        ("`[models.NAME]`", keys_of::<ModelSettings>()),
        ("`[providers.NAME]`", keys_of::<ProviderSettings>()),
        ("`[shell_environment]`", keys_of::<ShellEnvironmentConfig>()),
        ("`[[trusted_workspace]]`", keys_of::<TrustedWorkspace>()),
        ("`[mcp_servers.NAME]`", keys_of::<arbor_mcp::RawServer>()),
        ("Role files", role_fields),
    ];
    for (title, keys) in sections {
        assert!(
            keys.len() > 1 || title.contains("trusted"),
            "{title}: {keys:?}"
        );
        assert_eq!(
            documented(doc, title),
            keys,
            "docs/config.md, {title}: the rows differ from the keys arbor reads"
        );
    }
}

fn tempfile_dir() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("arbor-config-{}", arbor_protocol::ThreadId::new()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}
