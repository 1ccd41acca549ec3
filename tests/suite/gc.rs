//! Retention: `arbor gc` lists with `--dry-run`, deletes only sessions no process drives and
//! idle past the cut (or past the newest N), the read commands no longer show them and
//! `doctor` is clean afterwards; `retention` in config does the same at the start of `exec`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use arbor_orchestrator::Lease;
use arbor_protocol::ThreadId;
use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};

const DAY: Duration = Duration::from_secs(86_400);

fn script(ws: &Workspace) -> PathBuf {
    let path = ws.dir.path().join("hello.json");
    let script = json!({"agents": [{"match": "/root", "responses": [[{"say": "hello"}]]}]});
    std::fs::write(&path, script.to_string()).expect("script");
    path
}

fn new_session(ws: &Workspace, script: &Path) -> String {
    let out = ws.exec(script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    session_of(&text(&out.stderr))
}

fn files_of(home: &Path, session: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, session: &str, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, session, found);
            } else if path.to_string_lossy().contains(session) {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&home.join("sessions"), session, &mut found);
    found
}

fn log_of(home: &Path, session: &str) -> PathBuf {
    files_of(home, session)
        .into_iter()
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy() == format!("log-{session}.jsonl"))
        })
        .expect("the session's log")
}

/// Makes a session look idle for `age`: its log was last written that long ago.
fn age(home: &Path, session: &str, age: Duration) {
    let log = std::fs::File::options()
        .write(true)
        .open(log_of(home, session))
        .expect("log");
    log.set_modified(SystemTime::now() - age)
        .expect("set mtime");
}

/// A process driving `session`: `arbor followup` of its root's one agent with a model that
/// takes ten minutes to answer. Returned once it holds the session's lease.
pub(crate) struct Driver(std::process::Child);

impl Driver {
    pub(crate) fn start(ws: &Workspace, session: &str) -> Self {
        let script = ws.dir.path().join(format!("slow-{session}.json"));
        let slow = json!({"agents": [{"match": "/root", "repeat": true,
            "responses": [{"delay_ms": 600_000, "items": [{"say": "late"}]}]}]});
        std::fs::write(&script, slow.to_string()).expect("script");
        // The root's new turn waits on the slow model, and the process drives the session.
        // A driver that exits first is started again: a lease just dropped in this process can
        // look held for a moment while another test's child is between fork and exec.
        let id = ThreadId::parse(session).expect("id");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut child = Self::spawn(ws, session, &script);
        while Lease::holder(&ws.home(), id) != Some(child.id()) {
            if let Some(status) = child.try_wait().expect("wait") {
                let mut why = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    std::io::Read::read_to_string(&mut stderr, &mut why).expect("stderr");
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the driver never took the lease: it exited with {status}: {why}"
                );
                child = Self::spawn(ws, session, &script);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the driver never took the lease"
            );
            std::thread::yield_now();
        }
        Self(child)
    }

    fn spawn(ws: &Workspace, session: &str, script: &Path) -> std::process::Child {
        ws.arbor()
            .args(["resume", session, "--script"])
            .arg(script)
            .args(["--cwd"])
            .arg(ws.project())
            .arg("take your time")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("arbor runs")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills the driver and waits until it is gone (its lease with it).
    pub(crate) fn stop(mut self) {
        self.0.kill().expect("kill");
        self.0.wait().expect("wait");
    }
}

