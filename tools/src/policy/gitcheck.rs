//! Whether a `git` command `untrusted` would run without asking could run a program the
//! repository chose: git reads the repository's own config, where many keys name programs
//! (`core.fsmonitor`, `core.pager`, `diff.external`, `filter.*.clean`, `include.path`, …), so
//! `git status` in a repository someone else wrote can run anything.
//!
//! The repository each git command runs in is found as git finds it (its `-C` dirs from the
//! working directory, then up to the first `.git` or bare repository), and its config files
//! (the common `config`, a worktree's `config.worktree`, and every submodule's under
//! `modules/`) are read. Every key must be on a list of keys that only describe the
//! repository (`core.filemode`, `remote.*.url`, `branch.*.merge`, `user.name`, …); any other
//! key, an `[include]`, or a file that cannot be read makes the command need approval.
//!
//! What runs without asking then runs with [`GIT_HARDENING_ENV`]: `core.fsmonitor` off,
//! `core.hooksPath=/dev/null`, `cat` as pager, no optional index writes, so neither a hook nor a
//! daemon is started even by a key the user's own config sets (git 2.31 and later read these).

use std::path::{Path, PathBuf};

use super::Evaluation;
use super::shell::basename;
use crate::gitrepo::{GitRepository, config_entries, find_repository};

/// The environment read-only git runs with under `untrusted`.
pub const GIT_HARDENING_ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_COUNT", "3"),
    ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
    ("GIT_CONFIG_VALUE_0", "false"),
    ("GIT_CONFIG_KEY_1", "core.hooksPath"),
    ("GIT_CONFIG_VALUE_1", "/dev/null"),
    ("GIT_CONFIG_KEY_2", "core.pager"),
    ("GIT_CONFIG_VALUE_2", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_OPTIONAL_LOCKS", "0"),
];

/// Keys that only describe the repository: `section.key`, `section.*.key` (any subsection),
/// or `section.*` (any key of the section, with or without a subsection).
const SAFE_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.abbrev",
    "core.commentchar",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.checkstat",
    "core.trustctime",
    "core.untrackedcache",
    "core.splitindex",
    "core.preloadindex",
    "core.multipackindex",
    "core.compression",
    "core.loosecompression",
    "core.bigfilethreshold",
    "core.worktree",
    "core.excludesfile",
    "core.attributesfile",
    "core.warnambiguousrefs",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.prunetags",
    "remote.*.mirror",
    "remote.*.skipdefaultupdate",
    "remote.*.skipfetchall",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "branch.*.remote",
    "branch.*.pushremote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.description",
    "user.name",
    "user.email",
    "author.*",
    "committer.*",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "push.followtags",
    "fetch.prune",
    "fetch.prunetags",
    "extensions.objectformat",
    "extensions.refstorage",
    "extensions.worktreeconfig",
    "extensions.partialclone",
    "extensions.preciousobjects",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.*.shallow",
    "submodule.active",
    "gc.auto",
    "gc.autodetach",
    "index.version",
    "index.threads",
    "status.showuntrackedfiles",
    "status.short",
    "status.branch",
    "status.relativepaths",
    "status.aheadbehind",
    "status.renames",
    "diff.renames",
    "diff.algorithm",
    "diff.context",
    "diff.mnemonicprefix",
    "diff.noprefix",
    "diff.colormoved",
    "log.date",
    "log.decorate",
    "log.abbrevcommit",
    "merge.conflictstyle",
    "rerere.enabled",
    "color.*",
    "column.*",
    "advice.*",
    "i18n.*",
    "pack.*",
    "maintenance.auto",
];

/// Keys that are safe only with a boolean value (a path or command would run a program).
const BOOLEAN_ONLY: &[&str] = &["core.fsmonitor"];

