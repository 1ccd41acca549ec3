//! Tests of what the policy finds inside wrappers, `eval` and `git`: every form that once ran
//! a `forbidden` command without it being seen.

use std::path::Path;

use super::*;

const RULES: &str = r#"
[[rule]]
pattern = ["rm", "-rf"]
decision = "forbidden"

[[rule]]
pattern = ["git", "push"]
decision = "prompt"
"#;

fn evaluate(cmd: &str) -> Evaluation {
    let mut policy = Policy::empty();
    policy
        .add_file(Path::new("/h/rules/base.toml"), RULES)
        .expect("rules load");
    policy.evaluate(cmd)
}

fn decision(cmd: &str) -> &'static str {
    evaluate(cmd).decision.map_or("none", Decision::as_str)
}

#[test]
fn a_forbidden_command_is_found_through_every_wrapper() {
    for cmd in [
        "timeout 5 bash -c 'rm -rf d'",
        "timeout -s KILL --kill-after=1 5 sh -c 'rm -rf d'",
        "env bash -c 'rm -rf d'",
        "env -i PATH=/bin sh -c 'echo x; rm -rf d'",
        "env -S 'rm -rf d'",
        "nohup sh -c 'rm -rf d'",
        "nice -n 5 bash -lc 'rm -rf d'",
        "stdbuf -oL sh -c 'rm -rf d'",
        "find . -exec sh -c 'rm -rf d' \\;",
        "find . -execdir sh -c 'rm -rf \"$1\"' _ {} +",
        "find . -ok rm -rf d \\;",
        "find . -name x -execdir bash -c 'true && rm -rf d' \\;",
        "xargs -I@ sh -c 'rm -rf @'",
        "ls | xargs -0 -n1 bash -c 'rm -rf d'",
        "eval \"rm -rf d\"",
        "eval 'true; rm -rf d'",
        "eval rm -rf d",
        "command rm -rf d",
        "builtin eval 'rm -rf d'",
        "exec sh -c 'rm -rf d'",
        "sudo -u root bash -c 'rm -rf d'",
        "su -c 'rm -rf d'",
        "flock /tmp/l -c 'rm -rf d'",
        "watch -n 1 rm -rf d",
        "timeout 5 nice nohup env sh -c 'timeout 1 bash -c \"rm -rf d\"'",
        "git -c alias.x='!rm -rf d' x",
        "git -c alias.x='!sh -c \"rm -rf d\"' x",
        "git -c core.pager='rm -rf d' log",
        "git -c core.fsmonitor='rm -rf d' status",
        "git rebase -x 'rm -rf d' main",
        "git rebase --exec='rm -rf d' main",
        "git rebase --exe 'rm -rf d' main",
        "git submodule foreach 'rm -rf d'",
        "git bisect run rm -rf d",
        "bash -c 'eval \"rm -rf d\"'",
    ] {
        assert_eq!(decision(cmd), "forbidden", "{cmd}");
    }
}

#[test]
fn a_git_alias_without_bang_expands_to_its_git_command() {
    let eval = evaluate("git -c alias.ship='push --force' ship origin");
    assert_eq!(eval.decision, Some(Decision::Prompt));
    assert!(
        eval.commands.contains(
            &["git", "push", "--force", "origin"]
                .map(String::from)
                .to_vec()
        ),
        "{:?}",
        eval.commands
    );
}

#[test]
fn what_cannot_be_followed_is_judged_whole_and_unparsed() {
    // The script inside is not plain: its rough words are matched anywhere.
    let eval = evaluate("eval 'echo $(rm -rf d)'");
    assert_eq!(eval.decision, Some(Decision::Forbidden));
    assert!(!eval.parsed);
    let eval = evaluate("timeout 5 sh -c 'cat > f'");
    assert_eq!(eval.decision, None);
    assert!(
        !eval.parsed,
        "a wrapped script that is not plain is not parsed"
    );
    // Nesting past the limit.
    let deep = "sh -c \"sh -c 'sh -c \\\"sh -c ls\\\"'\"";
    assert!(!evaluate(&format!("timeout 1 {deep}")).parsed);
}

#[test]
fn plain_commands_stay_exact() {
    // Words are not commands outside wrappers: a commit message or an echo is not judged.
    assert_eq!(decision("git commit -m 'rm -rf build'"), "none");
    assert_eq!(decision("echo 'rm -rf d'"), "none");
    assert_eq!(decision("grep -r 'rm -rf' ."), "none");
    assert!(evaluate("timeout 5 ls").parsed);
    assert_eq!(decision("timeout 5 git push"), "prompt");
}
