//! Running the user's `git`: found on `PATH`, its version checked once per process, every
//! command with the settings that could run a program turned off and its repository's config
//! checked first (`vet.rs`), in the C locale, and without the environment variables that would
//! point git at another repository, index or object store.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::WorktreeError;
use crate::vet::{NEUTRALISED, vet};

/// The oldest git arbor's worktrees work with (`git worktree remove`, `restore`-era plumbing).
pub const MIN_VERSION: Version = Version(2, 25, 0);

/// Variables git reads to find its repository (`git rev-parse --local-env-vars`) and a few
/// that change what a command does: a parent process's (a hook's) must not leak into arbor's.
const CLEARED: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
];

/// A git version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

impl Version {
    /// The version in `git --version` output (`git version 2.39.2`, `git version
    /// 2.45.1.windows.1`, `git version 2.25.0-rc1`).
    pub fn parse(text: &str) -> Option<Version> {
        let rest = text.trim().strip_prefix("git version ")?;
        let mut numbers = rest
            .split(|c: char| !c.is_ascii_digit())
            .map(|part| part.parse::<u32>());
        let major = numbers.next()?.ok()?;
        let minor = numbers.next()?.ok()?;
        let patch = numbers.next().and_then(Result::ok).unwrap_or(0);
        Some(Version(major, minor, patch))
    }
}

/// The user's git, checked.
#[derive(Debug, Clone)]
pub struct Git {
    program: PathBuf,
    version: Version,
}

/// What one command printed.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) code: i32,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

impl Git {
    /// The `git` on `PATH`, found and checked once per process.
    pub fn system() -> Result<Git, WorktreeError> {
        static SYSTEM: OnceLock<Result<Git, WorktreeError>> = OnceLock::new();
        SYSTEM.get_or_init(|| Git::at("git")).clone()
    }

    /// The git at `program` (a path, or a name looked up on `PATH`), if it is recent enough.
    pub fn at(program: impl Into<PathBuf>) -> Result<Git, WorktreeError> {
        let program = program.into();
        let out = Command::new(&program)
            .arg("--version")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .output()
            .map_err(|err| WorktreeError::GitMissing(format!("{}: {err}", program.display())))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = Version::parse(&text).ok_or_else(|| {
            WorktreeError::GitMissing(format!(
                "{} --version printed `{}`",
                program.display(),
                text.trim()
            ))
        })?;
        if version < MIN_VERSION {
            return Err(WorktreeError::GitTooOld { found: version });
        }
        Ok(Git { program, version })
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// A git command in `dir`: every setting that could run a program off, C locale, no
    /// inherited repository variables, no terminal prompts, stdin closed.
    fn command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.current_dir(dir);
        for setting in NEUTRALISED {
            cmd.args(["-c", setting]);
        }
        cmd.env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null());
        for name in CLEARED {
            cmd.env_remove(name);
        }
        cmd
    }

    /// Runs `git args` in `dir` with `env` set; stdout when it exits 0.
    pub(crate) fn run_env(
        &self,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &OsStr)],
    ) -> Result<Vec<u8>, WorktreeError> {
        let out = self.output(dir, args, env, None)?;
        if out.code != 0 {
            return Err(self.failed(dir, args, &out.stderr));
        }
        Ok(out.stdout)
    }

    /// Runs `git args` in `dir`; stdout when it exits 0.
    pub(crate) fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, WorktreeError> {
        self.run_env(dir, args, &[])
    }

    /// Runs `git args` in `dir`; stdout as text, trimmed.
    pub(crate) fn text(&self, dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
        let out = self.run(dir, args)?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Runs `git args` in `dir` with `env` and `input` on stdin; every exit code is returned.
    pub(crate) fn output(
        &self,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &OsStr)],
        input: Option<&[u8]>,
    ) -> Result<Output, WorktreeError> {
        vet(dir)?;
        let mut cmd = self.command(dir);
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (name, value) in env {
            cmd.env(name, value);
        }
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd
            .spawn()
            .map_err(|err| self.spawn_failed(dir, args, &err))?;
        let writer = match (input, child.stdin.take()) {
            (Some(input), Some(mut stdin)) => {
                let input = input.to_vec();
                // A thread, so a command that writes while it reads never blocks on us.
                Some(std::thread::spawn(move || stdin.write_all(&input)))
            }
            _ => None,
        };
        let out = child
            .wait_with_output()
            .map_err(|err| self.spawn_failed(dir, args, &err))?;
        if let Some(writer) = writer {
            // A command that stops reading early (an error) closes its end: its exit says why.
            let _ = writer.join();
        }
        Ok(Output {
            code: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// Runs `git args` in `dir` with `env`, keeping at most `max` bytes of stdout (its head
    /// and tail); returns them and the whole output's size.
    pub(crate) fn run_bounded(
        &self,
        dir: &Path,
        args: &[&str],
        max: usize,
        env: &[(&str, &OsStr)],
    ) -> Result<(Vec<u8>, Vec<u8>, u64), WorktreeError> {
        vet(dir)?;
        let mut cmd = self.command(dir);
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (name, value) in env {
            cmd.env(name, value);
        }
        let mut child = cmd
            .spawn()
            .map_err(|err| self.spawn_failed(dir, args, &err))?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        });
        let mut head = Vec::new();
        let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
        let mut total = 0u64;
        if let Some(mut stdout) = child.stdout.take() {
            let mut buf = [0u8; 64 * 1024];
            loop {
                let n = match stdout.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(err) => return Err(self.spawn_failed(dir, args, &err)),
                };
                total += n as u64;
                let mut chunk = &buf[..n];
                let room = (max / 2).saturating_sub(head.len());
                let take = room.min(chunk.len());
                head.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
                tail.extend(chunk);
                let keep = max - max / 2;
                while tail.len() > keep {
                    tail.pop_front();
                }
            }
        }
        let status = child
            .wait()
            .map_err(|err| self.spawn_failed(dir, args, &err))?;
        let stderr = stderr
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default();
        if !status.success() {
            return Err(self.failed(dir, args, stderr.trim()));
        }
        Ok((head, tail.into_iter().collect(), total))
    }

    fn failed(&self, dir: &Path, args: &[&str], stderr: &str) -> WorktreeError {
        WorktreeError::Git {
            command: args.join(" "),
            dir: dir.to_path_buf(),
            stderr: if stderr.is_empty() {
                "it failed without a message".to_string()
            } else {
                stderr.to_string()
            },
        }
    }

    fn spawn_failed(&self, dir: &Path, args: &[&str], err: &std::io::Error) -> WorktreeError {
        WorktreeError::Git {
            command: args.join(" "),
            dir: dir.to_path_buf(),
            stderr: format!("could not run {}: {err}", self.program.display()),
        }
    }
}

