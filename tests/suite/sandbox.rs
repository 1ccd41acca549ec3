//! The sandbox through `exec_command` and `apply_patch` in a session: writes inside the
//! workspace and outside it, `.git`, the read-only explorer, an approved escalation, and the
//! honest report where Landlock is missing.

use std::path::{Path, PathBuf};

use arbor_orchestrator::{RunConfig, TerminalAnswer};
use arbor_protocol::SandboxMode;
use arbor_tests::Session;
use serde_json::{Value, json};
use tempfile::TempDir;

/// A directory outside the workspace and outside every temp dir the sandbox lets commands
/// write: the build's own temp dir, unless the checkout lies in one (under `/tmp`), else
/// `/var/tmp` or the home directory.
pub fn outside_dir() -> TempDir {
    let roots = arbor_tools::temp_roots();
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    let base = candidates
        .into_iter()
        .flatten()
        .find(|dir| dir.is_dir() && !roots.iter().any(|root| dir.starts_with(root)))
        .unwrap_or_else(|| panic!("no directory outside the temp dirs {roots:?}"));
    tempfile::tempdir_in(base).expect("a dir outside the temp dirs")
}

/// The parsed JSON of an `exec_command` result.
pub fn exec_result(output: &str) -> Value {
    serde_json::from_str(output).unwrap_or_else(|err| panic!("not exec JSON ({err}): {output}"))
}

/// Whether Landlock confines `mode` on this machine; when it does not, the label must say so.
fn enforced(mode: SandboxMode) -> bool {
    let status = arbor_tools::sandbox_status(mode);
    if !status.enforced {
        assert_eq!(
            status.label, "none",
            "an unenforced sandbox claims {status:?}"
        );
    }
    status.enforced
}

/// The root runs each command with `exec_command`, one response each, then answers.
fn root_runs(commands: &[Value]) -> Value {
    let mut responses: Vec<Value> = commands
        .iter()
        .map(|args| json!([{"call": "exec_command", "args": args}]))
        .collect();
    responses.push(json!([{"say": "done"}]));
    json!({"agents": [{"match": "/root", "responses": responses}]})
}

fn git_workspace(dir: &Path) {
    std::fs::create_dir(dir.join(".git")).expect(".git");
    std::fs::write(dir.join(".git/config"), "[core]\n").expect("config");
}

#[tokio::test]
async fn a_write_outside_the_workspace_is_denied_and_inside_allowed() {
    let outside = outside_dir();
    let target = outside.path().join("outside.txt");
    let script = root_runs(&[
        json!({"cmd": "echo in > inside.txt"}),
        json!({"cmd": format!("echo out > {}", target.display())}),
    ]);
    let mut s = Session::new(script, |_| {}).await;
    s.run("write two files").await;
    let results: Vec<Value> = s
        .tool_results("/root")
        .iter()
        .map(|(_, output)| exec_result(output))
        .collect();
    assert_eq!(results[0]["exit_code"], 0, "{}", results[0]);
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("inside.txt")).expect("inside"),
        "in\n"
    );
    let label = results[1]["sandbox"].as_str().expect("label").to_string();
    if !enforced(SandboxMode::WorkspaceWrite) {
        assert_eq!(label, "none");
        return;
    }
    assert!(label.starts_with("landlock workspace-write"), "{label}");
    assert_ne!(results[1]["exit_code"], 0, "{}", results[1]);
    assert!(
        results[1]["stderr"]
            .as_str()
            .is_some_and(|e| e.contains("Permission denied")),
        "{}",
        results[1]
    );
    assert!(!target.exists(), "the sandbox let a write outside through");
}

