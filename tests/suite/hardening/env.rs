//! `exec_command` children get a filtered environment: secrets and the provider's key variable
//! never reach a command, its output, a rollout or the model; `[shell_environment]` shapes it.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::cli::{Workspace, text};
use crate::resume::write_script;

/// Secrets in arbor's environment, and one harmless variable.
const SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-test-openai-7f3a"),
    ("GITHUB_TOKEN", "ghp-test-token-91c2"),
    ("DB_PASSWORD", "hunter2-test-55d1"),
    ("AWS_SECRET_ACCESS_KEY", "aws-test-secret-0b7e"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/test/creds-4d2e.json"),
    // The provider's key variable, named by config.toml: matches no marker.
    ("LLM_ACCESS", "llm-test-access-c3f9"),
];

/// Runs `arbor exec --json` with the secrets in its environment; `env` is the root's command.
/// Returns the `exec_command` output and the workspace.
fn run_env(config: &str) -> (String, Workspace) {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(ws.home().join("config.toml"), config).expect("config");
    let script = write_script(
        &ws,
        "env.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [{"call": "exec_command", "args": {"cmd": "env"}}],
            [{"say": "done"}]]}]}),
    );
    let mut cmd = ws.arbor();
    cmd.args(["exec", "--json", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(ws.project())
        .arg("print the environment")
        .env("ARBOR_TEST_VISIBLE", "visible-1")
        .stdin(Stdio::null());
    for (name, value) in SECRETS {
        cmd.env(name, value);
    }
    let out = cmd.output().expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let output = text(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|e| e["type"] == "tool.result" && e["name"] == "exec_command")
        .and_then(|e| e["output"].as_str().map(str::to_string))
        .expect("the env result");
    (output, ws)
}

/// Every file under `dir`, as bytes.
fn every_file(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            every_file(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path.display().to_string(), bytes));
        }
    }
}

#[test]
fn env_in_exec_command_shows_no_secret_and_no_rollout_holds_one() {
    let (output, ws) = run_env("api_key_env = \"LLM_ACCESS\"\n");
    assert!(output.contains("ARBOR_TEST_VISIBLE=visible-1"), "{output}");
    assert!(output.contains("PATH="), "{output}");
    for (name, value) in SECRETS {
        assert!(
            !output.contains(value),
            "{name} reached the command: {output}"
        );
        assert!(
            !output.contains(&format!("{name}=")),
            "{name} is set: {output}"
        );
    }
    let mut files = Vec::new();
    every_file(&ws.home(), &mut files);
    assert!(
        files.iter().any(|(path, _)| path.contains("rollout-")),
        "rollouts were written"
    );
    for (path, bytes) in &files {
        let content = String::from_utf8_lossy(bytes);
        for (name, value) in SECRETS {
            assert!(!content.contains(value), "{name} is in {path}");
        }
    }
}

#[test]
fn shell_environment_sets_inherit_exclude_include_only_and_set() {
    let config = r#"
api_key_env = "LLM_ACCESS"

[shell_environment]
inherit = "all"
ignore_default_excludes = true
exclude = ["aws_*"]
include_only = ["PATH", "GITHUB_*", "AWS_*", "LLM_*", "ARBOR_TEST_*"]
set = { ARBOR_TEST_SET = "from-config", LLM_ACCESS = "put-back" }
"#;
    let (output, _ws) = run_env(config);
    let names: Vec<&str> = output
        .split(['\n', '"'])
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect();
    // Default excludes off: the token passes include_only; the AWS secret is excluded by
    // pattern; the provider's key variable never passes, not even through `set`.
    assert!(
        output.contains("GITHUB_TOKEN=ghp-test-token-91c2"),
        "{output}"
    );
    assert!(output.contains("ARBOR_TEST_SET=from-config"), "{output}");
    assert!(output.contains("ARBOR_TEST_VISIBLE=visible-1"), "{output}");
    assert!(!output.contains("AWS_SECRET_ACCESS_KEY"), "{output}");
    assert!(!output.contains("LLM_ACCESS"), "{output}");
    assert!(!output.contains("OPENAI_API_KEY"), "{output}");
    assert!(
        !names.contains(&"HOME"),
        "include_only keeps HOME out: {names:?}"
    );
}
