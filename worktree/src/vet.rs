//! What arbor's own git runs with and checks before every command, so that nothing a
//! repository's config names runs outside the sandbox (`docs/sandbox.md`, "What arbor runs
//! outside the sandbox").
//!
//! Every setting git reads under a fixed name that could run a program is given on the command
//! line ([`NEUTRALISED`]), which wins over every config file. What cannot be given that way is
//! a filter driver (`filter.<name>.clean`, `smudge`, `process`: the name comes from the
//! attributes, which the agents write) and an `[include]` (which can bring in any key): a
//! repository whose own config has either, or `core.worktree` (which moves the files git
//! reads and writes elsewhere), is refused, naming the key and the file. The user's global and
//! system config are the user's and are read as git reads them.

use std::path::Path;

use arbor_tools::gitrepo::{ConfigEntry, config_entries, find_repository};

use crate::WorktreeError;

/// `-c` settings of every command arbor's git runs: hooks, the fsmonitor daemon, a pager,
/// automatic gc and maintenance, signing and every transport off.
pub(crate) const NEUTRALISED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "gc.auto=0",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "protocol.allow=never",
];

/// Refuses to run git in `dir` when its repository's own config could make git run a program
/// (or read another file, or work elsewhere) that [`NEUTRALISED`] does not turn off.
pub(crate) fn vet(dir: &Path) -> Result<(), WorktreeError> {
    let Some(repo) = find_repository(dir) else {
        return Ok(());
    };
    for file in repo.config_files() {
        let entries = config_entries(&file).map_err(|err| {
            WorktreeError::Refused(format!(
                "arbor runs git only where it can read the repository's config: {err}"
            ))
        })?;
        if let Some((entry, why)) = entries.iter().find_map(|e| risk(e).map(|why| (e, why))) {
            return Err(WorktreeError::Refused(format!(
                "arbor's own git runs nothing a repository's config names, and {} in {} {why}; \
                 remove it (or, if it is yours, move it to your global git config, as `git lfs \
                 install` does), or give the agent isolation \"shared\"",
                entry.name(),
                file.display()
            )));
        }
    }
    Ok(())
}

/// Why `entry` could make arbor's git run a program, read elsewhere or write elsewhere.
fn risk(entry: &ConfigEntry) -> Option<&'static str> {
    match entry.section.as_str() {
        "filter" => Some("names a program git would run on the files"),
        "include" | "includeif" => Some("makes git read another config file"),
        "core" if entry.key == "worktree" => Some("moves the files git reads and writes"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{git, repo_with, sh_git};
    use crate::{Repo, snapshot};

    /// A repository whose config sets a filter, an include or a work tree is refused before
    /// git runs: the filter's program never runs, and the refusal names the key and the file.
    #[test]
    fn a_config_that_could_run_a_program_is_refused_before_git_runs() {
        for (key, value) in [
            ("filter.x.clean", "touch ../pwned; cat"),
            ("include.path", "../elsewhere"),
            ("core.worktree", "/"),
        ] {
            let (dir, top) = repo_with(&[("a.txt", "a\n")]);
            let repo = Repo::discover(&git(), &top).expect("runs").expect("repo");
            std::fs::write(top.join(".gitattributes"), "* filter=x\n").expect("attributes");
            std::fs::write(top.join("a.txt"), "changed\n").expect("change");
            sh_git(&top, &["config", key, value]);
            let err = snapshot(&git(), &repo).expect_err("refused");
            let text = err.to_string();
            assert!(
                text.contains(key) && text.contains(".git/config"),
                "{key}: {text}"
            );
            assert!(!dir.path().join("pwned").exists(), "{key}: the filter ran");
        }
    }

    /// The neutralised settings win over the repository's: its fsmonitor and hooks never run.
    #[test]
    fn the_fsmonitor_and_hooks_of_a_repository_never_run() {
        let (dir, top) = repo_with(&[("a.txt", "a\n")]);
        let marker = dir.path().join("pwned");
        let script = format!("#!/bin/sh\ntouch {}\n", marker.display());
        let hook = top.join(".git/hooks/reference-transaction");
        std::fs::write(&hook, &script).expect("hook");
        let monitor = dir.path().join("monitor.sh");
        std::fs::write(&monitor, &script).expect("monitor");
        for file in [&hook, &monitor] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        sh_git(
            &top,
            &["config", "core.fsmonitor", &monitor.display().to_string()],
        );
        std::fs::write(top.join("a.txt"), "changed\n").expect("change");
        let repo = Repo::discover(&git(), &top).expect("runs").expect("repo");
        let (_, made) =
            crate::commit_work(&git(), &top, &crate::Author::arbor("/root"), "w").expect("commits");
        assert!(made);
        snapshot(&git(), &repo).expect("snapshot");
        assert!(!marker.exists(), "a hook or the fsmonitor ran");
    }
}