#[tokio::test]
async fn git_stays_read_only() {
    let patch = "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+echo owned\n*** End Patch";
    let script = json!({"agents": [{"match": "/root", "responses": [
        [{"call": "exec_command", "args": {"cmd": "echo x >> .git/config"}}],
        [{"call": "exec_command", "args": {"cmd": "rm -rf .git"}}],
        [{"call": "exec_command", "args": {"cmd": "echo ok > src.txt"}}],
        [{"call": "apply_patch", "args": {"patch": patch}}],
        [{"say": "done"}]]}]});
    let mut s = Session::with_workspace(script, git_workspace, |_| {}).await;
    s.run("try .git").await;
    let results = s.tool_results("/root");
    assert_eq!(
        results[3].1,
        "apply_patch: .git/hooks/pre-commit is inside .git, which stays read-only"
    );
    assert!(!s.workspace().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        exec_result(&results[2].1)["exit_code"],
        0,
        "{}",
        results[2].1
    );
    if !enforced(SandboxMode::WorkspaceWrite) {
        return;
    }
    for (_, output) in &results[..2] {
        assert_ne!(exec_result(output)["exit_code"], 0, "{output}");
    }
    assert_eq!(
        std::fs::read_to_string(s.workspace().join(".git/config")).expect("config"),
        "[core]\n"
    );
    assert!(
        s.workspace().join(".arbor").is_dir(),
        ".arbor is made so it is protected"
    );
}

#[tokio::test]
async fn an_explorer_cannot_write() {
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "look", "agent_type": "explorer", "message": "look around"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]]},
        {"match": "/root/look", "responses": [
            [{"call": "exec_command", "args": {"cmd": "ls && touch made_by_explorer.txt"}}],
            [{"call": "apply_patch", "args": {"patch": "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"}}],
            [{"say": "looked"}]]}
    ]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("explore").await;
    let results = s.tool_results("/root/look");
    assert_eq!(
        results[1].1,
        "tool `apply_patch` is not available to this agent"
    );
    let exec = exec_result(&results[0].1);
    assert!(!s.workspace().join("x.txt").exists());
    if !enforced(SandboxMode::ReadOnly) {
        assert_eq!(exec["sandbox"], "none");
        return;
    }
    assert!(
        exec["sandbox"]
            .as_str()
            .is_some_and(|l| l.starts_with("landlock read-only")),
        "{exec}"
    );
    assert_ne!(exec["exit_code"], 0, "{exec}");
    assert!(!s.workspace().join("made_by_explorer.txt").exists());
}

/// A session whose terminal approves every request once.
pub async fn approving_session(
    script: Value,
    setup: impl FnOnce(&Path),
    configure: impl FnOnce(&mut RunConfig),
) -> Session {
    let s = Session::with_workspace(script, setup, |config| {
        config.approval_terminal = true;
        config.approval_wait = None;
        configure(config);
    })
    .await;
    let mut prompts = s.orch.take_approval_prompts().expect("a terminal");
    tokio::spawn(async move {
        while let Some(prompt) = prompts.recv().await {
            let _ = prompt.answer(TerminalAnswer::ApproveOnce).await;
        }
    });
    s
}

#[tokio::test]
async fn an_approved_escalation_can_write_outside() {
    let outside = outside_dir();
    let target: PathBuf = outside.path().join("escalated.txt");
    let script = root_runs(&[json!({
        "cmd": format!("echo out > {}", target.display()),
        "sandbox_permissions": "require_escalated",
        "justification": "write the report outside the workspace"
    })]);
    let mut s = approving_session(script, |_| {}, |_| {}).await;
    s.run("write outside").await;
    let result = exec_result(&s.tool_output("/root", "exec_command"));
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(
        result["sandbox"], "none",
        "an escalation runs outside the sandbox"
    );
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "out\n");
    let log = s
        .orch
        .store()
        .approvals(s.orch.session_id())
        .expect("approval log");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].outcome.as_str(), "allow");
    assert_eq!(log[0].decided_by.map(|by| by.as_str()), Some("user"));
    assert_eq!(
        log[0].justification.as_deref(),
        Some("write the report outside the workspace")
    );
}

#[tokio::test]
async fn the_report_never_claims_a_sandbox_that_is_not_there() {
    let script = root_runs(&[json!({"cmd": "true"})]);
    let mut s = Session::new(script, |config| {
        config.sandbox = SandboxMode::DangerFullAccess;
    })
    .await;
    let status = s.orch.sandbox_status();
    assert!(!status.enforced);
    assert_eq!(status.label, "none");
    s.run("run true").await;
    assert_eq!(
        exec_result(&s.tool_output("/root", "exec_command"))["sandbox"],
        "none"
    );
    let status = arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    assert_eq!(status.label == "none", !status.enforced, "{status:?}");
}
