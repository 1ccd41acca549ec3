//! Running one `exec_command`: spawn in its own process group, capture, time out, report.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::args::{ExecArgs, ExecConfig};
use super::capture::HeadTail;
use super::contain::Supervision;
use super::env::ShellEnvironment;
use super::group::{CommandGuard, LiveProcesses};
use super::launcher::{Launcher, PlainLauncher};
use crate::ToolError;

/// One command ready to run: everything the model asked for, resolved and checked.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The shell command, passed to `bash -c`.
    pub command: String,
    /// The resolved working directory (it may turn out not to exist; that is a result).
    pub workdir: PathBuf,
    pub timeout: Duration,
    /// Bytes kept of each of stdout and stderr.
    pub max_output_bytes: usize,
    /// How long output is still read once the shell is gone before the group is killed.
    pub drain_grace: Duration,
    /// The launch seam: the sandbox, or [`PlainLauncher`].
    pub launcher: Arc<dyn Launcher>,
    /// The owner's live-subprocess count; this command counts while it runs.
    pub live: LiveProcesses,
    /// How the command's environment is built from arbor's (secrets left out by default).
    pub environment: Arc<ShellEnvironment>,
    /// Variables set on top of that environment for this command only.
    pub extra_env: Vec<(String, String)>,
}

impl ExecRequest {
    /// A request with the default limits, no sandbox and a fresh live count.
    pub fn new(command: impl Into<String>, workdir: impl Into<PathBuf>) -> Self {
        let config = ExecConfig::default();
        Self {
            command: command.into(),
            workdir: workdir.into(),
            timeout: Duration::from_millis(config.default_timeout_ms),
            max_output_bytes: config.max_output_bytes,
            drain_grace: Duration::from_millis(config.drain_grace_ms),
            launcher: Arc::new(PlainLauncher),
            live: LiveProcesses::new(),
            environment: Arc::new(ShellEnvironment::default()),
            extra_env: Vec::new(),
        }
    }

    /// Resolves the model's arguments against the agent's `cwd` and the limits of `config`.
    /// The launcher is [`PlainLauncher`] and the live count fresh until replaced.
    pub fn from_args(args: &ExecArgs, cwd: &Path, config: &ExecConfig) -> Result<Self, ToolError> {
        let timeout = args.timeout(config)?;
        Ok(Self {
            command: args.cmd.clone(),
            workdir: args.resolve_workdir(cwd),
            timeout,
            max_output_bytes: config.max_output_bytes,
            drain_grace: Duration::from_millis(config.drain_grace_ms),
            launcher: Arc::new(PlainLauncher),
            live: LiveProcesses::new(),
            environment: Arc::new(ShellEnvironment::default()),
            extra_env: Vec::new(),
        })
    }

    pub fn with_launcher(mut self, launcher: Arc<dyn Launcher>) -> Self {
        self.launcher = launcher;
        self
    }

    pub fn with_environment(mut self, environment: Arc<ShellEnvironment>) -> Self {
        self.environment = environment;
        self
    }

    /// Sets `name` to `value` for this command, on top of its environment.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_env.push((name.into(), value.into()));
        self
    }

    pub fn with_live(mut self, live: LiveProcesses) -> Self {
        self.live = live;
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_max_output_bytes(mut self, max_output_bytes: usize) -> Self {
        self.max_output_bytes = max_output_bytes;
        self
    }
}

/// What happened to a command. A non-zero exit, a timeout or a failure to start are all normal
/// outcomes the model reads. Serialises (field order kept, `signal` and `error` only when set)
/// to the JSON text of [`ExecOutcome::to_model_output`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecOutcome {
    /// The exit code; `None` when killed by a signal or never started.
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The command ran out of time and its process group was killed.
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The sandbox the command ran in, as the launcher labels it (`none` without one).
    pub sandbox: String,
    /// Why the command did not run (missing working directory, spawn failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Middle-truncated standard output.
    pub stdout: String,
    /// Middle-truncated standard error.
    pub stderr: String,
}

impl ExecOutcome {
    /// Exited with code 0.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// The JSON text the model reads, e.g. `{"exit_code":0,"timed_out":false,
    /// "duration_ms":3,"sandbox":"none","stdout":"hi\n","stderr":""}`.
    pub fn to_model_output(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|err| {
            // Unreachable for these field types; still give the model something readable.
            format!("{{\"error\":\"could not encode the result: {err}\"}}")
        })
    }

    fn not_started(error: String, started: Instant, sandbox: String) -> Self {
        Self {
            exit_code: None,
            signal: None,
            stdout: String::new(),
            stderr: String::new(),
            timed_out: false,
            duration_ms: elapsed_ms(started),
            sandbox,
            error: Some(error),
        }
    }
}

