//! A `forbidden` rule holds through every wrapper, `eval` and git form: the command never runs.

use arbor_orchestrator::FORBIDDEN_SENTENCE;
use arbor_tests::Session;
use serde_json::json;

use crate::approvals::root_calls;

const FORBID_RM: &str = r#"
[[rule]]
pattern = ["rm", "-rf"]
decision = "forbidden"
justification = "destroys work"
"#;

/// Every form, each of which once ran `rm -rf d` with the rule in place.
const FORMS: &[&str] = &[
    "timeout 5 bash -c 'rm -rf d'",
    "env bash -c 'rm -rf d'",
    "nohup sh -c 'rm -rf d'",
    "nice -n 1 sh -c 'rm -rf d'",
    "stdbuf -oL sh -c 'rm -rf d'",
    "find . -maxdepth 0 -exec sh -c 'rm -rf d' \\;",
    "find . -maxdepth 0 -execdir sh -c 'rm -rf d' \\;",
    "find . -maxdepth 0 -ok sh -c 'rm -rf d' \\;",
    "echo x | xargs -I@ sh -c 'rm -rf d'",
    "eval \"rm -rf d\"",
    "eval 'true; rm -rf d'",
    "command eval 'rm -rf d'",
    "builtin eval 'rm -rf d'",
    "exec sh -c 'rm -rf d'",
    "git -c alias.x='!rm -rf d' x",
    "git -c core.pager='rm -rf d' -p log",
];

#[tokio::test]
async fn every_wrapper_and_eval_form_meets_the_forbidden_rule() {
    let calls: Vec<_> = FORMS
        .iter()
        .map(|cmd| json!({"call": "exec_command", "args": {"cmd": cmd}}))
        .collect();
    let script = json!({"agents": [root_calls(&calls)]});
    let mut s = Session::with_workspace(
        script,
        |dir| {
            std::fs::create_dir_all(dir.join(".arbor/rules")).expect("rules dir");
            std::fs::write(dir.join(".arbor/rules/rm.toml"), FORBID_RM).expect("rules");
            std::fs::create_dir_all(dir.join("d")).expect("d");
            std::fs::write(dir.join("d/keep.txt"), "keep\n").expect("keep");
        },
        |_| {},
    )
    .await;
    s.run("clean up").await;
    let results = s.tool_results("/root");
    assert_eq!(results.len(), FORMS.len());
    for (cmd, (_, output)) in FORMS.iter().zip(&results) {
        assert_eq!(
            output,
            &format!("{FORBIDDEN_SENTENCE} Matched rule `rm -rf` (destroys work)."),
            "{cmd}"
        );
    }
    assert!(
        s.workspace().join("d/keep.txt").exists(),
        "a forbidden command ran"
    );
}
