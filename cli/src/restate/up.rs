//! `arbor engine up`: a local Restate server and one worker for development. Starts the
//! server (its data in the arbor home), starts `arbor worker`, registers it, prints the URLs
//! and how to add workers, and stops both at SIGINT or SIGTERM.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use arbor_restate::{LocalServer, ServerSpec, register_deployment};

use crate::args::UpArgs;
use crate::error::CliError;

/// The server executable: the flag, `$ARBOR_RESTATE_SERVER`, else `restate-server` on PATH.
fn server_program(flag: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(path) = flag {
        return Ok(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("ARBOR_RESTATE_SERVER").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("restate-server"))
            .find(|path| path.is_file())
    });
    found.ok_or_else(|| {
        CliError::usage(
            "cannot find restate-server: install it (npm install @restatedev/restate-server) \
             and put it on PATH, or set ARBOR_RESTATE_SERVER",
        )
    })
}

pub fn up(home: &Path, args: &UpArgs) -> Result<u8, CliError> {
    let program = server_program(args.restate_server.as_deref())?;
    let dir = args.dir.clone().unwrap_or_else(|| home.join("restate"));
    let spec = ServerSpec {
        program,
        dir,
        ingress_port: args.ingress_port,
        admin_port: args.admin_port,
        node_port: args.node_port,
        partitions: 4,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::failed(format!("cannot start the runtime: {err}")))?;
    runtime.block_on(async {
        let mut server = LocalServer::start(spec).await.map_err(super::failed)?;
        server
            .ready(Duration::from_secs(60))
            .await
            .map_err(super::failed)?;
        let exe = std::env::current_exe()
            .map_err(|err| CliError::failed(format!("cannot find the arbor binary: {err}")))?;
        let mut worker = Command::new(&exe)
            .args(["worker", "--engine", "restate", "--listen"])
            .arg(args.worker.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|err| CliError::failed(format!("cannot start arbor worker: {err}")))?;
        let listening = worker.stdout.take().and_then(|out| {
            BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .find(|line| line.starts_with("listening on"))
        });
        if listening.is_none() {
            let _ = worker.kill();
            return Err(CliError::failed("arbor worker did not start listening"));
        }
        let uri = format!("http://{}", args.worker);
        if let Err(err) = register_deployment(&server.admin_url(), &uri).await {
            let _ = worker.kill();
            return Err(super::failed(err));
        }
        println!("restate ingress: {}", server.ingress_url());
        println!("restate admin:   {}", server.admin_url());
        println!("worker:          {uri} (pid {})", worker.id());
        println!(
            "run a tree:      arbor exec --engine restate --restate-url {} --script FILE PROMPT",
            server.ingress_url()
        );
        println!(
            "add a worker:    arbor worker --engine restate --listen {} (it shares the address)",
            args.worker
        );
        println!(
            "or another address, then: curl -X POST {}/deployments -H 'content-type: application/json' -d '{{\"uri\": \"http://ADDR\"}}'",
            server.admin_url()
        );
        let _ = tokio::signal::ctrl_c().await;
        let _ = worker.kill();
        let _ = worker.wait();
        server.kill().await;
        Ok(0)
    })
}
