//! The local Restate server arbor starts leaves nothing behind: the npm package's launcher
//! starts the real binary, and both are gone once the server is dropped.

use std::time::Duration;

use arbor_restate::{LocalServer, ServerSpec};

/// The processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let cmdline = entry.path().join("cmdline");
        if let Ok(bytes) = std::fs::read(&cmdline) {
            let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
            if text.contains(needle) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[test]
fn a_dropped_server_leaves_no_process_behind() {
    let program = arbor_tests::tools::npm_bin("restate-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let spec = ServerSpec::on_free_ports(program, dir.path().join("restate")).expect("ports");
    let config = dir.path().join("restate").join("restate.toml");
    let needle = config.display().to_string();
    let mut server = runtime
        .block_on(LocalServer::start(spec))
        .expect("start restate-server");
    runtime
        .block_on(server.ready(Duration::from_secs(90)))
        .expect("ready");
    assert!(
        processes_mentioning(&needle).len() >= 2,
        "the launcher and the server: {:?}",
        processes_mentioning(&needle)
    );
    drop(server);
    super::cluster::wait_until(Duration::from_secs(30), "the server to exit", || {
        processes_mentioning(&needle).is_empty()
    });
}