/// Why some git command of `evaluation`, run from `workdir`, could run a program its
/// repository chose; `None` when none could. Blocking: it reads files.
pub fn git_config_risk(evaluation: &Evaluation, workdir: &Path) -> Option<String> {
    // `cd` moves the later commands (in order, as they were written).
    let mut dir = workdir.to_path_buf();
    for words in &evaluation.commands {
        let Some(name) = words.first().map(|w| basename(w)) else {
            continue;
        };
        match (name, words.get(1).map(String::as_str)) {
            ("cd" | "pushd", Some("-")) | ("cd" | "pushd", None) | ("popd", _) => {
                return Some(format!(
                    "`{}` moves git to a directory not checked",
                    words.join(" ")
                ));
            }
            ("cd" | "pushd", Some(to)) => dir = dir.join(to),
            ("git", _) => {
                if let Some(risk) = command_risk(words, &dir) {
                    return Some(risk);
                }
            }
            _ => {}
        }
    }
    None
}

fn command_risk(words: &[String], workdir: &Path) -> Option<String> {
    let mut dir = workdir.to_path_buf();
    let mut rest = words.get(1..).unwrap_or_default();
    while let Some((word, tail)) = rest.split_first() {
        match word.as_str() {
            "-C" => {
                let next = tail.first()?;
                dir = dir.join(next);
                rest = &tail[1..];
            }
            w if w.starts_with("--git-dir") || w.starts_with("--work-tree") => {
                return Some(format!(
                    "git with {w}: the repository it reads is not checked"
                ));
            }
            _ => break,
        }
    }
    let repo = find_repository(&dir)?;
    config_files(&repo)
        .into_iter()
        .find_map(|file| file_risk(&file))
}

/// The config files git reads for `repo` (those that exist), submodules' included.
fn config_files(repo: &GitRepository) -> Vec<PathBuf> {
    let mut files = repo.config_files();
    modules(&repo.common_dir.join("modules"), 0, &mut files);
    files.retain(|file| file.exists());
    files
}

fn modules(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    if depth > 4 {
        return;
    }
    for entry in entries.flatten() {
        let path = entry.path();
        if path.join("config").is_file() {
            files.push(path.join("config"));
            modules(&path.join("modules"), depth + 1, files);
        } else if path.is_dir() {
            // Submodule names may hold slashes.
            modules(&path, depth + 1, files);
        }
    }
}

/// The first key of the config file at `path` that is not known to be harmless.
fn file_risk(path: &Path) -> Option<String> {
    let entries = match config_entries(path) {
        Ok(entries) => entries,
        Err(err) => return Some(err),
    };
    entries
        .iter()
        .find(|e| !is_safe(&e.section, e.subsection.as_deref(), &e.key, &e.value))
        .map(|e| {
            format!(
                "{} in {} can make git run a program",
                e.name(),
                path.display()
            )
        })
}

