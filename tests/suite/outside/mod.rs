//! What arbor does outside the sandbox, attacked by the agent it runs: a scripted model builds
//! each trap with its own sandboxed commands, then gets arbor to act on it; nothing may be run
//! or written outside the sandbox (a marker in a directory no sandbox can write stays absent),
//! and the refusals say why. Each trap is then sprung once the way arbor used to spring it, to
//! show that it is real.

mod git;
mod mcp_cwd;
mod merge_race;

use std::path::Path;

/// Commands that make the workspace (or `dir` in it) a git repository whose config runs
/// `touch <marker>` from everything git does with files: a filter on every path (clean and
/// smudge), the fsmonitor and a hook. Only git run outside the sandbox could make the marker.
pub fn git_trap(dir: &str, marker: &Path) -> String {
    let touch = format!("touch {}", marker.display());
    format!(
        "cd {dir} && git init -q && git config filter.x.clean '{touch}; cat' && \
         git config filter.x.smudge '{touch}; cat' && git config core.fsmonitor '{touch} #' && \
         printf '#!/bin/sh\\n{touch}\\n' > .git/hooks/post-checkout && \
         chmod +x .git/hooks/post-checkout && printf '* filter=x\\n' > .gitattributes && \
         printf 'x\\n' > trapped.txt"
    )
}

/// Springs a [`git_trap`] the way arbor's git once did (plain `git add -A` outside the
/// sandbox): the marker appears, so the trap is real. Removes it again.
pub fn spring_git_trap(dir: &Path, marker: &Path) {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["add", "-A"])
        .env("GIT_INDEX_FILE", dir.join(".git/spring-index"))
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(marker.exists(), "the trap in {} is not real", dir.display());
    std::fs::remove_file(marker).expect("marker");
}
