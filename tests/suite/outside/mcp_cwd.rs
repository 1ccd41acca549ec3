//! A stdio MCP server whose config names no `cwd` starts in the home's MCP folder: a `json.py`
//! an agent planted in the workspace is not what `python -c …` (or `-m`) imports when a later
//! session starts the server. Named `cwd = "{workspace}"`, the server runs in the workspace and
//! imports it: the trap is real, and choosing that directory is the user's.

use std::path::{Path, PathBuf};

use arbor_mcp::{RawServer, ServerConfig};
use arbor_tests::Session;
use serde_json::json;

use crate::sandbox::{exec_result, outside_dir};

/// The misbehaving server in `ok` mode, started with `python -c`, which puts the current
/// directory first on `sys.path`.
fn server(cwd: Option<&str>) -> ServerConfig {
    let (python, args) = arbor_tests::tools::misbehaving_server("ok");
    let code = format!(
        "import runpy, sys; sys.argv = [{script:?}, 'ok']; runpy.run_path({script:?}, \
         run_name='__main__')",
        script = args[0]
    );
    let raw = RawServer {
        command: Some(python),
        args: Some(vec!["-c".to_string(), code]),
        cwd: cwd.map(str::to_string),
        ..RawServer::default()
    };
    ServerConfig::from_raw("py", &raw)
        .expect("valid")
        .expect("enabled")
}

async fn session(
    workspace: &Path,
    script: serde_json::Value,
    servers: Vec<ServerConfig>,
) -> Session {
    let workspace: PathBuf = workspace.to_path_buf();
    Session::new(script, move |config| {
        config.cwd = workspace;
        config.mcp_servers = servers;
    })
    .await
}

#[tokio::test]
async fn a_module_planted_in_the_workspace_is_not_imported_by_a_later_sessions_server() {
    let workspace = tempfile::tempdir().expect("workspace");
    let outside = outside_dir();
    let marker = outside.path().join("pwned");
    let plant = format!(
        "printf 'open(%s, \"w\").close()\\nraise ImportError(\"planted\")\\n' \"'{}'\" > json.py",
        marker.display()
    );
    let mut day_one = session(
        workspace.path(),
        json!({"agents": [{"match": "/root", "responses": [
            [{"call": "exec_command", "args": {"cmd": plant}}],
            [{"say": "planted"}]]}]}),
        Vec::new(),
    )
    .await;
    day_one.run("plant").await;
    let planted = exec_result(&day_one.tool_output("/root", "exec_command"));
    assert_eq!(planted["exit_code"], 0, "{planted}");
    assert!(workspace.path().join("json.py").exists());

    let call = json!({"agents": [{"match": "/root", "responses": [
        [{"call": "mcp__py__echo", "args": {"text": "hello"}}],
        [{"say": "called"}]]}]});
    let mut day_two = session(workspace.path(), call.clone(), vec![server(None)]).await;
    day_two.run("call").await;
    assert_eq!(day_two.tool_output("/root", "mcp__py__echo"), "hello");
    assert!(!marker.exists(), "the server imported the planted module");
    assert!(day_two.home.path().join("mcp/run").is_dir());

    // Named explicitly, the workspace is where it runs: the planted module is imported.
    let mut chosen = session(workspace.path(), call, vec![server(Some("{workspace}"))]).await;
    chosen.run("call").await;
    assert!(marker.exists(), "the trap is not real");
}
