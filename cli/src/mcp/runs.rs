//! The trees `arbor mcp-server` runs: each is an `arbor exec --json` (or `arbor followup
//! --json`) child process of the server, so a tree behaves exactly as on the command line
//! (lease, durability, exit codes) and the server stays responsive. Its event lines are kept
//! as short progress lines for `answer`; the read commands and `send`/`approve` run as
//! `arbor` child processes too, over the same CLI contract.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::watch;

/// How long a tree started for an MCP client waits for an approval, unless its options say
/// otherwise: the client answers with `approve`.
pub const DEFAULT_APPROVAL_WAIT_SECS: u64 = 600;

/// `start_tree`'s `options`: the flags of `arbor exec`, by name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeOptions {
    pub script: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub cwd: Option<String>,
    pub approval_policy: Option<String>,
    pub reviewer: Option<String>,
    pub sandbox: Option<String>,
    pub approval_wait: Option<u64>,
    pub max_depth: Option<u32>,
    pub max_running: Option<u64>,
    pub max_resident: Option<u64>,
    pub budget_tokens: Option<u64>,
    pub no_project_docs: Option<bool>,
}

impl TreeOptions {
    /// The run options as `arbor` flags.
    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        let mut text = |flag: &str, value: &Option<String>| {
            if let Some(value) = value {
                flags.push(format!("--{flag}"));
                flags.push(value.clone());
            }
        };
        text("script", &self.script);
        text("model", &self.model);
        text("provider", &self.provider);
        text("base-url", &self.base_url);
        text("cwd", &self.cwd);
        text("approval-policy", &self.approval_policy);
        text("reviewer", &self.reviewer);
        text("sandbox", &self.sandbox);
        let numbers = [
            (
                "approval-wait",
                Some(self.approval_wait.unwrap_or(DEFAULT_APPROVAL_WAIT_SECS)),
            ),
            ("max-depth", self.max_depth.map(u64::from)),
            ("max-running", self.max_running),
            ("max-resident", self.max_resident),
            ("budget-tokens", self.budget_tokens),
        ];
        for (flag, value) in numbers {
            if let Some(value) = value {
                flags.push(format!("--{flag}"));
                flags.push(value.to_string());
            }
        }
        if self.no_project_docs == Some(true) {
            flags.push("--no-project-docs".to_string());
        }
        flags
    }
}

/// What a run has reported so far.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// One short line per event, in order.
    pub lines: Vec<String>,
    /// The final message of `session.completed`, or the last completed turn's.
    pub final_message: Option<String>,
    /// Set when the process has exited.
    pub exit_code: Option<i32>,
    /// Its stderr, once it has exited (errors name the problem there).
    pub stderr: String,
    /// The root's last status (`agent.status` of `/root`), for saying how the session ended.
    pub root_status: Option<arbor_protocol::AgentStatus>,
}

/// One tree run by this server.
#[derive(Debug)]
pub struct Run {
    pub progress: watch::Receiver<Progress>,
    pid: Option<u32>,
}

/// Every run of this server, by session id, and where `arbor` state lives.
#[derive(Debug)]
pub struct Runs {
    home: PathBuf,
    exe: PathBuf,
    by_session: Mutex<HashMap<String, Arc<Run>>>,
    /// The options each session was started with, for a later follow-up.
    options: Mutex<HashMap<String, TreeOptions>>,
}

impl Runs {
    pub fn new(home: PathBuf) -> Result<Self, String> {
        let exe = std::env::current_exe()
            .map_err(|err| format!("cannot find the arbor executable: {err}"))?;
        Ok(Self {
            home,
            exe,
            by_session: Mutex::new(HashMap::new()),
            options: Mutex::new(HashMap::new()),
        })
    }

    fn arbor(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.arg("--home").arg(&self.home).stdin(Stdio::null());
        cmd
    }

    /// The run of `session` started here, if any (a prefix of at least 8 characters works).
    pub fn run(&self, session: &str) -> Option<(String, Arc<Run>)> {
        let runs = self
            .by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        runs.iter()
            .find(|(id, _)| {
                id.as_str() == session || (session.len() >= 8 && id.starts_with(session))
            })
            .map(|(id, run)| (id.clone(), Arc::clone(run)))
    }

