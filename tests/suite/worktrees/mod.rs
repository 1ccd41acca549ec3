//! Workers in git worktrees of their own (`isolation = "worktree"`): parallel edits of one
//! file merged back with a conflict report, the fallback outside a repository, auto-merge,
//! eviction and resume, the sandbox, and the command line. Every test runs the real git on a
//! real repository in a temporary directory.

mod approval;
mod cli;
mod lifecycle;
mod merging;
mod sandbox;
mod settings;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// The file three workers edit: nine lines, so edits of line 2 and line 8 do not touch.
pub const FILE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";

/// Runs git in `dir` as a user would; the test fails when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=tester",
            "-c",
            "user.email=tester@example.com",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Makes `dir` a git repository with `files` committed.
pub fn git_repo(dir: &Path, files: &[(&str, &str)]) {
    git(dir, &["init", "-q", "-b", "main"]);
    for (path, content) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

/// Every file under `dir` (but `.git` and `.arbor`) with its bytes.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("list") {
            let entry = entry.expect("entry");
            let name = entry.file_name();
            if name == ".git" || name == ".arbor" {
                continue;
            }
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("inside").to_string_lossy();
                out.insert(rel.into_owned(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// A spawn of a worker in a worktree of its own.
pub fn spawn_worktree(name: &str, message: &str) -> Value {
    json!({"call": "spawn_agent", "args": {
        "task_name": name, "agent_type": "worker", "message": message, "isolation": "worktree"
    }})
}

/// A worker that runs `cmd` once and then answers `answer`.
pub fn worker(path: &str, cmd: &str, answer: &str) -> Value {
    json!({"match": path, "responses": [
        [{"call": "exec_command", "args": {"cmd": cmd}}],
        [{"say": answer}]
    ]})
}

/// The parsed JSON of a tool's output.
pub fn parsed(output: &str) -> Value {
    serde_json::from_str(output).unwrap_or_else(|err| panic!("not JSON ({err}): {output}"))
}

/// The sed command that replaces line `from` of [`FILE`] with `to`.
pub fn replace(from: &str, to: &str) -> String {
    format!("sed -i 's/^{from}$/{to}/' f.txt")
}
