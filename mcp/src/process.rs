//! A stdio server's process: started under arbor's supervisor (so everything it starts is
//! killed with it, also when arbor dies), with a core environment plus its `env`, and the last
//! bytes of its stderr and stdout kept to explain a failure.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;

use crate::config::{ServerDirs, expand, server_cwd};

/// Bytes of stderr and of stdout kept for error messages.
const TAIL_BYTES: usize = 1024;

/// What a server printed last and how it ended, for error messages.
#[derive(Debug)]
pub(crate) struct Diagnostics {
    stderr: Mutex<Vec<u8>>,
    stdout: Mutex<Vec<u8>>,
    exit: Mutex<Option<String>>,
    /// True once the process has exited (a child of it may still hold its stdout open).
    exited: tokio::sync::watch::Sender<bool>,
}

impl Default for Diagnostics {
    fn default() -> Self {
        Self {
            stderr: Mutex::default(),
            stdout: Mutex::default(),
            exit: Mutex::default(),
            exited: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl Diagnostics {
    /// Resolves once the process has exited; never for a server without a process.
    pub(crate) async fn exited(&self) {
        let mut exited = self.exited.subscribe();
        let _ = exited.wait_for(|exited| *exited).await;
    }

    fn push(buffer: &Mutex<Vec<u8>>, bytes: &[u8]) {
        let mut tail = buffer.lock().unwrap_or_else(PoisonError::into_inner);
        tail.extend_from_slice(bytes);
        if tail.len() > TAIL_BYTES {
            let cut = tail.len() - TAIL_BYTES;
            tail.drain(..cut);
        }
    }

    /// How the process ended (`exit status 3`, `killed by signal 9`), once it has.
    pub(crate) fn exit(&self) -> Option<String> {
        self.exit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// ` (exit status 3; its stderr ends with "…")`: what is known of why the server stopped
    /// answering; with `output`, also what it last wrote on stdout (for a failed start).
    pub(crate) fn describe(&self, output: bool) -> String {
        let mut parts = Vec::new();
        if let Some(exit) = self.exit() {
            parts.push(exit);
        }
        let quote = |buffer: &Mutex<Vec<u8>>| {
            let bytes = buffer.lock().unwrap_or_else(PoisonError::into_inner);
            let text = String::from_utf8_lossy(&bytes).trim().to_string();
            (!text.is_empty()).then_some(text)
        };
        if let Some(stderr) = quote(&self.stderr) {
            parts.push(format!("its stderr ends with {stderr:?}"));
        }
        if let Some(stdout) = quote(&self.stdout).filter(|_| output) {
            parts.push(format!("its last output was {stdout:?}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    }
}

/// A running stdio server: its pipes for the MCP transport and the handle that stops it.
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) stdout: TailReader<ChildStdout>,
    pub(crate) stdin: ChildStdin,
    pub(crate) handle: Handle,
}

/// Stops a server's process tree; dropped, it stops it too.
#[derive(Debug)]
pub(crate) struct Handle {
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
}

impl Handle {
    /// Kills the process and everything it started, and waits until that is done.
    pub(crate) async fn kill(self) {
        let _ = self.stop.send(());
        let _ = self.done.await;
    }
}

/// Starts `command args` in `cwd` (relative to the workspace; `{workspace}` expanded), else in
/// the home's MCP folder, with the core environment and `env`.
pub(crate) async fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&str>,
    dirs: &ServerDirs,
    diagnostics: &Arc<Diagnostics>,
) -> Result<Process, String> {
    let workspace = dirs.workspace.as_path();
    let dir = server_cwd(cwd, dirs);
    if cwd.is_none() {
        std::fs::create_dir_all(&dir)
            .map_err(|err| format!("could not make {}: {err}", dir.display()))?;
    }
    let environment = arbor_tools::ShellEnvironment {
        inherit: arbor_tools::Inherit::Core,
        set: env.clone(),
        ..arbor_tools::ShellEnvironment::default()
    };
    let mut cmd = std::process::Command::new(expand(command, workspace));
    cmd.args(args.iter().map(|arg| expand(arg, workspace)))
        .current_dir(&dir)
        .env_clear()
        .envs(environment.build_from_process())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut contained = arbor_tools::Contained::spawn(cmd)
        .await
        .map_err(|err| format!("could not start `{command}` in {}: {err}", dir.display()))?;
    let (Some(stdin), Some(stdout), stderr) = (
        contained.child.stdin.take(),
        contained.child.stdout.take(),
        contained.child.stderr.take(),
    ) else {
        return Err(format!(
            "could not start `{command}`: its pipes are missing"
        ));
    };
    if let Some(mut stderr) = stderr {
        let diagnostics = Arc::clone(diagnostics);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tracing::debug!(stderr = %String::from_utf8_lossy(&buf[..n]), "mcp server");
                Diagnostics::push(&diagnostics.stderr, &buf[..n]);
            }
        });
    }
    let (stop, mut stopped) = oneshot::channel::<()>();
    let watched = Arc::clone(diagnostics);
    let done = tokio::spawn(async move {
        tokio::select! {
            status = contained.exited() => {
                let text = match status {
                    Ok(status) => describe_status(status),
                    Err(err) => format!("its supervisor failed: {err}"),
                };
                *watched.exit.lock().unwrap_or_else(PoisonError::into_inner) = Some(text);
                watched.exited.send_replace(true);
                // What it left running dies with it, once arbor lets go of the server.
                let _ = (&mut stopped).await;
                contained.kill().await;
            }
            _ = &mut stopped => contained.kill().await,
        }
    });
    Ok(Process {
        stdout: TailReader {
            inner: stdout,
            diagnostics: Arc::clone(diagnostics),
        },
        stdin,
        handle: Handle { stop, done },
    })
}

fn describe_status(status: i32) -> String {
    use std::os::unix::process::ExitStatusExt;
    let status = std::process::ExitStatus::from_raw(status);
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended".to_string(),
    }
}

/// A server's stdout as the transport reads it, keeping its last bytes.
#[derive(Debug)]
pub(crate) struct TailReader<R> {
    inner: R,
    diagnostics: Arc<Diagnostics>,
}

impl<R: AsyncRead + Unpin> AsyncRead for TailReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            Diagnostics::push(&self.diagnostics.stdout, &buf.filled()[before..]);
        }
        polled
    }
}
