//! `arbor engine up`: a server and a worker from one command, a tree run against it, and
//! nothing left running after SIGINT.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use arbor_restate::free_port;
use serde_json::json;

use super::cluster::wait_until;
use super::server::processes_mentioning;

#[test]
fn engine_up_serves_a_tree_and_stops_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("restate");
    let port = |_: u8| free_port().expect("port").to_string();
    let (ingress, admin, node, worker) = (port(0), port(1), port(2), port(3));
    let mut up = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .arg("--home")
        .arg(dir.path().join("home"))
        .args(["engine", "up", "--dir"])
        .arg(&data)
        .args([
            "--ingress-port",
            &ingress,
            "--admin-port",
            &admin,
            "--node-port",
            &node,
        ])
        .args(["--worker", &format!("127.0.0.1:{worker}")])
        .env(
            "ARBOR_RESTATE_SERVER",
            arbor_tests::tools::npm_bin("restate-server"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start arbor engine up");
    let mut lines = BufReader::new(up.stdout.take().expect("stdout")).lines();
    let mut printed = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("a line");
        let last = line.starts_with("or another address");
        printed.push(line);
        if last {
            break;
        }
    }
    let url = format!("http://127.0.0.1:{ingress}");
    assert_eq!(printed[0], format!("restate ingress: {url}"), "{printed:?}");
    assert!(
        printed.iter().any(|line| line
            == &format!(
                "add a worker:    arbor worker --engine restate --listen 127.0.0.1:{worker} (it shares the address)"
            )),
        "{printed:?}"
    );
    let script = dir.path().join("script.json");
    let tree = json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "hello"}}],
            [{"call": "wait_agent", "args": {"mode": "all"}}],
            [{"say": "up and running"}]
        ]},
        {"match": "/root/w", "responses": [[{"say": "hi"}]]}
    ]});
    std::fs::write(&script, tree.to_string()).expect("script");
    let exec = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args([
            "exec",
            "--engine",
            "restate",
            "--restate-url",
            &url,
            "--script",
        ])
        .arg(&script)
        .arg("--cwd")
        .arg(dir.path())
        .arg("go")
        .output()
        .expect("arbor exec");
    assert!(
        exec.status.success(),
        "{}",
        String::from_utf8_lossy(&exec.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&exec.stdout), "up and running\n");
    let stderr = String::from_utf8_lossy(&exec.stderr);
    assert!(stderr.starts_with("session: "), "{stderr}");
    let status = Command::new("kill")
        .args(["-INT", &up.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let mut exited = None;
    wait_until(Duration::from_secs(60), "engine up to stop", || {
        exited = up.try_wait().expect("wait");
        exited.is_some()
    });
    assert!(exited.is_some_and(|status| status.success()), "{exited:?}");
    let needle = data.display().to_string();
    wait_until(Duration::from_secs(30), "the server to exit", || {
        processes_mentioning(&needle).is_empty()
    });
}
