//! Approvals of MCP calls: under `on-request` a tool its server does not mark read-only is
//! asked about (headless: no approver, so it does not run), an `allow` rule lets it run, a
//! read-only tool runs without asking, `never` refuses, and the guardian reviews the server,
//! the tool and the arguments.

use arbor_orchestrator::RunConfig;
use arbor_protocol::{ApprovalPolicy, ApprovalsReviewer, Event};
use arbor_tests::Session;
use serde_json::{Value, json};

use super::misbehaving;

const ALLOW: &str =
    r#"{"outcome": "allow", "risk_level": "low", "rationale": "writes one scratch file"}"#;

/// A session whose root calls the read-only `echo`, then `write` of `target`.
async fn write_session(
    target: &std::path::Path,
    guardian: Option<Value>,
    configure: impl FnOnce(&mut RunConfig),
) -> Session {
    let pidfile = target.with_extension("pids");
    let mut agents = vec![json!({"match": "/root", "responses": [
        [{"call": "mcp__crashy__echo", "args": {"text": "read-only"}}],
        [{"call": "mcp__crashy__write", "args": {"path": target.display().to_string(), "text": "written"}}],
        [{"say": "done"}]]})];
    agents.extend(guardian);
    let server = misbehaving("crashy", "ok", &pidfile, |_| {});
    let mut s = Session::new(json!({"agents": agents}), |config| {
        config.mcp_servers = vec![server];
        configure(config);
    })
    .await;
    s.run("write through mcp").await;
    s
}

fn requested(s: &Session) -> Vec<Value> {
    s.seen
        .iter()
        .filter_map(|line| match &line.event {
            Event::ApprovalRequested { action, .. } => Some(action.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_write_tool_is_asked_about_and_an_allow_rule_lets_it_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("asked.txt");
    let s = write_session(&target, None, |_| {}).await;
    let outputs = s.tool_results("/root");
    assert_eq!(outputs[0].1, "read-only");
    assert_eq!(
        outputs[1].1,
        "This action needs approval and no approver is available, so it was not run."
    );
    assert!(!target.exists());
    let asked = requested(&s);
    assert_eq!(asked.len(), 1, "only the write tool asks: {asked:?}");
    assert_eq!(asked[0]["tool"], "mcp__crashy__write");
    assert_eq!(asked[0]["mcp_server"], "crashy");
    assert_eq!(asked[0]["mcp_tool"], "write");
    assert_eq!(asked[0]["arguments"]["text"], "written");
    assert_eq!(
        asked[0]["approval_reason"],
        "MCP tool `write` of server `crashy` is not marked read-only by its server, and no rule allows it"
    );

    let allowed = dir.path().join("allowed.txt");
    let s = write_session(&allowed, None, |config| {
        let rules = config.home.join("rules");
        std::fs::create_dir_all(&rules).expect("rules dir");
        std::fs::write(
            rules.join("mcp.toml"),
            "[[rule]]\npattern = [\"mcp__crashy__write\"]\ndecision = \"allow\"\n",
        )
        .expect("rules");
    })
    .await;
    assert_eq!(
        s.tool_results("/root")[1].1,
        format!("wrote {}", allowed.display())
    );
    assert_eq!(
        std::fs::read_to_string(&allowed).expect("written"),
        "written"
    );
    assert!(requested(&s).is_empty());
}

#[tokio::test]
async fn never_refuses_and_the_guardian_sees_server_tool_and_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let refused = dir.path().join("refused.txt");
    let s = write_session(&refused, None, |config| {
        config.approval_policy = ApprovalPolicy::Never;
    })
    .await;
    assert_eq!(
        s.tool_results("/root")[1].1,
        "This action needs approval, which the approval policy 'never' does not allow, so it was not run."
    );
    assert!(!refused.exists());

    let reviewed = dir.path().join("reviewed.txt");
    let guardian =
        json!({"match": "role:guardian", "repeat": true, "responses": [[{"say": ALLOW}]]});
    let s = write_session(&reviewed, Some(guardian), |config| {
        config.reviewer = ApprovalsReviewer::Guardian;
    })
    .await;
    assert_eq!(
        s.tool_results("/root")[1].1,
        format!("wrote {}", reviewed.display())
    );
    let review = s.model.requests_for(&Session::path("/root/guardian"));
    let shown = arbor_tests::texts(&review[0].input).join("\n");
    for part in [
        "\"mcp_server\": \"crashy\"",
        "\"mcp_tool\": \"write\"",
        "\"tool\": \"mcp__crashy__write\"",
        "\"text\": \"written\"",
    ] {
        assert!(shown.contains(part), "{part} not in the review:\n{shown}");
    }
    // The guardian itself gets only the server's read-only tools.
    let tools: Vec<&str> = review[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(tools.contains(&"mcp__crashy__echo"), "{tools:?}");
    assert!(!tools.contains(&"mcp__crashy__write"), "{tools:?}");
}