    /// Starts `arbor exec --json` on `prompt`; the session id once the session has started.
    pub async fn start(&self, prompt: &str, options: TreeOptions) -> Result<String, String> {
        let mut cmd = self.arbor();
        cmd.arg("exec")
            .arg("--json")
            .args(options.flags())
            .arg("--")
            .arg(prompt);
        let session = self.spawn(cmd, None).await?;
        self.options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.clone(), options);
        Ok(session)
    }

    /// Starts `arbor followup --json` of a stopped session with the options it was started
    /// with here (if it was).
    pub async fn follow_up(
        &self,
        session: &str,
        target: &str,
        message: &str,
    ) -> Result<String, String> {
        let options = self
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .cloned()
            .unwrap_or_default();
        let mut cmd = self.arbor();
        cmd.arg("followup")
            .arg("--json")
            .args(options.flags())
            .arg("--")
            .arg(session)
            .arg(target)
            .arg(message);
        self.spawn(cmd, Some(session.to_string())).await
    }

    /// Spawns a run and follows its events; returns its session id (from `session.started`,
    /// or `known`).
    async fn spawn(
        &self,
        mut cmd: tokio::process::Command,
        known: Option<String>,
    ) -> Result<String, String> {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|err| format!("cannot start arbor: {err}"))?;
        let pid = child.id();
        let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err("cannot read arbor's output".to_string());
        };
        let (progress, watched) = watch::channel(Progress::default());
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<String>();
        let stderr_text = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        tokio::spawn(async move {
            let mut started = Some(started_tx);
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(event) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if event["type"] == "session.started"
                    && let (Some(id), Some(tx)) = (event["session_id"].as_str(), started.take())
                {
                    let _ = tx.send(id.to_string());
                }
                progress.send_modify(|p| note(p, &event));
            }
            let status = child.wait().await;
            let stderr = stderr_text.await.unwrap_or_default();
            progress.send_modify(|p| {
                p.exit_code = Some(status.ok().and_then(|s| s.code()).unwrap_or(-1));
                p.stderr = stderr;
            });
        });
        let session = match known {
            Some(session) => session,
            None => match started_rx.await {
                Ok(session) => session,
                Err(_) => {
                    // It ended before the session started: say why, as arbor did.
                    let mut watched = watched.clone();
                    let ended = watched
                        .wait_for(|p| p.exit_code.is_some())
                        .await
                        .map(|p| p.clone())
                        .unwrap_or_default();
                    return Err(format!(
                        "arbor exec failed (exit {}): {}",
                        ended.exit_code.unwrap_or(-1),
                        ended.stderr.trim()
                    ));
                }
            },
        };
        let run = Arc::new(Run {
            progress: watched,
            pid,
        });
        self.by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.clone(), run);
        Ok(session)
    }

    /// Runs `arbor ARGS` to its end: its stdout, or an error with its stderr.
    pub async fn command(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .arbor()
            .args(args)
            .output()
            .await
            .map_err(|err| format!("cannot run arbor: {err}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    /// Ends every run still going (SIGTERM: running turns end as interrupted and everything is
    /// persisted, so each tree can be resumed) and waits for them.
    pub async fn stop_all(&self) {
        let runs: Vec<Arc<Run>> = self
            .by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for run in runs {
            if run.progress.borrow().exit_code.is_some() {
                continue;
            }
            if let Some(pid) = run.pid.and_then(|pid| i32::try_from(pid).ok()) {
                // SAFETY: kill(2) takes integers; the pid is our own child's, not yet reaped
                // (its exit code is not in yet).
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let mut progress = run.progress.clone();
            let _ = progress.wait_for(|p| p.exit_code.is_some()).await;
        }
    }
}

/// The last progress line: how the root's last turn ended (the session "completed" only when
/// it completed).
fn ended(root: Option<&arbor_protocol::AgentStatus>) -> String {
    use arbor_protocol::AgentStatus;
    match root {
        Some(AgentStatus::Completed(_)) | None => "session completed".to_string(),
        Some(AgentStatus::Errored(reason)) => format!("session ended: the root errored: {reason}"),
        Some(AgentStatus::Interrupted(reason)) => {
            format!("session ended: the root was interrupted: {reason}")
        }
        Some(other) => format!("session ended: the root is {other}"),
    }
}

/// Adds one event to the progress: a short line, and the final message when it says one.
fn note(progress: &mut Progress, event: &Value) {
    let kind = event["type"].as_str().unwrap_or_default();
    let path = event["path"].as_str().unwrap_or("");
    let line = match kind {
        "agent.spawned" => Some(format!("spawned {path}")),
        "turn.started" => Some(format!("{path}: turn started")),
        "tool.call" => Some(format!(
            "{path}: {}",
            event["name"].as_str().unwrap_or_default()
        )),
        "approval.requested" => Some(format!(
            "{path}: approval requested ({})",
            event["id"].as_str().unwrap_or_default()
        )),
        "approval.decided" => Some(format!(
            "approval {}: {}",
            event["id"].as_str().unwrap_or_default(),
            event["outcome"].as_str().unwrap_or_default()
        )),
        "turn.completed" => {
            if let Some(text) = event["last_message"].as_str() {
                progress.final_message = Some(text.to_string());
            }
            Some(format!("{path}: turn completed"))
        }
        "turn.aborted" => Some(format!(
            "{path}: turn aborted: {}",
            event["reason"].as_str().unwrap_or_default()
        )),
        "agent.status" => {
            if path == "/root" {
                progress.root_status = serde_json::from_value(event["status"].clone()).ok();
            }
            None
        }
        "session.completed" => {
            if let Some(text) = event["final_message"].as_str() {
                progress.final_message = Some(text.to_string());
            }
            Some(ended(progress.root_status.as_ref()))
        }
        _ => None,
    };
    progress.lines.extend(line);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Progress, note};

    #[test]
    fn the_progress_says_how_the_session_ended() {
        let mut progress = Progress::default();
        note(
            &mut progress,
            &json!({"type": "agent.status", "path": "/root", "status": {"errored": "script exhausted for /root"}}),
        );
        note(
            &mut progress,
            &json!({"type": "session.completed", "final_message": null}),
        );
        assert_eq!(
            progress.lines,
            ["session ended: the root errored: script exhausted for /root"]
        );
        let mut progress = Progress::default();
        note(
            &mut progress,
            &json!({"type": "agent.status", "path": "/root", "status": {"completed": "ok"}}),
        );
        note(
            &mut progress,
            &json!({"type": "session.completed", "final_message": "ok"}),
        );
        assert_eq!(progress.lines, ["session completed"]);
    }
}
