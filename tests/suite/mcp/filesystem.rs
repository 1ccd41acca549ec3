//! `@modelcontextprotocol/server-filesystem` from npm, confined to the workspace with
//! `args = ["{workspace}"]`: a worker lists and edits files through it (its writes allowed by
//! an `mcp__fs__*` rule), a write outside the workspace is refused by the server, and an
//! explorer is offered only the tools the server marks read-only.

use arbor_protocol::AgentStatus;
use arbor_tests::Session;
use serde_json::json;

use super::{offered, stdio};

#[tokio::test]
async fn a_worker_lists_and_edits_files_inside_the_workspace_only() {
    let bin = arbor_tests::tools::npm_bin("mcp-server-filesystem");
    let server = stdio(
        "fs",
        &bin.display().to_string(),
        &["{workspace}".to_string()],
        |_| {},
    );
    let outside = tempfile::tempdir().expect("outside dir");
    let outside_file = outside.path().join("escaped.txt");
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "worker", "agent_type": "worker", "message": "edit notes.txt"}},
             {"call": "spawn_agent", "args": {"task_name": "reader", "agent_type": "explorer", "message": "look"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]]},
        {"match": "/root/worker", "responses": [
            [{"call": "mcp__fs__list_directory", "args": {"path": "."}}],
            [{"call": "mcp__fs__edit_file", "args": {"path": "notes.txt",
                "edits": [{"oldText": "draft", "newText": "final"}]}}],
            [{"call": "mcp__fs__write_file", "args": {"path": outside_file.display().to_string(), "content": "out"}}],
            [{"say": "edited"}]]},
        {"match": "/root/reader", "responses": [
            [{"call": "mcp__fs__write_file", "args": {"path": "notes.txt", "content": "gone"}}],
            [{"say": "looked"}]]}
    ]});
    let mut s = Session::with_workspace(
        script,
        |dir| std::fs::write(dir.join("notes.txt"), "a draft\n").expect("write"),
        |config| {
            config.mcp_servers = vec![server];
            let rules = config.home.join("rules");
            std::fs::create_dir_all(&rules).expect("rules dir");
            std::fs::write(
                rules.join("mcp.toml"),
                "[[rule]]\npattern = [\"mcp__fs__*\"]\ndecision = \"allow\"\n",
            )
            .expect("rules");
        },
    )
    .await;
    s.run("edit through the filesystem server").await;

    let outputs: Vec<String> = s
        .tool_results("/root/worker")
        .into_iter()
        .map(|(_, output)| output)
        .collect();
    assert!(outputs[0].contains("[FILE] notes.txt"), "{}", outputs[0]);
    assert!(
        outputs[1].contains("-a draft") && outputs[1].contains("+a final"),
        "{}",
        outputs[1]
    );
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("notes.txt")).expect("read"),
        "a final\n"
    );
    assert!(
        outputs[2].starts_with("the tool reported an error: ")
            && outputs[2].contains("outside allowed directories"),
        "{}",
        outputs[2]
    );
    assert!(
        !outside_file.exists(),
        "the server wrote outside the workspace"
    );
    assert_eq!(
        s.orch
            .agent(&Session::path("/root/worker"))
            .await
            .expect("worker")
            .status,
        AgentStatus::Completed(Some("edited".into()))
    );

    // The explorer sees the read-only tools only, and cannot call a write tool by name.
    let reader = offered(&s, "/root/reader", 0);
    assert!(
        reader.contains(&"mcp__fs__read_text_file".to_string()),
        "{reader:?}"
    );
    assert!(
        reader.contains(&"mcp__fs__list_directory".to_string()),
        "{reader:?}"
    );
    assert!(
        !reader.contains(&"mcp__fs__write_file".to_string()),
        "{reader:?}"
    );
    assert!(
        !reader.contains(&"mcp__fs__edit_file".to_string()),
        "{reader:?}"
    );
    assert_eq!(
        s.tool_output("/root/reader", "mcp__fs__write_file"),
        "tool `mcp__fs__write_file` is not available to this agent"
    );
    let worker = offered(&s, "/root/worker", 0);
    assert!(
        worker.contains(&"mcp__fs__write_file".to_string()),
        "{worker:?}"
    );
}
