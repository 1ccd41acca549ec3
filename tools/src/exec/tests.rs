//! Tests of `exec_command`: results, working directories, truncation, timeouts and cancelling.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use super::*;

fn request(cmd: &str, dir: &Path) -> ExecRequest {
    ExecRequest::new(cmd, dir)
}

/// Waits (for an exit event, at most 10 s) until `pid` has terminated; true if it has.
pub(super) fn process_ends(pid: i32) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    let fd = fd as libc::c_int;
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `poll` points at one valid pollfd; `fd` is ours and closed once.
    let ready = unsafe { libc::poll(&mut poll, 1, 10_000) };
    unsafe { libc::close(fd) };
    ready == 1
}

pub(super) fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .map(|word| word.parse().expect("a pid"))
        .collect()
}

#[tokio::test]
async fn reports_exit_code_and_both_streams() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outcome = run_exec(request("echo out; echo err >&2; exit 3", dir.path())).await;
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.signal, None);
    assert_eq!(outcome.stdout, "out\n");
    assert_eq!(outcome.stderr, "err\n");
    assert!(!outcome.timed_out);
    assert!(!outcome.succeeded());
    assert_eq!(outcome.sandbox, "none");
    assert_eq!(outcome.error, None);

    let ok = run_exec(request("printf hi", dir.path())).await;
    assert!(ok.succeeded());
    assert_eq!(ok.stdout, "hi");
}

#[test]
fn model_output_is_json_with_optional_fields_left_out() {
    let mut outcome = ExecOutcome {
        exit_code: Some(1),
        signal: None,
        timed_out: false,
        duration_ms: 7,
        sandbox: "none".to_string(),
        error: None,
        stdout: "a\n".to_string(),
        stderr: String::new(),
    };
    assert_eq!(
        outcome.to_model_output(),
        r#"{"exit_code":1,"timed_out":false,"duration_ms":7,"sandbox":"none","stdout":"a\n","stderr":""}"#
    );
    outcome.exit_code = None;
    outcome.signal = Some(9);
    outcome.timed_out = true;
    assert_eq!(
        outcome.to_model_output(),
        r#"{"exit_code":null,"signal":9,"timed_out":true,"duration_ms":7,"sandbox":"none","stdout":"a\n","stderr":""}"#
    );
}

#[tokio::test]
async fn runs_in_the_workdir_resolved_against_the_cwd() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let args = ExecArgs::parse(r#"{"cmd": "pwd -P", "workdir": "sub"}"#).expect("args");
    let req = ExecRequest::from_args(&args, dir.path(), &ExecConfig::default()).expect("request");
    let outcome = run_exec(req).await;
    let expected = dir.path().join("sub").canonicalize().expect("canonical");
    assert_eq!(outcome.stdout.trim_end(), expected.to_str().expect("utf-8"));

    let args = ExecArgs::parse(r#"{"cmd": "pwd -P"}"#).expect("args");
    let req = ExecRequest::from_args(&args, dir.path(), &ExecConfig::default()).expect("request");
    let expected = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        run_exec(req).await.stdout.trim_end(),
        expected.to_str().expect("utf-8")
    );
}

#[tokio::test]
async fn a_missing_workdir_is_a_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope");
    let outcome = run_exec(request("true", &missing)).await;
    assert_eq!(outcome.exit_code, None);
    let error = format!("working directory does not exist: {}", missing.display());
    assert_eq!(outcome.error.as_deref(), Some(error.as_str()));
    let json: serde_json::Value =
        serde_json::from_str(&outcome.to_model_output()).expect("json output");
    assert_eq!(json["error"], error.as_str());
    assert_eq!(json["exit_code"], serde_json::Value::Null);

    let file = dir.path().join("file");
    std::fs::write(&file, "x").expect("write");
    let outcome = run_exec(request("true", &file)).await;
    let error = format!("working directory is not a directory: {}", file.display());
    assert_eq!(outcome.error.as_deref(), Some(error.as_str()));
}

#[tokio::test]
async fn huge_output_is_cut_in_the_middle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cmd = "printf START; head -c 20000000 /dev/zero | tr '\\0' a; printf END; \
               head -c 100000 /dev/zero >&2";
    let outcome = run_exec(request(cmd, dir.path()).with_max_output_bytes(1024)).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert!(
        outcome.stdout.starts_with("STARTaaa"),
        "{}",
        &outcome.stdout[..20]
    );
    assert!(outcome.stdout.ends_with("aaaEND"));
    let marker = format!("…[{} bytes truncated]…", 20_000_008 - 1024);
    assert!(outcome.stdout.contains(&marker));
    assert_eq!(outcome.stdout.len(), 1024 + marker.len());
    assert!(outcome.stderr.contains("…[98976 bytes truncated]…"));
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = request("sleep 100 & echo $$ $!; sleep 100", dir.path())
        .with_timeout(Duration::from_millis(2_000));
    let outcome = run_exec(req).await;
    assert!(outcome.timed_out);
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    let pids = pids(&outcome.stdout);
    assert_eq!(pids.len(), 2, "{}", outcome.stdout);
    for pid in pids {
        assert!(process_ends(pid), "process {pid} survived the timeout");
    }
}

