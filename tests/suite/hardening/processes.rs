//! Every process an agent starts is killed when the session stops or the turn is interrupted,
//! also one that left its process group and session (`nohup setsid … &`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use arbor_tests::Session;
use serde_json::json;

use crate::cli::{Workspace, text};
use crate::resume::write_script;

/// Starts `sleep 1000` in the background, out of the command's group and session; its pid
/// goes to `bg.pid` in the workspace.
const BACKGROUND: &str =
    "nohup setsid sh -c 'echo $$ > bg.pid; exec sleep 1000' > /dev/null 2>&1 < /dev/null &";

/// Kills the process on drop, should a test fail with it still running.
struct Reap(i32);

impl Drop for Reap {
    fn drop(&mut self) {
        if self.0 > 0 && ours(self.0) {
            // SAFETY: kill(2) takes integers; the pid runs the test's own sleep.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// Whether `pid` is in the process table, not a zombie, running the test's `sleep 1000` (or
/// the shell about to become it).
fn ours(pid: i32) -> bool {
    let running = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    });
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    running && String::from_utf8_lossy(&cmdline).contains("1000")
}

/// Waits (bounded) until `pid` has left the process table.
fn gone(pid: i32) -> bool {
    (0..1000).any(|_| {
        let gone = !ours(pid);
        if !gone {
            std::thread::sleep(Duration::from_millis(10));
        }
        gone
    })
}

/// Waits (bounded) for the pid file the background process writes.
fn pid_in(dir: &Path) -> i32 {
    for _ in 0..1000 {
        if let Some(pid) = std::fs::read_to_string(dir.join("bg.pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the background process never wrote its pid");
}

#[test]
fn a_background_nohup_setsid_sleep_is_gone_after_the_session_stops() {
    let ws = Workspace::new();
    let script = write_script(
        &ws,
        "bg.json",
        &json!({"agents": [{"match": "/root", "responses": [
            [{"call": "exec_command", "args": {"cmd": BACKGROUND}}],
            // The session ends only once the background process has written its pid.
            [{"call": "exec_command", "args": {
                "cmd": "while [ ! -s bg.pid ]; do sleep 0.01; done; cat bg.pid",
                "timeout_ms": 60000}}],
            [{"say": "started"}]]}]}),
    );
    let out = ws
        .arbor()
        .args(["exec", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(ws.project())
        .arg("start a server")
        .stdin(Stdio::null())
        .output()
        .expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pid = pid_in(&ws.project());
    let _reap = Reap(pid);
    assert!(gone(pid), "sleep 1000 (pid {pid}) outlived the session");
}

#[tokio::test]
async fn an_interrupted_turn_leaves_no_background_process() {
    let script = json!({"agents": [{"match": "/root", "responses": [
        [{"call": "exec_command", "args": {"cmd": BACKGROUND}}],
        [{"call": "exec_command", "args": {"cmd": "sleep 600", "timeout_ms": 600000}}],
        [{"say": "never"}]]}]});
    let s = Session::new(script, |_| {}).await;
    s.orch.start("start a server").await.expect("root starts");
    let dir = s.workspace().to_path_buf();
    let pid = tokio::task::spawn_blocking(move || pid_in(&dir))
        .await
        .expect("join");
    let _reap = Reap(pid);
    assert!(ours(pid), "the background process runs while the turn does");
    s.orch.interrupt_all("user_interrupt");
    s.orch.wait_quiescent().await;
    let ended = tokio::task::spawn_blocking(move || gone(pid))
        .await
        .expect("join");
    assert!(
        ended,
        "sleep 1000 (pid {pid}) outlived the interrupted turn"
    );
}
