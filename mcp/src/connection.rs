//! One live connection to a server (and, for stdio, its process under arbor's supervisor):
//! the start and the protocol's handshake within the startup timeout, what is known of why the
//! process exited, and the shutdown that kills its process tree.

use crate::config::ServerDirs;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient, RunningService};

use crate::config::{ServerConfig, Transport};
use crate::process::{self, Diagnostics};

/// How long a stopping server may take to close its connection before it is killed.
const CLOSE_GRACE: Duration = Duration::from_millis(200);

/// arbor's side of the protocol: it offers no capabilities to servers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArborClient;

impl rmcp::ClientHandler for ArborClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("arbor", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// One live connection (and, for stdio, its process).
#[derive(Debug)]
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ArborClient>>>,
    process: Mutex<Option<process::Handle>>,
    diagnostics: Arc<Diagnostics>,
}

impl Connection {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    pub(crate) fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Whether the connection is gone (its transport closed, or its process exited).
    pub(crate) fn closed(&self) -> bool {
        self.peer.is_transport_closed() || self.diagnostics.exit().is_some()
    }

    /// Closes the connection and kills the process tree.
    pub(crate) async fn shutdown(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(CLOSE_GRACE).await;
        }
        let process = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(process) = process {
            process.kill().await;
        }
    }

    /// Why the process exited, once its watcher has seen it (within 100 ms), for a message.
    pub(crate) async fn exit_reason(&self) -> String {
        for _ in 0..20 {
            if self.diagnostics.exit().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.diagnostics.describe(false)
    }
}

/// Starts the server and completes the protocol's handshake, within the startup timeout.
pub(crate) async fn connect(
    config: &ServerConfig,
    dirs: &ServerDirs,
) -> Result<Arc<Connection>, String> {
    let diagnostics = Arc::new(Diagnostics::default());
    let timeout = config.startup_timeout;
    let late = |diagnostics: &Diagnostics| {
        format!(
            "it did not answer `initialize` within {} ms (startup_timeout_ms){}",
            timeout.as_millis(),
            diagnostics.describe(true)
        )
    };
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let process =
                process::spawn(command, args, env, cwd.as_deref(), dirs, &diagnostics).await?;
            let process::Process {
                stdout,
                stdin,
                handle,
            } = process;
            let served = tokio::time::timeout(timeout, ArborClient.serve((stdout, stdin))).await;
            match served {
                Ok(Ok(service)) => Ok(Arc::new(Connection {
                    peer: service.peer().clone(),
                    service: tokio::sync::Mutex::new(Some(service)),
                    process: Mutex::new(Some(handle)),
                    diagnostics,
                })),
                Ok(Err(err)) => {
                    let why = format!("the handshake failed: {err}{}", diagnostics.describe(true));
                    handle.kill().await;
                    Err(why)
                }
                Err(_) => {
                    let why = late(&diagnostics);
                    handle.kill().await;
                    Err(why)
                }
            }
        }
        Transport::Http {
            url,
            bearer_token_env_var,
        } => {
            let transport = crate::http::transport(url, bearer_token_env_var.as_deref())?;
            match tokio::time::timeout(timeout, ArborClient.serve(transport)).await {
                Ok(Ok(service)) => Ok(Arc::new(Connection {
                    peer: service.peer().clone(),
                    service: tokio::sync::Mutex::new(Some(service)),
                    process: Mutex::new(None),
                    diagnostics,
                })),
                Ok(Err(err)) => Err(format!("the handshake with {url} failed: {err}")),
                Err(_) => Err(late(&diagnostics)),
            }
        }
    }
}