#[tokio::test]
async fn a_background_process_holding_the_output_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut req = request("sleep 100 & echo $!", dir.path());
    req.drain_grace = Duration::from_millis(100);
    let outcome = run_exec(req).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert!(!outcome.timed_out);
    let pids = pids(&outcome.stdout);
    assert_eq!(pids.len(), 1, "{}", outcome.stdout);
    assert!(process_ends(pids[0]), "background process survived");
}

#[tokio::test]
async fn dropping_the_future_kills_the_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pids");
    let c_path = CString::new(fifo.as_os_str().as_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);

    let live = LiveProcesses::new();
    let req = request("sleep 100 & echo $$ $! > pids; sleep 100", dir.path())
        .with_live(live.clone())
        .with_timeout(Duration::from_secs(600));
    let task = tokio::spawn(run_exec(req));
    // Opening the fifo blocks until the command writes to it: an event, not a sleep.
    let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo))
        .await
        .expect("join")
        .expect("read fifo");
    assert_eq!(live.count(), 1);
    task.abort();
    assert!(task.await.expect_err("cancelled").is_cancelled());
    assert_eq!(live.count(), 0);
    let pids = pids(&text);
    assert_eq!(pids.len(), 2, "{text}");
    for pid in pids {
        assert!(process_ends(pid), "process {pid} survived the cancel");
    }
}

#[tokio::test]
async fn the_live_count_returns_to_zero_after_a_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = LiveProcesses::new();
    run_exec(request("true", dir.path()).with_live(live.clone())).await;
    assert_eq!(live.count(), 0);
}

#[derive(Debug)]
struct TestLauncher {
    fail: bool,
}

impl Launcher for TestLauncher {
    fn prepare(&self, cmd: &mut Command) -> io::Result<()> {
        if self.fail {
            return Err(io::Error::other("sandbox unavailable"));
        }
        cmd.env("ARBOR_TEST_LAUNCHER", "yes");
        Ok(())
    }

    fn sandbox_label(&self) -> &str {
        "test-sandbox"
    }
}

#[tokio::test]
async fn the_launcher_prepares_the_command_and_labels_the_sandbox() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = request("echo $ARBOR_TEST_LAUNCHER", dir.path())
        .with_launcher(Arc::new(TestLauncher { fail: false }));
    let outcome = run_exec(req).await;
    assert_eq!(outcome.stdout, "yes\n");
    assert_eq!(outcome.sandbox, "test-sandbox");

    let req = request("true", dir.path()).with_launcher(Arc::new(TestLauncher { fail: true }));
    let outcome = run_exec(req).await;
    assert_eq!(
        outcome.error.as_deref(),
        Some("could not start the command: sandbox unavailable")
    );
    assert_eq!(outcome.sandbox, "test-sandbox");
}

#[test]
fn arguments_reject_unknown_fields_and_bad_timeouts() {
    let err = ExecArgs::parse(r#"{"cmd": "ls", "shell": "zsh"}"#).expect_err("unknown field");
    assert!(
        err.to_string()
            .starts_with("invalid exec_command arguments: unknown field `shell`"),
        "{err}"
    );
    let err = ExecArgs::parse(r#"{"workdir": "x"}"#).expect_err("missing cmd");
    assert!(err.to_string().contains("missing field `cmd`"), "{err}");
    let err = ExecArgs::parse(r#"{"cmd": "ls", "sandbox_permissions": "root"}"#)
        .expect_err("bad permission");
    assert!(err.to_string().contains("unknown variant `root`"), "{err}");

    let config = ExecConfig::default();
    let cwd = Path::new("/tmp");
    let check = |json: &str| {
        let args = ExecArgs::parse(json).expect("args");
        ExecRequest::from_args(&args, cwd, &config).map(|req| req.timeout)
    };
    assert_eq!(
        check(r#"{"cmd": "ls"}"#).expect("default"),
        Duration::from_millis(10_000)
    );
    assert_eq!(
        check(r#"{"cmd": "ls", "timeout_ms": 600000}"#).expect("max"),
        Duration::from_millis(600_000)
    );
    let err = check(r#"{"cmd": "ls", "timeout_ms": 600001}"#).expect_err("too large");
    assert_eq!(err.to_string(), "timeout_ms must be at most 600000");
    let err = check(r#"{"cmd": "ls", "timeout_ms": 0}"#).expect_err("zero");
    assert_eq!(err.to_string(), "timeout_ms must be at least 1");
    let err = check(r#"{"cmd": "  "}"#).expect_err("empty");
    assert_eq!(err.to_string(), "cmd must not be empty");

    let args = ExecArgs::parse(
        r#"{"cmd": "ls", "sandbox_permissions": "require_escalated", "justification": "why"}"#,
    )
    .expect("args");
    assert_eq!(args.permissions(), SandboxPermissions::RequireEscalated);
    assert_eq!(args.justification.as_deref(), Some("why"));
}

#[test]
fn the_spec_is_closed_and_names_its_fields() {
    let spec = exec_tool_spec();
    assert_eq!(spec.name, "exec_command");
    let schema = &spec.parameters;
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], serde_json::json!(["cmd"]));
    let mut fields: Vec<&String> = schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "cmd",
            "justification",
            "sandbox_permissions",
            "timeout_ms",
            "workdir"
        ]
    );
    assert_eq!(schema["properties"]["timeout_ms"]["maximum"], 600_000);
}
