//! The command line with worktree agents: `tree` and `agents` show their changes, `diff` and
//! `merge` work on a stopped session, `resume` and `followup` find each worktree (a missing one
//! is an error naming it), `close` removes a merged worktree and keeps an unmerged one, which
//! `doctor` then lists as an orphan; too old a git fails the spawn; and the refactor example's
//! worktree variant merges all three renames.

use std::path::{Path, PathBuf};

use arbor_orchestrator::orphans;
use serde_json::{Value, json};

use super::{FILE, git, git_repo, replace, spawn_worktree, worker};
use crate::cli::{Workspace, session_of, text};
use crate::resume::{agent, agents, write_script};

/// Makes the example copy a repository with `f.txt` too.
fn repository(ws: &Workspace) {
    std::fs::write(ws.project().join("f.txt"), FILE).expect("f.txt");
    git_repo(&ws.project(), &[]);
}

fn day_one() -> Value {
    json!({"agents": [
        {"match": "/root", "responses": [
            [spawn_worktree("worker_a", "a"), spawn_worktree("worker_b", "b"), spawn_worktree("worker_c", "c")],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "day one"}]
        ]},
        worker("/root/worker_a", &replace("two", "TWO by a"), "a done"),
        worker("/root/worker_b", &replace("eight", "EIGHT by b"), "b done"),
        worker("/root/worker_c", &replace("five", "FIVE by c"), "c done"),
    ]})
}

fn worktree_of(list: &[Value], home: &Path, session: &str, name: &str) -> PathBuf {
    assert!(agent(list, &format!("/root/{name}"))["branch"].is_string());
    home.join("worktrees").join(session).join(name)
}