fn is_safe(section: &str, subsection: Option<&str>, key: &str, value: &str) -> bool {
    if section == "include" || section == "includeif" {
        return false;
    }
    let exact = match subsection {
        Some(_) => format!("{section}.*.{key}"),
        None => format!("{section}.{key}"),
    };
    if BOOLEAN_ONLY.contains(&exact.as_str()) {
        let value = value.trim_matches('"').to_ascii_lowercase();
        return matches!(
            value.as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
        );
    }
    SAFE_KEYS.contains(&exact.as_str()) || SAFE_KEYS.contains(&format!("{section}.*").as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn risk(config: &str, cmd: &str) -> Option<String> {
        let ws = tempfile::tempdir().expect("workspace");
        let git = ws.path().join("sub/.git");
        std::fs::create_dir_all(&git).expect("git dir");
        std::fs::write(git.join("config"), config).expect("config");
        git_config_risk(&Policy::empty().evaluate(cmd), ws.path())
    }

    const PLAIN: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\
        \tbare = false\n[remote \"origin\"]\n\turl = git@example.com:a/b.git\n\
        \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
        \tmerge = refs/heads/main\n";

    #[test]
    fn a_plain_repository_is_safe() {
        assert_eq!(risk(PLAIN, "git -C sub status"), None);
        assert_eq!(risk(PLAIN, "cd sub && git log"), None);
        assert_eq!(
            risk(PLAIN, "git status"),
            None,
            "the workspace has no repository"
        );
        assert_eq!(
            risk("[core]\n\tfsmonitor = false\n", "git -C sub status"),
            None
        );
    }

    #[test]
    fn keys_that_run_programs_are_risks() {
        for config in [
            "[core]\n\tfsmonitor = \"touch pwned\"\n",
            "[core]\n\tpager = less; touch pwned\n",
            "[core]\nhooksPath = hooks\n",
            "[diff]\n\texternal = ./x\n",
            "[filter \"x\"]\n\tclean = ./x\n",
            "[include]\n\tpath = other\n",
            "[includeIf \"gitdir:/\"]\n\tpath = other\n",
            "[alias]\n\tst = !touch pwned\n",
            "[core] sshCommand = x\n",
        ] {
            let found = risk(&format!("{PLAIN}{config}"), "git -C sub status");
            assert!(
                found
                    .as_deref()
                    .is_some_and(|r| r.contains("can make git run a program")),
                "{config}: {found:?}"
            );
        }
    }

    #[test]
    fn cd_moves_the_git_that_follows() {
        let bad = "[core]\n\tfsmonitor = ./x\n";
        assert!(risk(bad, "cd sub && git status").is_some());
        assert!(risk(bad, "bash -lc 'cd sub; git log'").is_some());
        assert!(
            risk(bad, "git status; cd sub").is_none(),
            "git ran before the cd"
        );
        assert!(risk(PLAIN, "cd - && git status").is_some());
    }

    #[test]
    fn worktrees_and_submodules_are_read_too() {
        let ws = tempfile::tempdir().expect("workspace");
        let real = ws.path().join("real.git");
        std::fs::create_dir_all(real.join("modules/lib")).expect("dirs");
        std::fs::write(real.join("config"), PLAIN).expect("config");
        std::fs::write(
            real.join("modules/lib/config"),
            "[core]\n\tfsmonitor = ./x\n",
        )
        .expect("submodule config");
        std::fs::create_dir_all(ws.path().join("tree")).expect("tree");
        std::fs::write(
            ws.path().join("tree/.git"),
            format!("gitdir: {}\n", real.display()),
        )
        .expect(".git file");
        let eval = Policy::empty().evaluate("git -C tree status");
        let found = git_config_risk(&eval, ws.path());
        assert!(found.is_some_and(|r| r.contains("modules/lib/config")));
    }

    /// Even a repository whose config sets `core.fsmonitor` runs none under the hardening env
    /// (git 2.31 and later).
    #[tokio::test]
    async fn the_hardening_env_turns_the_fsmonitor_off() {
        let ws = tempfile::tempdir().expect("workspace");
        let init = crate::exec::run_exec(crate::exec::ExecRequest::new(
            "git init -q evil && printf '[core]\\n\\tfsmonitor = \"touch pwned #\"\\n' >> evil/.git/config",
            ws.path(),
        ))
        .await;
        assert_eq!(init.exit_code, Some(0), "{init:?}");
        let plain: std::sync::Arc<dyn crate::exec::Launcher> =
            std::sync::Arc::new(crate::exec::PlainLauncher);
        let hardened: std::sync::Arc<dyn crate::exec::Launcher> =
            std::sync::Arc::new(crate::exec::WithEnv::new(plain.clone(), GIT_HARDENING_ENV));
        let status = |launcher| {
            crate::exec::run_exec(
                crate::exec::ExecRequest::new("git -C evil status", ws.path())
                    .with_launcher(launcher),
            )
        };
        status(hardened).await;
        assert!(!ws.path().join("evil/pwned").exists(), "the fsmonitor ran");
        status(plain).await;
        assert!(
            ws.path().join("evil/pwned").exists(),
            "the check itself is sound"
        );
    }
}
