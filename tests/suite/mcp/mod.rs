//! MCP: servers as agent tools (real servers from npm, and a misbehaving one of our own),
//! approvals of MCP calls, `arbor mcp list`, and `arbor mcp-server` driven by a real client.

mod approvals;
mod cached;
mod everything;
mod filesystem;
mod list;
mod misbehaving;
mod server;

use std::path::Path;
use std::time::Duration;

use arbor_mcp::{RawServer, ServerConfig};

/// A stdio server named `name` running `command args`, with `tweak` applied to its table.
pub fn stdio(
    name: &str,
    command: &str,
    args: &[String],
    tweak: impl FnOnce(&mut RawServer),
) -> ServerConfig {
    let mut raw = RawServer {
        command: Some(command.to_string()),
        args: Some(args.to_vec()),
        ..RawServer::default()
    };
    tweak(&mut raw);
    ServerConfig::from_raw(name, &raw)
        .expect("valid server")
        .expect("enabled")
}

/// The misbehaving server in `mode`, writing its pids to `pidfile`.
pub fn misbehaving(
    name: &str,
    mode: &str,
    pidfile: &Path,
    tweak: impl FnOnce(&mut RawServer),
) -> ServerConfig {
    let (command, args) = arbor_tests::tools::misbehaving_server(mode);
    stdio(name, &command, &args, |raw| {
        raw.env = Some(
            [("PIDFILE".to_string(), pidfile.display().to_string())]
                .into_iter()
                .collect(),
        );
        tweak(raw);
    })
}

/// Every pid the misbehaving servers wrote to `pidfile` (theirs and their grandchildren's).
pub fn pids(pidfile: &Path) -> Vec<i32> {
    std::fs::read_to_string(pidfile)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// Whether `pid` is in the process table (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Waits (bounded) until none of `pids` is in the process table; the ones still there.
pub fn left_running(pids: &[i32]) -> Vec<i32> {
    for _ in 0..500 {
        if pids.iter().all(|pid| !alive(*pid)) {
            return Vec::new();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    pids.iter().copied().filter(|pid| alive(*pid)).collect()
}

/// The names of the tools in the `n`th request `path` made.
pub fn offered(session: &arbor_tests::Session, path: &str, n: usize) -> Vec<String> {
    let requests = session
        .model
        .requests_for(&arbor_tests::Session::path(path));
    requests[n].tools.iter().map(|t| t.name.clone()).collect()
}
