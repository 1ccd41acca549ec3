//! Test support: a Restate server and worker processes, the step logs they write, and runs of
//! `arbor exec --engine restate`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use arbor_protocol::{AgentPath, EventLine};
use arbor_restate::wire::{AgentHistory, AgentRow};
use arbor_restate::{Ingress, LocalServer, ServerSpec, free_port, register_deployment};
use serde_json::Value;

/// One worker process and its step log.
pub struct WorkerProc {
    pub child: Child,
    pub log: PathBuf,
}

impl WorkerProc {
    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A server, its workers on one shared address, and a temporary directory for everything.
/// (Fields drop in order: the processes before the directory they use.)
pub struct Cluster {
    pub workers: Vec<WorkerProc>,
    pub server: LocalServer,
    pub worker_addr: String,
    pub runtime: tokio::runtime::Runtime,
    /// Flags and environment every worker gets (`start_with`).
    pub worker_args: Vec<String>,
    pub worker_env: Vec<(String, String)>,
    pub dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts the server and `workers` worker processes on one address, registered as one
    /// deployment.
    pub fn start(workers: usize) -> Self {
        Self::start_with(workers, &[], &[])
    }

    /// [`Cluster::start`] with `extra_worker_args` on every worker's command line and `env`
    /// in its environment (a provider, its key).
    pub fn start_with(workers: usize, extra_worker_args: &[&str], env: &[(&str, &str)]) -> Self {
        let program = arbor_tests::tools::npm_bin("restate-server");
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let spec = ServerSpec::on_free_ports(program, dir.path().join("restate")).expect("ports");
        let mut server = runtime
            .block_on(LocalServer::start(spec))
            .expect("start restate-server");
        runtime
            .block_on(server.ready(Duration::from_secs(90)))
            .unwrap_or_else(|err| panic!("{err}: {}", log_tail(&server.log())));
        let port = free_port().expect("port");
        let worker_addr = format!("127.0.0.1:{port}");
        let mut cluster = Self {
            dir,
            server,
            workers: Vec::new(),
            worker_addr,
            runtime,
            worker_args: extra_worker_args.iter().map(ToString::to_string).collect(),
            worker_env: env
                .iter()
                .map(|(name, value)| ((*name).to_string(), (*value).to_string()))
                .collect(),
        };
        for _ in 0..workers {
            cluster.add_worker();
        }
        let uri = format!("http://{}", cluster.worker_addr);
        cluster
            .runtime
            .block_on(register_deployment(&cluster.server.admin_url(), &uri))
            .expect("register the deployment");
        cluster
    }

