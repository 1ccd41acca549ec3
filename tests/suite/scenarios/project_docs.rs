//! `AGENTS.md` at two levels of a repository reach every agent's instructions, outermost
//! first (the scripted model records each request); `--no-project-docs` leaves them out.

use arbor_tests::Session;
use serde_json::json;

fn script() -> serde_json::Value {
    json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "agent_type": "worker", "message": "go"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]]},
        {"match": "/root/w", "responses": [[{"say": "ok"}]]}
    ]})
}

/// A repository with `AGENTS.md` at its root and in `service/`; the session runs in `service/`.
async fn session(project_docs: bool) -> Session {
    let mut s = Session::with_workspace(
        script(),
        |dir| {
            std::fs::create_dir(dir.join(".git")).expect("git dir");
            std::fs::create_dir(dir.join("service")).expect("service dir");
            std::fs::write(dir.join("AGENTS.md"), "Root rule: run `make check`.\n").expect("root");
            std::fs::write(
                dir.join("service").join("AGENTS.md"),
                "Service rule: never touch the schema.\n",
            )
            .expect("service");
        },
        |config| {
            config.cwd = config.cwd.join("service");
            config.project_docs = project_docs;
        },
    )
    .await;
    s.run("follow the project's rules").await;
    s
}

#[tokio::test]
async fn agents_md_at_two_levels_reach_every_agent_outermost_first() {
    let s = session(true).await;
    for path in ["/root", "/root/w"] {
        let request = &s.model.requests_for(&Session::path(path))[0];
        let text = &request.instructions;
        let root = text
            .find("## AGENTS.md\n\nRoot rule: run `make check`.")
            .unwrap_or_else(|| panic!("{path}: no root rule in\n{text}"));
        let service = text
            .find("## service/AGENTS.md\n\nService rule: never touch the schema.")
            .unwrap_or_else(|| panic!("{path}: no service rule in\n{text}"));
        assert!(root < service, "{path}: outermost first\n{text}");
        // The role's own instructions come first.
        assert!(text.starts_with("You are an agent in arbor"), "{text}");
    }
}

#[tokio::test]
async fn no_project_docs_leaves_them_out() {
    let s = session(false).await;
    let request = &s.model.requests_for(&Session::path("/root"))[0];
    assert!(
        !request.instructions.contains("AGENTS.md") && !request.instructions.contains("rule"),
        "{}",
        request.instructions
    );
}
