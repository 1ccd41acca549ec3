//! A local Restate server process for development (`arbor engine up`) and the tests: its own
//! data directory, loopback ports, few partitions and a small memory budget. It runs under the
//! `tools` supervisor (`Contained`): the npm package's `restate-server` is a launcher that
//! starts the real binary, and the supervisor kills both when the server is dropped or arbor
//! dies.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arbor_tools::Contained;

use crate::RestateError;
use crate::client::healthy;

/// Where and how to run the server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The `restate-server` executable.
    pub program: PathBuf,
    /// Its data directory (and where its config and log go).
    pub dir: PathBuf,
    pub ingress_port: u16,
    pub admin_port: u16,
    pub node_port: u16,
    pub partitions: u32,
}

impl ServerSpec {
    /// A spec on free loopback ports.
    pub fn on_free_ports(program: PathBuf, dir: PathBuf) -> Result<Self, RestateError> {
        Ok(Self {
            program,
            dir,
            ingress_port: free_port()?,
            admin_port: free_port()?,
            node_port: free_port()?,
            partitions: 4,
        })
    }

    fn config(&self) -> String {
        let dir = self.dir.join("data");
        format!(
            "node-name = \"arbor\"\n\
             base-dir = \"{dir}\"\n\
             default-num-partitions = {partitions}\n\
             rocksdb-total-memory-size = \"256 MiB\"\n\
             log-filter = \"warn\"\n\
             listen-mode = \"tcp\"\n\
             bind-address = \"127.0.0.1:{node}\"\n\
             advertised-address = \"http://127.0.0.1:{node}/\"\n\
             \n[admin]\nbind-address = \"127.0.0.1:{admin}\"\n\
             \n[ingress]\nbind-address = \"127.0.0.1:{ingress}\"\n\
             \n[worker.invoker]\n\
             # One HTTP/2 connection per invocation stream, so workers sharing an address\n\
             # (SO_REUSEPORT) each get connections.\n\
             http2-streams-per-connection-limit = 1\n",
            dir = dir.display(),
            partitions = self.partitions,
            node = self.node_port,
            admin = self.admin_port,
            ingress = self.ingress_port,
        )
    }
}

/// A port the kernel says is free now.
pub fn free_port() -> Result<u16, RestateError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| RestateError::Io {
        what: "find a free port".to_string(),
        source,
    })?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|source| RestateError::Io {
            what: "find a free port".to_string(),
            source,
        })
}

/// A running server; killed (with everything it started) when dropped.
#[derive(Debug)]
pub struct LocalServer {
    server: Contained,
    pub spec: ServerSpec,
}

impl LocalServer {
    /// Writes the config and starts the server (its output goes to `server.log` in its dir).
    pub async fn start(spec: ServerSpec) -> Result<Self, RestateError> {
        let io = |what: &str, path: &Path| {
            let what = format!("{what} {}", path.display());
            move |source| RestateError::Io { what, source }
        };
        std::fs::create_dir_all(&spec.dir).map_err(io("create", &spec.dir))?;
        let config = spec.dir.join("restate.toml");
        std::fs::write(&config, spec.config()).map_err(io("write", &config))?;
        let log_path = spec.dir.join("server.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io("open", &log_path))?;
        let err = log.try_clone().map_err(io("open", &log_path))?;
        let mut command = Command::new(&spec.program);
        command
            .arg("--config-file")
            .arg(&config)
            .arg("--no-logo")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        let server = Contained::spawn(command)
            .await
            .map_err(|error| RestateError::Server {
                program: spec.program.display().to_string(),
                reason: error.to_string(),
            })?;
        Ok(Self { server, spec })
    }

    pub fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.spec.ingress_port)
    }

    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.spec.admin_port)
    }

    /// Waits until the admin API and the ingress both answer their health checks.
    pub async fn ready(&mut self, within: Duration) -> Result<(), RestateError> {
        let deadline = Instant::now() + within;
        let admin = format!("{}/health", self.admin_url());
        let ingress = format!("{}/restate/health", self.ingress_url());
        loop {
            if let Ok(Some(status)) = self.server.child.try_wait() {
                return Err(RestateError::Server {
                    program: self.spec.program.display().to_string(),
                    reason: format!("it exited with {status}; see {}", self.log().display()),
                });
            }
            if healthy(&admin).await && healthy(&ingress).await {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(RestateError::NotReady {
                    seconds: within.as_secs(),
                    detail: format!("see {}", self.log().display()),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The server's log file.
    pub fn log(&self) -> PathBuf {
        self.spec.dir.join("server.log")
    }

    /// The server's process id (the launcher's, which leads the server's process group).
    pub fn pid(&self) -> i32 {
        self.server.pid
    }

    /// Stops the server now (SIGKILL, with everything it started) and reaps it.
    pub async fn kill(&mut self) {
        self.server.kill().await;
    }
}