#[test]
fn diff_merge_resume_close_and_doctor_on_a_stopped_session() {
    let ws = Workspace::new();
    repository(&ws);
    let out = ws.exec(&write_script(&ws, "day1.json", &day_one()), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));

    let tree = text(&ws.run(&["tree", &session]).stdout);
    let line = tree
        .lines()
        .find(|line| line.contains("/root/worker_a"))
        .expect("worker_a in the tree");
    assert!(
        line.ends_with("  [worktree: 1 file changed, +1 -1, not committed]"),
        "{tree}"
    );
    let list = agents(&ws, &session);
    assert_eq!(
        agent(&list, "/root/worker_b")["changes"],
        json!({"files": 1, "added": 1, "removed": 1, "committed": false, "merged": false})
    );
    let home = ws.home();
    let (a, b, c) = (
        worktree_of(&list, &home, &session, "worker_a"),
        worktree_of(&list, &home, &session, "worker_b"),
        worktree_of(&list, &home, &session, "worker_c"),
    );

    let diff = ws.run(&["diff", &session, "/root/worker_a"]);
    assert!(diff.status.success(), "{}", text(&diff.stderr));
    assert!(
        text(&diff.stdout).contains("--- a/f.txt\n+++ b/f.txt\n")
            && text(&diff.stdout).contains("-two\n+TWO by a\n"),
        "{}",
        text(&diff.stdout)
    );
    let none = ws.run(&["diff", &session, "/root/worker_a", "src"]);
    assert!(
        none.status.success() && none.stdout.is_empty(),
        "{}",
        text(&none.stdout)
    );
    let shared = ws.run(&["diff", &session, "/root"]);
    assert_eq!(shared.status.code(), Some(2));
    assert!(text(&shared.stderr).contains("/root works in the shared checkout"));

    // A worktree removed by hand: resume says so, and reviving its agent fails naming it.
    std::fs::remove_dir_all(&b).expect("remove b's worktree");
    let resumed = ws.run(&["resume", &session]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let missing = format!("/root/worker_b: its worktree {} is missing", b.display());
    assert!(
        text(&resumed.stderr).contains(&missing),
        "{}",
        text(&resumed.stderr)
    );
    let day2 = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [{"match": "/root/*", "responses": [
            [{"call": "exec_command", "args": {"cmd": "pwd"}}],
            [{"say": "at {{last_output}}"}]
        ]}]}),
    );
    let followup = |target: &str| {
        ws.arbor()
            .args(["followup", &session, target, "again", "--script"])
            .arg(&day2)
            .output()
            .expect("arbor runs")
    };
    let failed = followup("/root/worker_b");
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    assert!(
        text(&failed.stderr).contains(&format!(
            "errored: revival of /root/worker_b failed: its worktree {} is missing",
            b.display()
        )),
        "{}",
        text(&failed.stderr)
    );
    let again = followup("/root/worker_a");
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).contains(&a.display().to_string()),
        "a did not run in its worktree: {}",
        text(&again.stdout)
    );

    let merged = ws.run(&["merge", &session, "/root/worker_a"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    assert_eq!(text(&merged.stdout), "f.txt\n");
    let file = std::fs::read_to_string(ws.project().join("f.txt")).expect("f.txt");
    assert_eq!(file, FILE.replace("two", "TWO by a"));
    let twice = ws.run(&["merge", &session, "/root/worker_a"]);
    assert!(twice.status.success() && twice.stdout.is_empty());
    assert!(
        text(&twice.stderr).contains("nothing to merge"),
        "{}",
        text(&twice.stderr)
    );

    let closed = ws.run(&["close", &session, "/root/worker_a"]);
    assert!(closed.status.success(), "{}", text(&closed.stderr));
    assert!(text(&closed.stderr).contains("nothing unmerged, removed its worktree"));
    assert!(!a.exists());
    // Its log ends with what became of its work, not with what its turn said of it then.
    let log = text(&ws.run(&["log", &session, "/root/worker_a"]).stdout);
    let tail: Vec<&str> = log.lines().rev().take(2).collect();
    assert!(
        tail[0].ends_with(" worktree removed")
            && tail[1].contains(" worktree merged into ")
            && tail[1].ends_with(": f.txt"),
        "{log}"
    );
    let kept = ws.run(&["close", &session, "/root/worker_c"]);
    assert!(
        text(&kept.stderr).contains("kept its worktree"),
        "{}",
        text(&kept.stderr)
    );
    assert!(c.join("f.txt").exists());

    let doctor = ws.run(&["doctor"]);
    let report = text(&doctor.stdout);
    assert!(doctor.status.success(), "{report}");
    let orphan = format!(
        "notice: orphan worktree {}: its agent /root/worker_c is closed, branch arbor/",
        c.display()
    );
    assert!(
        report.contains(&orphan) && report.contains("1 file unmerged"),
        "{report}"
    );

    // The kept worktree of a closed agent still merges; then `gc`'s call removes it all.
    let late = ws.run(&["merge", &session, "/root/worker_c", "--json"]);
    assert!(late.status.success(), "{}", text(&late.stderr));
    let late: Value = serde_json::from_slice(&late.stdout).expect("json");
    assert_eq!(late["merged"], json!(["f.txt"]));
    let found = orphans::list_orphan_worktrees(&home).expect("orphans");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].dir.clone(), found[0].unmerged),
        (c.clone(), Some(0))
    );
    let done = orphans::remove_orphan_worktree(&home, &found[0]).expect("removed");
    assert!(done.ends_with("and its branch"), "{done}");
    assert!(!c.exists());
    assert!(
        orphans::list_orphan_worktrees(&home)
            .expect("orphans")
            .is_empty()
    );
    let branches = git(
        &ws.project(),
        &["branch", "--list", "arbor/*", "--format=%(refname:short)"],
    );
    assert_eq!(branches, format!("arbor/{}/worker_b", &session[..8]));
    let file = std::fs::read_to_string(ws.project().join("f.txt")).expect("f.txt");
    assert_eq!(
        file,
        FILE.replace("two", "TWO by a").replace("five", "FIVE by c")
    );
}

