//! One worker process: the services it serves, the models it has built, the step log, and
//! the listener (`SO_REUSEPORT`, so several worker processes can share one address and the
//! kernel spreads Restate's connections over them).

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use arbor_model::{ModelClient, ScriptedModel};
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use restate_sdk::endpoint::Endpoint;
use restate_sdk::hyper::HyperEndpoint;
use serde_json::json;

use crate::RestateError;
use crate::agent::Agent;
use crate::session::Session;

/// What the handlers of one worker process share.
#[derive(Default)]
pub struct Worker {
    /// The scripted model of each session and part of its script (an agent's wake carries
    /// the part it reads), built on first use.
    models: Mutex<HashMap<(String, String), Arc<ScriptedModel>>>,
    /// The HTTP model this process was started with (`--provider`), which sessions without a
    /// script ask. Its keys are in this process's environment only.
    http: Option<Arc<dyn ModelClient>>,
    /// Where journaled steps are logged, when asked (`--step-log`).
    log: Option<Mutex<std::fs::File>>,
    /// How many steps this process has run.
    steps: AtomicU64,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("http", &self.http.as_ref().map(|model| model.provider()))
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker that logs each journaled step it runs to `step_log` (one JSON line each:
    /// `ts_ns`, `pid`, `step`, `key`, `index`, `phase`), when given.
    pub fn new(step_log: Option<&Path>) -> Result<Self, RestateError> {
        let log = match step_log {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| RestateError::Io {
                        what: format!("open {}", path.display()),
                        source,
                    })?,
            )),
            None => None,
        };
        Ok(Self {
            log,
            ..Self::default()
        })
    }

    /// This worker with `model` for the sessions without a script.
    #[must_use]
    pub fn with_model(mut self, model: Arc<dyn ModelClient>) -> Self {
        self.http = Some(model);
        self
    }

    /// The HTTP model this worker was started with, if any.
    pub fn http_model(&self) -> Option<Arc<dyn ModelClient>> {
        self.http.clone()
    }

    /// The scripted model of a session's part of its script (one per session, part and
    /// process; its cursors are set from the agent's durable count before each request).
    pub fn model(&self, session: &str, script: &str) -> Result<Arc<ScriptedModel>, String> {
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (session.to_string(), script.to_string());
        if let Some(model) = models.get(&key) {
            return Ok(model.clone());
        }
        let model = ScriptedModel::from_part(script).map_err(|error| error.to_string())?;
        model.set_recording(false);
        let model = Arc::new(model);
        models.insert(key, model.clone());
        Ok(model)
    }

    /// Logs one phase of a journaled step (`ask` when it starts running here, `acked` when its
    /// result came back journaled). Each line is one `write`, so a killed process leaves whole
    /// lines.
    pub fn log_step(&self, step: &str, key: &str, index: usize, phase: &str) {
        if phase == "ask" {
            self.steps.fetch_add(1, Ordering::Relaxed);
        }
        let Some(log) = &self.log else {
            return;
        };
        let ts_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let line = json!({
            "ts_ns": ts_ns.to_string(),
            "pid": std::process::id(),
            "step": step,
            "key": key,
            "index": index,
            "phase": phase,
        });
        let mut file = log.lock().unwrap_or_else(PoisonError::into_inner);
        // A lost log line only weakens what a test can check; the step itself is unaffected.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }

    /// How many steps this process has started.
    pub fn steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }
}

/// The endpoint serving arbor's services with `worker`.
pub fn endpoint(worker: Arc<Worker>) -> Endpoint {
    Endpoint::builder()
        .bind(Session)
        .bind(crate::events::Events)
        .bind(Agent::new(worker))
        .build()
}

/// Binds `addr` with `SO_REUSEPORT` (so other workers may bind it too).
pub fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, RestateError> {
    let io = |source| RestateError::Io {
        what: format!("listen on {addr}"),
        source,
    };
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .map_err(io)?;
    socket.set_reuseaddr(true).map_err(io)?;
    socket.set_reuseport(true).map_err(io)?;
    socket.bind(addr).map_err(io)?;
    socket.listen(1024).map_err(io)
}

/// Serves arbor's services on `listener` until `stop` completes. Each connection is served
/// over HTTP/2 with `TCP_NODELAY` (Restate streams small frames both ways within one
/// invocation; without it, Nagle's algorithm and delayed acknowledgements add tens of
/// milliseconds to every exchange).
pub async fn serve(
    listener: tokio::net::TcpListener,
    worker: Arc<Worker>,
    stop: impl std::future::Future,
) {
    serve_endpoint(listener, endpoint(worker), stop).await;
}

/// Serves `endpoint`'s services on `listener` until `stop` completes, as [`serve`] does
/// arbor's (the benchmarks serve services of their own this way).
pub async fn serve_endpoint(
    listener: tokio::net::TcpListener,
    endpoint: Endpoint,
    stop: impl std::future::Future,
) {
    let endpoint = HyperEndpoint::new(endpoint);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    continue;
                };
                // Without it the connection still works, only slower.
                let _ = stream.set_nodelay(true);
                let service = endpoint.clone();
                tokio::spawn(async move {
                    let connection = http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service);
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "a connection ended with an error");
                    }
                });
            }
            _ = &mut stop => break,
        }
    }
}
