//! Tests of what a command leaves behind: processes that left its group (`setsid`) or were
//! orphaned are killed at the timeout, kept while they run, killed by `kill_all` and when the
//! owner's processes are dropped.

use std::time::Duration;

use super::tests::{pids, process_ends};
use super::*;

/// A process that leaves the command's group and session, prints its pid and sleeps.
const ESCAPE: &str = "setsid sh -c 'exec sleep 1000' > /dev/null 2>&1 < /dev/null & echo $!";

/// Waits (bounded) until `live` counts nothing.
async fn until_empty(live: &LiveProcesses) -> bool {
    for _ in 0..500 {
        if live.count() == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_timeout_kills_what_left_the_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = ExecRequest::new(format!("{ESCAPE}; sleep 100"), dir.path())
        .with_timeout(Duration::from_millis(500));
    let outcome = run_exec(req).await;
    assert!(outcome.timed_out, "{outcome:?}");
    let pids = pids(&outcome.stdout);
    assert_eq!(pids.len(), 1, "{}", outcome.stdout);
    assert!(
        process_ends(pids[0]),
        "the setsid process survived the timeout"
    );
}

#[tokio::test]
async fn background_processes_are_kept_until_kill_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = LiveProcesses::new();
    let outcome = run_exec(ExecRequest::new(ESCAPE, dir.path()).with_live(live.clone())).await;
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    let pids = pids(&outcome.stdout);
    assert_eq!(pids.len(), 1, "{}", outcome.stdout);
    assert_eq!(live.count(), 1, "the background process is counted");
    assert_eq!(live.lingering(), 1);
    live.kill_all();
    assert!(
        process_ends(pids[0]),
        "kill_all left the background process"
    );
    assert!(until_empty(&live).await, "its supervisor did not end");
}

#[tokio::test]
async fn dropping_the_owner_kills_its_background_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = LiveProcesses::new();
    let script = "(setsid sh -c 'exec sleep 1000' > /dev/null 2>&1 < /dev/null & echo $!) ; true";
    let outcome = run_exec(ExecRequest::new(script, dir.path()).with_live(live.clone())).await;
    let pids = pids(&outcome.stdout);
    assert_eq!(pids.len(), 1, "{}", outcome.stdout);
    assert_eq!(live.count(), 1);
    drop(live);
    assert!(process_ends(pids[0]), "dropping the owner left the process");
}

#[tokio::test]
async fn a_command_that_leaves_nothing_behind_is_not_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = LiveProcesses::new();
    for cmd in ["true", "sleep 0.01 & wait", "exit 3"] {
        run_exec(ExecRequest::new(cmd, dir.path()).with_live(live.clone())).await;
        assert_eq!(live.count(), 0, "{cmd}");
    }
}
