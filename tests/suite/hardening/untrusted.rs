//! `untrusted` asks before anything that can write or run code: abbreviated long options, and
//! git in a repository whose config could run a program.

use arbor_guardian::NO_APPROVER_SENTENCE;
use arbor_protocol::ApprovalPolicy;
use arbor_tests::Session;
use serde_json::json;

use crate::approvals::root_calls;
use crate::sandbox::exec_result;

fn untrusted(config: &mut arbor_orchestrator::RunConfig) {
    config.approval_policy = ApprovalPolicy::Untrusted;
}

#[tokio::test]
async fn abbreviated_long_options_are_not_read_only() {
    let forms = [
        "sort --out=F1 a.txt",
        "sort --outp F2 a.txt",
        "sort --compress-prog=sh -S 1 a.txt",
        "git diff --no-index --out=F3 a.txt b.txt",
    ];
    let mut calls: Vec<_> = forms
        .iter()
        .map(|cmd| json!({"call": "exec_command", "args": {"cmd": cmd}}))
        .collect();
    calls.push(json!({"call": "exec_command", "args": {"cmd": "sort --check a.txt"}}));
    let script = json!({"agents": [root_calls(&calls)]});
    let mut s = Session::with_workspace(
        script,
        |dir| {
            std::fs::write(dir.join("a.txt"), "a\nb\n").expect("a");
            std::fs::write(dir.join("b.txt"), "b\n").expect("b");
        },
        untrusted,
    )
    .await;
    s.run("sort it").await;
    let results = s.tool_results("/root");
    for (cmd, (_, output)) in forms.iter().zip(&results) {
        assert_eq!(output, NO_APPROVER_SENTENCE, "{cmd} ran without approval");
    }
    for file in ["F1", "F2", "F3"] {
        assert!(!s.workspace().join(file).exists(), "{file} was written");
    }
    // The spelled-out read-only form still runs without asking.
    assert_eq!(
        exec_result(&results[4].1)["exit_code"],
        0,
        "{}",
        results[4].1
    );
}