#[test]
fn a_git_too_old_fails_the_spawn_with_a_clear_message() {
    let ws = Workspace::new();
    repository(&ws);
    let bin = ws.dir.path().join("old-git");
    std::fs::create_dir(&bin).expect("bin");
    let fake = bin.join("git");
    std::fs::write(&fake, "#!/bin/sh\necho 'git version 2.20.1'\n").expect("fake git");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = write_script(
        &ws,
        "old.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [spawn_worktree("worker_a", "a")],
            [{"say": "{{last_output}}"}]
        ]}]}),
    );
    let out = ws
        .arbor()
        .env("PATH", path)
        .args(["exec", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(ws.project())
        .arg("go")
        .output()
        .expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "isolation \"worktree\": git 2.20.1 is too old: worktrees need git 2.25.0 or newer"
    );
}

#[test]
fn the_refactor_example_with_worktrees_merges_all_three_renames() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/run.sh");
    let tmp = tempfile::tempdir().expect("tmp");
    let out = std::process::Command::new("bash")
        .arg(&example)
        .arg("--worktrees")
        .env("ARBOR_BIN", env!("CARGO_BIN_EXE_arbor"))
        .env("TMPDIR", tmp.path())
        .env_remove("ARBOR_HOME")
        .output()
        .expect("run.sh runs");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("each in a git worktree of its own, merged back"),
        "{stdout}"
    );
    for file in ["src/reader.py", "src/report.py", "src/cli.py"] {
        assert!(
            stdout.contains(&format!(" M {file}")),
            "{file} not merged:\n{stdout}"
        );
    }
    assert!(stdout.contains("arbor branches left: 0"), "{stdout}");
    let copy = stdout
        .lines()
        .find_map(|line| line.strip_prefix("sample project copied to "))
        .and_then(|rest| rest.split(" (arbor state").next())
        .expect("the copy's path");
    for file in ["reader.py", "report.py", "cli.py"] {
        let source = std::fs::read_to_string(Path::new(copy).join("src").join(file)).expect("src");
        assert!(!source.contains("fetch_data"), "{file}: {source}");
    }
}

#[test]
fn gc_of_a_session_removes_its_worktrees_and_keeps_unmerged_work_on_its_branch() {
    let ws = Workspace::new();
    repository(&ws);
    let script = json!({"agents": [
        {"match": "/root", "responses": [
            [spawn_worktree("worker_a", "a")],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 60000}}],
            [{"say": "done"}]
        ]},
        worker("/root/worker_a", &replace("two", "TWO by a"), "a done"),
    ]});
    let out = ws.exec(&write_script(&ws, "gc.json", &script), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session = session_of(&text(&out.stderr));
    let list = agents(&ws, &session);
    let dir = worktree_of(&list, &ws.home(), &session, "worker_a");
    let branch = agent(&list, "/root/worker_a")["branch"]
        .as_str()
        .expect("branch")
        .to_string();
    assert!(dir.is_dir());

    let gc = ws.run(&["gc", "--keep-last", "0", "--json"]);
    assert!(gc.status.success(), "{}", text(&gc.stderr));
    let report: Value = serde_json::from_slice(&gc.stdout).expect("json");
    assert_eq!(
        report["deleted"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    let done = report["worktrees"].as_array().expect("worktrees");
    assert_eq!(done.len(), 1, "{report}");
    assert!(
        done[0].as_str().is_some_and(|s| s.contains(&branch)),
        "{report}"
    );
    // The folder is gone; the work stays on its branch in the user's repository.
    assert!(!dir.exists());
    assert!(!ws.home().join("worktrees").join(&session).exists());
    let shown = git(&ws.project(), &["show", &format!("{branch}:f.txt")]);
    assert!(shown.contains("TWO by a"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(ws.project().join("f.txt")).expect("f.txt"),
        FILE
    );
}
