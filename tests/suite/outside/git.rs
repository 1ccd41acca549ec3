//! arbor's own git (worktree spawns, `arbor diff`, `arbor merge`) never runs a program a
//! repository's config names: a repository an agent makes in a folder that had none, or below
//! the workspace, is not one arbor makes worktrees in, and a repository whose own config names
//! a filter or an include is refused before git runs, naming the key.

use serde_json::json;

use arbor_tests::Session;

use super::{git_trap, spring_git_trap};
use crate::sandbox::{exec_result, outside_dir};
use crate::worktrees::{git, git_repo, spawn_worktree};

/// The root builds the trap in `dir`, then asks for a worktree child.
fn trap_then_spawn(dir: &str, marker: &std::path::Path) -> serde_json::Value {
    json!({"agents": [{"match": "/root", "responses": [
        [{"call": "exec_command", "args": {"cmd": git_trap(dir, marker)}}],
        [spawn_worktree("w", "work")],
        [{"say": "done"}]
    ]}]})
}

fn spawned(s: &Session) -> String {
    let results = s.tool_results("/root");
    let built = exec_result(&results[0].1);
    assert_eq!(built["exit_code"], 0, "the trap was not built: {built}");
    s.tool_output("/root", "spawn_agent")
}

#[tokio::test]
async fn a_repository_an_agent_makes_in_a_plain_folder_gets_no_worktree() {
    let outside = outside_dir();
    let marker = outside.path().join("pwned");
    let mut s = Session::new(trap_then_spawn(".", &marker), |_| {}).await;
    s.run("go").await;
    let refusal = spawned(&s);
    assert!(
        refusal.starts_with("isolation \"worktree\": the workspace was in no git repository when this session started")
            && refusal.contains("start a new session there to use worktrees"),
        "{refusal}"
    );
    assert!(s.orch.agent(&Session::path("/root/w")).await.is_none());
    assert!(!marker.exists(), "arbor's git ran the repository's program");
    spring_git_trap(s.workspace(), &marker);
}

#[tokio::test]
async fn a_repository_an_agent_makes_below_the_workspace_gets_no_worktree() {
    let outside = outside_dir();
    let marker = outside.path().join("pwned");
    let mut s = Session::with_workspace(
        trap_then_spawn(".", &marker),
        |dir| git_repo(dir, &[("sub/readme.txt", "sub\n")]),
        |config| config.cwd = config.cwd.join("sub"),
    )
    .await;
    s.run("go").await;
    let refusal = spawned(&s);
    let top = std::fs::canonicalize(s.workspace()).expect("top");
    assert!(
        refusal.contains(&format!(
            "is in the repository {}, not in {}, the one this session started in",
            top.join("sub/.git").display(),
            top.join(".git").display()
        )),
        "{refusal}"
    );
    assert!(!marker.exists(), "arbor's git ran the repository's program");
    spring_git_trap(&s.workspace().join("sub"), &marker);
}

/// A repository that already names a filter when the session starts (a checkout someone else
/// prepared): the spawn is refused before git runs, and so are `arbor diff` and `arbor merge`
/// of a worktree made before its config changed.
#[tokio::test]
async fn a_repository_whose_config_names_a_filter_is_refused_before_git_runs() {
    let outside = outside_dir();
    let marker = outside.path().join("pwned");
    let touch = format!("touch {}; cat", marker.display());
    let script = json!({"agents": [{"match": "/root", "responses": [
        [spawn_worktree("w", "work")],
        [{"say": "done"}]
    ]}]});
    let mut s = Session::with_workspace(
        script,
        |dir| {
            git_repo(dir, &[("a.txt", "a\n"), (".gitattributes", "* filter=x\n")]);
            git(dir, &["config", "filter.x.clean", &touch]);
            std::fs::write(dir.join("a.txt"), "changed\n").expect("change");
        },
        |_| {},
    )
    .await;
    s.run("go").await;
    let refusal = s.tool_output("/root", "spawn_agent");
    let config = std::fs::canonicalize(s.workspace())
        .expect("top")
        .join(".git/config");
    assert!(
        refusal.contains(&format!(
            "arbor's own git runs nothing a repository's config names, and filter.x.clean in \
             {} names a program git would run on the files",
            config.display()
        )),
        "{refusal}"
    );
    assert!(!marker.exists(), "arbor's git ran the filter");
    spring_git_trap(s.workspace(), &marker);
}

/// `arbor diff` and `arbor merge` of a stopped session whose repository's config came to name
/// a filter after its worktree was made refuse too, and run nothing.
#[test]
fn diff_and_merge_refuse_a_repository_whose_config_changed() {
    use crate::cli::{Workspace, session_of, text};
    use crate::resume::write_script;
    let ws = Workspace::new();
    git_repo(&ws.project(), &[("f.txt", "one\n")]);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [spawn_worktree("w", "edit")],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]]},
        {"match": "/root/w", "responses": [
            [{"call": "exec_command", "args": {"cmd": "echo two >> f.txt"}}],
            [{"say": "edited"}]]}
    ]});
    let out = ws.exec(&write_script(&ws, "w.json", &script), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let outside = outside_dir();
    let marker = outside.path().join("pwned");
    git(
        &ws.project(),
        &[
            "config",
            "filter.x.smudge",
            &format!("touch {}; cat", marker.display()),
        ],
    );
    std::fs::write(ws.project().join(".gitattributes"), "* filter=x\n").expect("attributes");
    for args in [
        vec!["diff", &session, "/root/w"],
        vec!["merge", &session, "/root/w"],
    ] {
        let out = ws.run(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("filter.x.smudge in") && stderr.contains("names a program"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!marker.exists(), "arbor's git ran the filter");
    assert_eq!(
        std::fs::read_to_string(ws.project().join("f.txt")).expect("f"),
        "one\n",
        "the merge wrote"
    );
}