fn listed(ws: &Workspace) -> Vec<String> {
    let out = ws.run(&["sessions", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    list.as_array()
        .expect("array")
        .iter()
        .map(|s| s["id"].as_str().expect("id").to_string())
        .collect()
}

fn doctor_is_clean(ws: &Workspace) {
    let out = ws.run(&["doctor"]);
    assert!(
        out.status.success(),
        "doctor: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn gc_deletes_only_stopped_sessions_past_the_cut_and_every_read_forgets_them() {
    let ws = Workspace::new();
    let script = script(&ws);
    let (old, recent, driven) = (
        new_session(&ws, &script),
        new_session(&ws, &script),
        new_session(&ws, &script),
    );
    age(&ws.home(), &old, 40 * DAY);
    age(&ws.home(), &recent, DAY);
    // Another process drives `driven`.
    let driver = Driver::start(&ws, &driven);

    // Sizes on disk are listed.
    let out = ws.run(&["sessions", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(list[0]["size_bytes"].as_u64().expect("size") > 0, "{list}");
    let old_files = files_of(&ws.home(), &old);
    assert!(old_files.len() >= 2, "a log and a rollout: {old_files:?}");
    let old_size: u64 = old_files
        .iter()
        .map(|f| std::fs::metadata(f).expect("stat").len())
        .sum();

    // A dry run lists and deletes nothing; the driven session is named as kept.
    let out = ws.run(&["gc", "--older-than", "0s", "--dry-run", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dry: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(dry["dry_run"], true);
    let ids: Vec<&str> = dry["deleted"]
        .as_array()
        .expect("deleted")
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, [recent.as_str(), old.as_str()], "{dry}");
    assert_eq!(dry["deleted"][1]["size_bytes"], old_size);
    assert_eq!(dry["driven"][0]["id"], driven.as_str());
    assert_eq!(dry["driven"][0]["pid"], driver.pid());
    assert_eq!(listed(&ws).len(), 3);
    assert!(old_files.iter().all(|f| f.exists()));

    // Past a 30-day cut: the old session only.
    let out = ws.run(&["gc", "--older-than", "30d"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("deleted {old}")), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(old_files.iter().all(|f| !f.exists()), "{old_files:?}");
    assert_eq!(listed(&ws), [driven.clone(), recent.clone()]);
    for command in ["tree", "agents", "log", "approvals"] {
        let out = ws.run(&[command, &old]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command}: {}",
            text(&out.stderr)
        );
    }

    // Past any cut: the driven session is refused and kept whole.
    let driven_files = files_of(&ws.home(), &driven);
    let out = ws.run(&["gc", "--older-than", "0s"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("kept {driven}: a process drives it")),
        "{}",
        text(&out.stderr)
    );
    assert!(driven_files.iter().all(|f| f.exists()));
    assert_eq!(listed(&ws), std::slice::from_ref(&driven));
    driver.stop();
    doctor_is_clean(&ws);

    // --keep-last keeps the newest whatever their age.
    let newest = new_session(&ws, &script);
    let out = ws.run(&["gc", "--keep-last", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let done: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(done["deleted"][0]["id"], driven.as_str(), "{done}");
    assert_eq!(listed(&ws), std::slice::from_ref(&newest));
    doctor_is_clean(&ws);

    // Saying nothing about what to delete, or a bad duration, is a usage error.
    let out = ws.run(&["gc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--older-than"),
        "{}",
        text(&out.stderr)
    );
    let out = ws.run(&["gc", "--older-than", "3y"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown unit `y`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(listed(&ws), [newest]);
}

#[test]
fn retention_in_config_deletes_idle_sessions_when_exec_starts() {
    let ws = Workspace::new();
    let script = script(&ws);
    let (old, recent) = (new_session(&ws, &script), new_session(&ws, &script));
    age(&ws.home(), &old, 31 * DAY);
    age(&ws.home(), &recent, 29 * DAY);
    std::fs::write(ws.home().join("config.toml"), "retention = \"30d\"\n").expect("config");
    let out = ws.exec(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("retention: deleted 1 sessions idle for over 30d"),
        "{stderr}"
    );
    let started = session_of(&stderr);
    assert_eq!(listed(&ws), [started, recent]);
    assert!(files_of(&ws.home(), &old).is_empty());
    doctor_is_clean(&ws);

    std::fs::write(ws.home().join("config.toml"), "retention = \"soon\"\n").expect("config");
    let out = ws.exec(&script, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("config: retention"),
        "{}",
        text(&out.stderr)
    );
}