/// The author (and committer) of arbor's own commits: `arbor <agent path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Author {
    /// `arbor <path>` for the agent at `path`.
    pub fn arbor(path: &str) -> Author {
        Author {
            name: "arbor".to_string(),
            email: path.to_string(),
        }
    }

    /// The variables that make a commit this author's (and committer's).
    pub(crate) fn env(&self) -> [(&'static str, &OsStr); 4] {
        [
            ("GIT_AUTHOR_NAME", OsStr::new(&self.name)),
            ("GIT_AUTHOR_EMAIL", OsStr::new(&self.email)),
            ("GIT_COMMITTER_NAME", OsStr::new(&self.name)),
            ("GIT_COMMITTER_EMAIL", OsStr::new(&self.email)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_what_git_prints() {
        assert_eq!(
            Version::parse("git version 2.39.2\n"),
            Some(Version(2, 39, 2))
        );
        assert_eq!(
            Version::parse("git version 2.45.1.windows.1"),
            Some(Version(2, 45, 1))
        );
        assert_eq!(
            Version::parse("git version 2.25.0-rc1"),
            Some(Version(2, 25, 0))
        );
        assert_eq!(Version::parse("git version 3.0"), Some(Version(3, 0, 0)));
        assert_eq!(Version::parse("hub version 2.14.2"), None);
        assert!(Version(2, 24, 9) < MIN_VERSION && Version(2, 25, 0) >= MIN_VERSION);
    }

    #[test]
    fn a_git_too_old_or_missing_is_named() {
        let dir = tempfile::tempdir().expect("dir");
        let fake = dir.path().join("git");
        std::fs::write(&fake, "#!/bin/sh\necho 'git version 2.20.1'\n").expect("fake git");
        make_executable(&fake);
        let err = Git::at(&fake).expect_err("too old");
        assert_eq!(
            err.to_string(),
            "git 2.20.1 is too old: worktrees need git 2.25.0 or newer"
        );
        let err = Git::at(dir.path().join("nothing")).expect_err("missing");
        assert!(
            err.to_string().starts_with("git was not found (")
                && err
                    .to_string()
                    .ends_with("worktrees need git 2.25.0 or newer on PATH"),
            "{err}"
        );
    }

    fn make_executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}
