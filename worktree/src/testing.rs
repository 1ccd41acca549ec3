//! Test support: repositories made with the real git in temporary directories.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Git;

/// The system's git (the tests need one).
pub fn git() -> Git {
    Git::system().expect("git 2.25 or newer is installed")
}

/// Runs git in `dir` as a user would, failing the test when it fails.
pub fn sh_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=tester", "-c", "user.email=t@example.com"])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Writes `files` (path, content) under `top`, making directories.
pub fn write(top: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let path = top.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write");
    }
}

/// A repository at `<tmp>/repo` with `files` committed on `main`.
pub fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let top = dir.path().join("repo");
    std::fs::create_dir(&top).expect("mkdir");
    sh_git(&top, &["init", "-q", "-b", "main"]);
    write(&top, files);
    sh_git(&top, &["add", "-A"]);
    sh_git(&top, &["commit", "-q", "-m", "init"]);
    (dir, top)
}
