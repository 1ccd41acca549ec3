//! `exec_command` children get a filtered environment: secrets (by name or by value) and the
//! provider's key variable never reach a command, its output, a rollout or the model; the
//! variables that point at the user's session (a tmux server, the ssh agent) are not handed to
//! it, so `tmux run-shell` cannot run a program outside the sandbox; `[shell_environment]`
//! shapes it and can bring one back.

use std::path::Path;
use std::process::{Command, Stdio};

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
    let output = run_commands(&ws, config, &[], &["env"]).remove(0);
    (output, ws)
}

/// Runs `arbor exec --json` in `ws` with the secrets and `vars` in its environment, the root
/// running `commands`; returns their `exec_command` outputs.
fn run_commands(
    ws: &Workspace,
    config: &str,
    vars: &[(&str, &str)],
    commands: &[&str],
) -> Vec<String> {
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(ws.home().join("config.toml"), config).expect("config");
    let mut responses: Vec<Value> = commands
        .iter()
        .map(|cmd| json!([{"call": "exec_command", "args": {"cmd": cmd}}]))
        .collect();
    responses.push(json!([{"say": "done"}]));
    let script = write_script(
        ws,
        "env.json",
        &json!({"agents": [{"match": "/root", "responses": responses}]}),
    );
    let mut cmd = ws.arbor();
    cmd.args(["exec", "--json", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(ws.project())
        .arg("print the environment")
        .env("ARBOR_TEST_VISIBLE", "visible-1")
        .stdin(Stdio::null());
    for (name, value) in SECRETS.iter().chain(vars) {
        cmd.env(name, value);
    }
    let out = cmd.output().expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs: Vec<String> = text(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["type"] == "tool.result" && e["name"] == "exec_command")
        .filter_map(|e| e["output"].as_str().map(str::to_string))
        .collect();
    assert_eq!(outputs.len(), commands.len(), "{}", text(&out.stdout));
    outputs
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

/// A tmux server of the test's own, on a socket in `dir`, killed on drop.
struct TmuxServer {
    socket: std::path::PathBuf,
}

impl TmuxServer {
    fn start(dir: &Path) -> Self {
        let server = Self {
            socket: dir.join("user-tmux.sock"),
        };
        let out = server.tmux(&["new-session", "-d", "-s", "user", "sleep 1000"]);
        assert!(out.status.success(), "tmux: {}", text(&out.stderr));
        server
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .expect("tmux runs (CI installs it)")
    }

    /// `$TMUX` as tmux sets it inside the session: socket, server pid, session index.
    fn variable(&self) -> String {
        let out = self.tmux(&["display-message", "-p", "#{pid}"]);
        format!("{},{},0", self.socket.display(), text(&out.stdout).trim())
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

#[test]
fn the_users_session_sockets_and_secrets_by_value_do_not_reach_commands() {
    let ws = Workspace::new();
    let outside = crate::sandbox::outside_dir();
    let marker = outside.path().join("ran-outside");
    let tmux = TmuxServer::start(ws.dir.path());
    // tmux finds no server of its own where it would look without $TMUX.
    let no_default = ws.dir.path().join("no-tmux-here");
    std::fs::create_dir_all(&no_default).expect("dir");
    let tmux_var = tmux.variable();
    let vars = [
        ("TMUX", tmux_var.as_str()),
        ("TMUX_PANE", "%0"),
        ("TMUX_TMPDIR", no_default.to_str().expect("utf-8")),
        ("SSH_AUTH_SOCK", "/run/user/1000/ssh-agent.sock"),
        ("DATABASE_URL", "postgres://u:pw-test-8c1d@h/db"),
        ("GITHUB_PAT", "github-pat-test-3e9a"),
        ("NPM_CONFIG__AUTH", "npm-auth-test-b2f0"),
    ];
    let escape = format!("tmux run-shell 'touch {}'", marker.display());
    let commands = ["env", escape.as_str()];

    let outputs = run_commands(&ws, "", &vars, &commands);
    let env = &outputs[0];
    for (name, value) in vars.iter().filter(|(name, _)| *name != "TMUX_TMPDIR") {
        assert!(!env.contains(&format!("{name}=")), "{name} is set: {env}");
        assert!(
            !env.contains(value),
            "{name}'s value reached the command: {env}"
        );
    }
    assert!(env.contains("TMUX_TMPDIR="), "{env}");
    assert!(
        !marker.exists(),
        "tmux ran a program outside the sandbox: {}",
        outputs[1]
    );

    // `keep` puts variables back, on the user's word: here the tmux server is reached.
    let keep = "[shell_environment]\nkeep = [\"DATABASE_URL\", \"TMUX\"]\n";
    let outputs = run_commands(&ws, keep, &vars, &commands);
    assert!(
        outputs[0].contains("DATABASE_URL=postgres://u:pw-test-8c1d@h/db"),
        "{}",
        outputs[0]
    );
    assert!(!outputs[0].contains("GITHUB_PAT="), "{}", outputs[0]);
    assert!(
        marker.exists(),
        "with TMUX kept the server is reachable: {}",
        outputs[1]
    );
}
