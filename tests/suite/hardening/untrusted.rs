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

/// A repository config that runs a program on `git status` (through `core.fsmonitor`).
const EVIL_CONFIG: &str =
    "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch pwned #\"\n";

fn git_init(dir: &std::path::Path, name: &str) {
    let out = std::process::Command::new("git")
        .args(["init", "-q", name])
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git init {name}");
}

fn add(path: &str, text: &str) -> serde_json::Value {
    let lines: String = text.lines().map(|l| format!("+{l}\n")).collect();
    json!({"call": "apply_patch", "args": {
        "patch": format!("*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch")}})
}

#[tokio::test]
async fn the_git_fsmonitor_chain_needs_approval_at_every_step() {
    let calls = [
        // The chain: a patch writes a nested repository's config, then "read-only" git runs it.
        add("sub/.git/config", EVIL_CONFIG),
        json!({"call": "exec_command", "args": {"cmd": "git -C sub status"}}),
        // A repository that came with such a config, however git is pointed at it.
        json!({"call": "exec_command", "args": {"cmd": "git -C evil status"}}),
        json!({"call": "exec_command", "args": {"cmd": "cd evil && git log"}}),
        json!({"call": "exec_command", "args": {"cmd": "bash -lc 'cd evil; git diff'"}}),
        // A patch every path of which an allow rule names runs without asking.
        add("notes.md", "a note"),
    ];
    let script = json!({"agents": [root_calls(&calls)]});
    let mut s = Session::with_workspace(
        script,
        |dir| {
            git_init(dir, "sub");
            git_init(dir, "evil");
            std::fs::write(dir.join("evil/.git/config"), EVIL_CONFIG).expect("evil config");
        },
        |config| {
            untrusted(config);
            let rules = config.home.join("rules");
            std::fs::create_dir_all(&rules).expect("home rules");
            std::fs::write(
                rules.join("notes.toml"),
                "[[rule]]\npattern = [\"apply_patch\", \"notes.md\"]\ndecision = \"allow\"\n",
            )
            .expect("rules");
        },
    )
    .await;
    s.run("check the repositories").await;
    let results = s.tool_results("/root");
    let outputs: Vec<&str> = results.iter().map(|(_, o)| o.as_str()).collect();
    assert_eq!(outputs[0], NO_APPROVER_SENTENCE, "the patch was not gated");
    assert_ne!(
        std::fs::read_to_string(s.workspace().join("sub/.git/config")).expect("config"),
        EVIL_CONFIG
    );
    assert_eq!(exec_result(outputs[1])["exit_code"], 0, "{}", outputs[1]);
    for (n, output) in outputs.iter().enumerate().take(5).skip(2) {
        assert_eq!(*output, NO_APPROVER_SENTENCE, "call {n} ran");
    }
    for repo in ["sub", "evil"] {
        assert!(
            !s.workspace().join(repo).join("pwned").exists(),
            "{repo}: fsmonitor ran"
        );
    }
    assert!(outputs[5].starts_with("Success."), "{}", outputs[5]);
    // The request names the program-running key, for the approver.
    let records = crate::approvals::log(&s);
    let reason = records[1].action["approval_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("core.fsmonitor"), "{reason}");
    assert_eq!(records[0].action["tool"], "apply_patch");
    assert_eq!(records[0].action["paths"], json!(["sub/.git/config"]));
}