    /// Starts one more worker on the shared address; returns once it listens.
    pub fn add_worker(&mut self) {
        let n = self.workers.len();
        let log = self.dir.path().join(format!("worker-{n}.steps.jsonl"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args([
                "worker",
                "--engine",
                "restate",
                "--listen",
                &self.worker_addr,
            ])
            .arg("--step-log")
            .arg(&log)
            .args(&self.worker_args)
            .envs(self.worker_env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start arbor worker");
        let out = child.stdout.take().expect("stdout");
        let line = BufReader::new(out).lines().next();
        assert!(
            matches!(&line, Some(Ok(text)) if text.starts_with("listening on")),
            "the worker did not start: {line:?}"
        );
        self.workers.push(WorkerProc { child, log });
    }

    /// Kills the server (SIGKILL) and starts it again on the same data and ports.
    pub fn restart_server(&mut self) {
        let spec = self.server.spec.clone();
        self.runtime.block_on(self.server.kill());
        self.server = self
            .runtime
            .block_on(LocalServer::start(spec))
            .expect("start restate-server again");
        let server = &mut self.server;
        self.runtime
            .block_on(server.ready(Duration::from_secs(90)))
            .unwrap_or_else(|err| panic!("{err}: {}", log_tail(&server.log())));
    }

    pub fn ingress(&self) -> Ingress {
        Ingress::new(&self.server.ingress_url()).expect("ingress client")
    }

    /// `arbor exec --engine restate --json` with `script` (written to a file) and `prompt`,
    /// as a running child.
    pub fn spawn_exec(&self, script: &Value, prompt: &str) -> Child {
        let path = self.dir.path().join(format!("script-{}.json", unique()));
        std::fs::write(&path, script.to_string()).expect("write the script");
        Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(["exec", "--engine", "restate", "--json", "--restate-url"])
            .arg(self.server.ingress_url())
            .arg("--script")
            .arg(&path)
            .arg("--cwd")
            .arg(self.dir.path())
            .arg(prompt)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start arbor exec")
    }

    /// Runs `arbor exec` to its end (at most `within`).
    pub fn exec(&self, script: &Value, prompt: &str, within: Duration) -> Run {
        let child = self.spawn_exec(script, prompt);
        Run::finish(child, within)
    }

    /// `arbor ARGS --engine restate --restate-url URL`, to its end.
    pub fn arbor(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(args)
            .args(["--engine", "restate", "--restate-url"])
            .arg(self.server.ingress_url())
            .output()
            .expect("run arbor")
    }

    pub fn agents(&self, session: &str) -> Vec<AgentRow> {
        self.runtime
            .block_on(self.ingress().agents(session))
            .expect("agents")
    }

    pub fn history(&self, session: &str, path: &AgentPath) -> AgentHistory {
        self.runtime
            .block_on(self.ingress().history(session, path))
            .expect("history")
    }
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(4000);
    text.get(start..).unwrap_or_default().to_string()
}

/// A finished `arbor exec`: exit code, events, the stdout lines that were not events.
pub struct Run {
    pub code: Option<i32>,
    pub events: Vec<EventLine>,
    pub stderr: String,
}

impl Run {
    /// Waits for `child` (killing it after `within`) and parses its output.
    pub fn finish(mut child: Child, within: Duration) -> Self {
        let started = Instant::now();
        let stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let err_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        let deadline = started + within;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let lines = reader.join().expect("stdout reader");
        let stderr = err_reader.join().expect("stderr reader");
        assert!(
            status.is_some(),
            "arbor exec did not finish within {within:?}: {stderr}"
        );
        let events = lines
            .iter()
            .map(|line| {
                serde_json::from_str::<EventLine>(line)
                    .unwrap_or_else(|err| panic!("not an event line ({err}): {line}"))
            })
            .collect();
        Self {
            code: status.and_then(|s| s.code()),
            events,
            stderr,
        }
    }

    /// The session id of the `session.started` event.
    pub fn session(&self) -> String {
        self.events
            .iter()
            .find_map(|line| match &line.event {
                arbor_protocol::Event::SessionStarted { session_id, .. } => {
                    Some(session_id.to_string())
                }
                _ => None,
            })
            .expect("a session.started event")
    }

    /// `session.completed`'s final message.
    pub fn final_message(&self) -> Option<String> {
        self.events.iter().find_map(|line| match &line.event {
            arbor_protocol::Event::SessionCompleted { final_message, .. } => final_message.clone(),
            _ => None,
        })
    }

    /// The outputs of `path`'s tool calls named `name`, in order.
    pub fn outputs(&self, path: &str, name: &str) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|line| match &line.event {
                arbor_protocol::Event::ToolResult {
                    path: p,
                    name: n,
                    output,
                    ..
                } if n == name && p.as_str() == path => Some(output.clone()),
                _ => None,
            })
            .collect()
    }
}

/// One line of a worker's step log.
#[derive(Debug, Clone)]
pub struct StepLine {
    pub ts_ns: u128,
    pub pid: u64,
    pub step: String,
    pub key: String,
    pub index: u64,
    pub phase: String,
}

/// Every whole line of the step log at `path` (a killed worker may leave a torn last one).
pub fn step_lines(path: &Path) -> Vec<StepLine> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|value| StepLine {
            ts_ns: value["ts_ns"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("ts_ns"),
            pid: value["pid"].as_u64().expect("pid"),
            step: value["step"].as_str().expect("step").to_string(),
            key: value["key"].as_str().expect("key").to_string(),
            index: value["index"].as_u64().expect("index"),
            phase: value["phase"].as_str().expect("phase").to_string(),
        })
        .collect()
}

/// Waits until `ready` holds (checked every few milliseconds), at most `within`.
pub fn wait_until(within: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The steps of every log: (step, key, index) → its lines, in time order.
pub fn steps_by_id(logs: &[PathBuf]) -> BTreeMap<(String, String, u64), Vec<StepLine>> {
    let mut all: Vec<StepLine> = logs.iter().flat_map(|log| step_lines(log)).collect();
    all.sort_by_key(|line| line.ts_ns);
    let mut by_id: BTreeMap<(String, String, u64), Vec<StepLine>> = BTreeMap::new();
    for line in all {
        by_id
            .entry((line.step.clone(), line.key.clone(), line.index))
            .or_default()
            .push(line);
    }
    by_id
}
