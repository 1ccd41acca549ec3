//! Test support for the commands that act on a running Restate tree: an `arbor` process whose
//! `--json` events are read as they come (so a test waits on an event, never on a clock), and
//! `arbor` runs with a script written to a file.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cluster::Cluster;

/// How long a test waits for one event.
const EVENT_WAIT: Duration = Duration::from_secs(120);

/// A running `arbor … --json --engine restate` and the events it printed so far.
pub struct Driver {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Every event read so far, in order.
    pub events: Vec<Value>,
    /// The session, from `session.started` (or as given).
    pub session: String,
}

impl Driver {
    /// `arbor exec --engine restate --json` with `script`, `prompt` and `extra` flags.
    pub fn exec(cluster: &Cluster, script: &Value, prompt: &str, extra: &[&str]) -> Self {
        let script = write_script(cluster, script);
        let mut args: Vec<OsString> = vec!["exec".into(), "--json".into(), "--script".into()];
        args.push(script.into());
        args.push("--cwd".into());
        args.push(cluster.dir.path().into());
        args.extend(extra.iter().map(OsString::from));
        args.push(prompt.into());
        let mut driver = Self::spawn(cluster, &args);
        let started = driver.until(|e| e["type"] == "session.started");
        driver.session = started["session_id"]
            .as_str()
            .expect("session id")
            .to_string();
        driver
    }

    /// `arbor ARGS --engine restate --restate-url URL` with its stdout read line by line.
    pub fn spawn(cluster: &Cluster, args: &[OsString]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(args)
            .args(["--engine", "restate", "--restate-url"])
            .arg(cluster.server.ingress_url())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start arbor");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        Self {
            child,
            lines,
            stderr: Some(stderr),
            events: Vec::new(),
            session: String::new(),
        }
    }

    /// Reads events until one satisfies `wanted` (among those not yet returned by a wait);
    /// panics after two minutes or when the process ends first.
    pub fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + EVENT_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => panic!(
                    "no such event within {EVENT_WAIT:?}; got {:#?}",
                    self.events
                ),
            };
            let event: Value = serde_json::from_str(&line)
                .unwrap_or_else(|err| panic!("not an event line ({err}): {line}"));
            self.events.push(event.clone());
            if wanted(&event) {
                return event;
            }
        }
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits for the process to exit, reading the rest of its events.
    pub fn finish(mut self) -> Finished {
        let deadline = Instant::now() + EVENT_WAIT;
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            let event: Value = serde_json::from_str(&line)
                .unwrap_or_else(|err| panic!("not an event line ({err}): {line}"));
            self.events.push(event);
        }
        assert!(
            Instant::now() < deadline,
            "arbor did not finish within {EVENT_WAIT:?}"
        );
        let status = self.child.wait().expect("wait");
        let stderr = self
            .stderr
            .take()
            .map(|handle| handle.join().expect("stderr reader"))
            .unwrap_or_default();
        Finished {
            code: status.code(),
            stderr,
            events: std::mem::take(&mut self.events),
        }
    }

    /// The outputs of `path`'s tool calls named `name`, in order.
    pub fn outputs(&self, path: &str, name: &str) -> Vec<String> {
        outputs(&self.events, path, name)
    }
}

/// A finished `arbor` run: its exit code, stderr and every event it printed.
pub struct Finished {
    pub code: Option<i32>,
    pub stderr: String,
    pub events: Vec<Value>,
}

impl Finished {
    /// Asserts a zero exit code.
    pub fn ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        self
    }

    /// The outputs of `path`'s tool calls named `name`, in order.
    pub fn outputs(&self, path: &str, name: &str) -> Vec<String> {
        outputs(&self.events, path, name)
    }

    /// `session.completed`'s final message.
    pub fn final_message(&self) -> Option<String> {
        self.events
            .iter()
            .rev()
            .find(|e| e["type"] == "session.completed")
            .and_then(|e| e["final_message"].as_str().map(str::to_string))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The outputs of `path`'s tool calls named `name` among `events`, in order.
pub fn outputs(events: &[Value], path: &str, name: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool.result" && e["path"] == path && e["name"] == name)
        .filter_map(|e| e["output"].as_str().map(str::to_string))
        .collect()
}

/// Writes `script` to a new file of the cluster's directory.
pub fn write_script(cluster: &Cluster, script: &Value) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = cluster.dir.path().join(format!("script-{nanos}.json"));
    std::fs::write(&path, script.to_string()).expect("write the script");
    path
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that `out` succeeded and returns its stdout.
pub fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
}

/// Asserts that `out` failed with a usage error whose message is exactly `message`.
pub fn refused(out: &Output, message: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    assert_eq!(stderr(out).trim(), format!("error: {message}"));
}

/// An `exec_command` call that asks to run outside the sandbox.
pub fn escalated(cmd: &str) -> Value {
    serde_json::json!({"call": "exec_command", "args": {
        "cmd": cmd,
        "sandbox_permissions": "require_escalated",
        "justification": "the task needs it"
    }})
}
