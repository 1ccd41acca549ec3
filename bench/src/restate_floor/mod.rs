//! `arbor-bench restate-floor`: what the Restate server itself costs on this machine, to read
//! the Restate engine's figures against. A `LocalServer` in a temporary directory (the
//! engine's configuration, on free ports) and the small `Floor` object served in this process
//! (as a worker serves arbor's), called through the HTTP ingress:
//!
//! - `one_key`: sequential calls of a handler doing nothing on one key;
//! - `many_keys`: the same kind of calls spread over K keys in flight at once;
//! - `run_step`: one journaled `ctx.run` against none (calls interleaved);
//! - `state`: reading and writing back a state value of each size, and the slope per KiB;
//! - `send_vs_call`: a handler sending one-way to another object against calling it.
//!
//! One JSON line per measure; latencies are medians over the calls, throughputs medians over
//! rounds. The CPU per call is the server's process group's and this process's (the client
//! and the served object) over the measure.

mod args;
mod measures;
mod service;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_restate::{LocalServer, ServerSpec, free_port, register_deployment};
use restate_sdk::endpoint::Endpoint;

pub use args::Options;

use crate::{bench_dir, cpu_seconds};

fn err(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// Runs every measure with the options `args` give.
pub fn run(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let program = server_program()?;
    let dir = bench_dir()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(async {
        let mut floor = Setup::start(program, dir.path()).await?;
        let result = measures::all(&floor, &options).await;
        floor.stop().await;
        result
    })
}

/// `$ARBOR_RESTATE_SERVER`, else the test tools' `restate-server`.
fn server_program() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ARBOR_RESTATE_SERVER").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let path = arbor_tests::tools::tools_dir().join("npm/node_modules/.bin/restate-server");
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "no Restate server at {}: run tests/tools/install.sh, or set ARBOR_RESTATE_SERVER",
            path.display()
        ))
    }
}

/// The server, the served object, and a client of the ingress.
struct Setup {
    server: LocalServer,
    caller: Caller,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Setup {
    /// Starts the server in `dir`, serves `Floor` on a free port, registers it, and waits
    /// until a call goes through.
    async fn start(program: PathBuf, dir: &Path) -> Result<Self, String> {
        let spec = ServerSpec::on_free_ports(program, dir.join("restate")).map_err(err)?;
        let mut server = LocalServer::start(spec).await.map_err(err)?;
        server.ready(Duration::from_secs(90)).await.map_err(err)?;
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port().map_err(err)?));
        let listener = arbor_restate::worker::bind(addr).map_err(err)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let endpoint = Endpoint::builder().bind(service::Floor).build();
        tokio::spawn(arbor_restate::worker::serve_endpoint(
            listener, endpoint, stopped,
        ));
        register_deployment(&server.admin_url(), &format!("http://{addr}"))
            .await
            .map_err(err)?;
        let caller = Caller::new(&server.ingress_url())?;
        let setup = Self {
            server,
            caller,
            stop: Some(stop),
        };
        setup.first_call().await?;
        Ok(setup)
    }

    /// The first call, once the ingress knows the new deployment (within 30 s).
    async fn first_call(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.caller.call("warm", "noop", Body::None).await {
                Ok(()) => return Ok(()),
                Err(error) if Instant::now() > deadline => {
                    return Err(format!("the Floor object never answered: {error}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// CPU seconds so far of the server's process group and of this process.
    fn cpu(&self) -> Cpu {
        Cpu {
            server: group_cpu(self.server.pid()),
            bench: cpu_seconds(),
        }
    }

    async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.server.kill().await;
    }
}

/// CPU seconds of the server and of this process at one moment.
#[derive(Debug, Clone, Copy)]
struct Cpu {
    server: f64,
    bench: f64,
}

impl Cpu {
    /// Milliseconds of CPU per call since `before`, over `calls`: (server, this process).
    fn per_call_since(self, before: Cpu, calls: usize) -> (f64, f64) {
        let per = |now: f64, then: f64| (now - then) * 1e3 / calls.max(1) as f64;
        (
            per(self.server, before.server),
            per(self.bench, before.bench),
        )
    }
}

/// CPU seconds of every process in process group `pgid`, from `/proc`.
fn group_cpu(pgid: i32) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return f64::NAN;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // After the name: state, ppid, pgrp.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(2) == Some(pgid.to_string().as_str())
        })
        .filter_map(|pid| crate::ui::process_cpu(pid).ok())
        .sum()
}

/// What a call sends.
#[derive(Debug, Clone)]
pub enum Body {
    None,
    /// JSON text.
    Json(String),
}

/// A client of the ingress (cheap to clone: the connections are shared).
#[derive(Debug, Clone)]
pub struct Caller {
    http: reqwest::Client,
    base: String,
}

impl Caller {
    fn new(base: &str) -> Result<Self, String> {
        // reqwest is built without a crypto provider; another part may have installed one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(err)?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_string(),
        })
    }

    /// Calls `handler` of the `Floor` object `key` and waits for its answer.
    pub async fn call(&self, key: &str, handler: &str, body: Body) -> Result<(), String> {
        let url = format!("{}/Floor/{key}/{handler}", self.base);
        let mut request = self.http.post(&url);
        if let Body::Json(text) = body {
            request = request
                .header("content-type", "application/json")
                .body(text);
        }
        let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| format!("{url}: {e}"))?;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("{url} answered {status}: {text}"))
        }
    }
}