/// Runs `bash -c <command>` (or `sh -c` without bash) in its own process group with stdin
/// empty and the environment `req.environment` builds (no secrets by default), capturing stdout
/// and stderr concurrently in bounded buffers.
///
/// The command runs under a supervisor that adopts every process it starts (`contain.rs`), so
/// "everything it started" includes what left its process group (`setsid`, double forks). At
/// the timeout all of it is killed. When the shell exits but some process it left behind keeps
/// the output pipes open, output is read for the drain grace and then all of it is killed too.
/// Dropping the returned future (the agent was interrupted) kills all of it. While it runs the
/// command counts in `req.live`; processes it leaves running in the background stay in
/// `req.live` until they end or [`LiveProcesses::kill_all`].
pub async fn run_exec(req: ExecRequest) -> ExecOutcome {
    let started = Instant::now();
    let sandbox = req.launcher.sandbox_label().to_string();
    if let Err(error) = check_workdir(&req.workdir) {
        return ExecOutcome::not_started(error, started, sandbox);
    }

    let supervision = match Supervision::new() {
        Ok(supervision) => supervision,
        Err(err) => {
            let error = format!("could not start the command: cannot make its pipes: {err}");
            return ExecOutcome::not_started(error, started, sandbox);
        }
    };
    let mut command = std::process::Command::new(shell());
    command
        .arg("-c")
        .arg(&req.command)
        .current_dir(&req.workdir)
        .process_group(0)
        .env_clear()
        .envs(req.environment.build_from_process())
        .envs(req.extra_env.iter().map(|(n, v)| (n, v)));
    // The supervisor first: the launcher's hooks (the sandbox) then run in the command only.
    supervision.install(&mut command);
    if let Err(err) = req.launcher.prepare(&mut command) {
        return ExecOutcome::not_started(
            format!("could not start the command: {err}"),
            started,
            sandbox,
        );
    }
    let mut command = tokio::process::Command::from(command);
    // Never SIGKILL the supervisor: it must live to kill what the command started.
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    let spawned = command.spawn();
    let supervisor = supervision.started();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            return ExecOutcome::not_started(
                format!("could not start the command: {err}"),
                started,
                sandbox,
            );
        }
    };
    let mut guard = CommandGuard::new(supervisor.control, req.live.clone());
    let mut report = match Report::new(supervisor.report) {
        Ok(report) => report,
        Err(err) => {
            guard.kill();
            let error = format!("could not start the command: cannot watch it: {err}");
            return ExecOutcome::not_started(error, started, sandbox);
        }
    };
    if let Ok(pid) = report.int().await {
        guard.set_pgid(pid);
    }

    let stdout_pipe = child.stdout.take();
    let stderr_pipe = child.stderr.take();
    let mut stdout = HeadTail::new(req.max_output_bytes);
    let mut stderr = HeadTail::new(req.max_output_bytes);
    let mut timed_out = false;
    let (status, lingering) = {
        let io = async {
            tokio::join!(
                pump(stdout_pipe, &mut stdout),
                pump(stderr_pipe, &mut stderr)
            )
        };
        tokio::pin!(io);
        let deadline = tokio::time::sleep(req.timeout);
        tokio::pin!(deadline);
        let ended = report.ended();
        tokio::pin!(ended);
        let mut io_done = false;
        let ended = loop {
            tokio::select! {
                ended = &mut ended => break ended,
                _ = &mut io, if !io_done => io_done = true,
                _ = &mut deadline, if !timed_out => {
                    timed_out = true;
                    guard.kill();
                }
            }
        };
        let (status, lingering) = match ended {
            Ok((status, lingering)) => (Ok(status), lingering),
            Err(err) => {
                guard.kill_group();
                (Err(err), false)
            }
        };
        if !io_done
            && tokio::time::timeout(req.drain_grace, &mut io)
                .await
                .is_err()
        {
            // Something the command left behind holds the pipes: end it, then collect
            // whatever it had already written.
            guard.kill();
            let _ = tokio::time::timeout(req.drain_grace, &mut io).await;
        }
        (status, lingering)
    };
    if lingering {
        guard.finish(child);
    } else {
        // The supervisor is leaving: nothing it held runs. Reap it (it exits at once).
        drop(guard);
        let _ = tokio::time::timeout(req.drain_grace, child.wait()).await;
    }

    let (exit_code, signal, error) = match status {
        Ok(status) => {
            let status = std::process::ExitStatus::from_raw(status);
            (status.code(), status.signal(), None)
        }
        Err(err) => (
            None,
            None,
            Some(format!("could not wait for the command: {err}")),
        ),
    };
    ExecOutcome {
        exit_code,
        signal,
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        timed_out,
        duration_ms: elapsed_ms(started),
        sandbox,
        error,
    }
}

fn check_workdir(workdir: &Path) -> Result<(), String> {
    match std::fs::metadata(workdir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "working directory is not a directory: {}",
            workdir.display()
        )),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "working directory does not exist: {}",
            workdir.display()
        )),
        Err(err) => Err(format!(
            "cannot use working directory {}: {err}",
            workdir.display()
        )),
    }
}

/// What a command's supervisor reports: the command's pid, then its wait status and whether
/// anything it started still runs.
pub(super) struct Report(tokio::net::unix::pipe::Receiver);

impl Report {
    pub(super) fn new(fd: std::os::fd::OwnedFd) -> std::io::Result<Self> {
        tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map(Self)
    }

    pub(super) async fn int(&mut self) -> std::io::Result<i32> {
        let mut bytes = [0u8; 4];
        self.0.read_exact(&mut bytes).await?;
        Ok(i32::from_ne_bytes(bytes))
    }

    /// The command's wait status, and whether processes it started still run.
    pub(super) async fn ended(&mut self) -> std::io::Result<(i32, bool)> {
        let status = self.int().await.map_err(|err| match err.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                std::io::Error::other("its supervisor ended without reporting")
            }
            _ => err,
        })?;
        let lingering = self.int().await.unwrap_or(1) != 0;
        Ok((status, lingering))
    }
}

async fn pump<R: AsyncRead + Unpin>(pipe: Option<R>, sink: &mut HeadTail) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = vec![0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => sink.push(&buf[..n]),
        }
    }
}

/// `bash` from `PATH`, or `sh` when there is none.
fn shell() -> &'static Path {
    static SHELL: OnceLock<PathBuf> = OnceLock::new();
    SHELL.get_or_init(|| find_executable("bash").unwrap_or_else(|| PathBuf::from("sh")))
}

fn find_executable(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
