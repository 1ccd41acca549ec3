//! The `arbor` binary end to end: output modes, the `--json` event stream, read commands, exit
//! codes and Ctrl-C.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

const DOCUMENTED_EVENTS: &[&str] = &[
    "session.started",
    "agent.spawned",
    "turn.started",
    "agent.message",
    "tool.call",
    "tool.result",
    "mail.sent",
    "mail.delivered",
    "agent.status",
    "agent.evicted",
    "agent.revived",
    "approval.requested",
    "approval.decided",
    "agent.retrying",
    "agent.compacted",
    "usage",
    "turn.completed",
    "turn.aborted",
    "session.completed",
];

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor")
}

/// A home and a fresh copy of the example project.
pub struct Workspace {
    pub dir: TempDir,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = TempDir::new().expect("temp dir");
        let project = dir.path().join("project");
        copy_dir(&example().join("project"), &project);
        Self { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    pub fn arbor(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arbor"));
        cmd.arg("--home").arg(self.home()).env_remove("ARBOR_HOME");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.arbor().args(args).output().expect("arbor runs")
    }

    pub fn exec(&self, script: &Path, extra: &[&str]) -> Output {
        let mut cmd = self.arbor();
        cmd.arg("exec")
            .arg("--script")
            .arg(script)
            .arg("--cwd")
            .arg(self.project())
            .args(extra)
            .arg("Rename fetch_data to load_records");
        cmd.stdin(Stdio::null()).output().expect("arbor runs")
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn session_of(stderr: &str) -> String {
    let first = stderr.lines().next().expect("a first stderr line");
    // `session: <id>` exactly, as the command line's contract says; the handle comes next.
    let id = first
        .strip_prefix("session: ")
        .expect("first line names the session");
    assert!(
        !id.contains(' '),
        "the first line is more than `session: <id>`: {first}"
    );
    id.to_string()
}

#[test]
fn exec_runs_the_refactor_example_and_prints_only_the_answer() {
    let ws = Workspace::new();
    let out = ws.exec(&example().join("script.json"), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "exit {:?}\n{stderr}",
        out.status.code()
    );
    assert_eq!(
        stdout.trim(),
        "fetch_data is now load_records in src/reader.py, src/report.py and src/cli.py (three workers, one file each)."
    );
    let session = session_of(&stderr);
    for file in ["reader.py", "report.py", "cli.py"] {
        let source = std::fs::read_to_string(ws.project().join("src").join(file)).expect("source");
        assert!(
            source.contains("load_records"),
            "{file} not renamed:\n{source}"
        );
        assert!(
            !source.contains("fetch_data"),
            "{file} still has the old name"
        );
    }
    let tree = ws.run(&["tree", &session]);
    let tree_text = text(&tree.stdout);
    assert!(tree.status.success(), "{}", text(&tree.stderr));
    for path in [
        "/root",
        "/root/worker_a",
        "/root/worker_b",
        "/root/worker_c",
    ] {
        assert!(tree_text.contains(path), "{path} missing from\n{tree_text}");
    }
    let tree = ws.run(&["tree", &session[..8], "--json"]);
    let tree: Value = serde_json::from_slice(&tree.stdout).expect("tree json");
    assert_eq!(tree["path"], "/root");
    assert_eq!(tree["edge"], Value::Null);
    let children: Vec<&str> = tree["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| c["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        children,
        ["/root/worker_a", "/root/worker_b", "/root/worker_c"]
    );
    for format in ["dot", "mermaid"] {
        let out = ws.run(&["tree", &session, "--format", format]);
        assert!(text(&out.stdout).contains("/root/worker_b"), "{format}");
    }
}

#[test]
fn agents_json_has_the_documented_shape() {
    let ws = Workspace::new();
    let out = ws.exec(&example().join("script.json"), &[]);
    assert!(out.status.success());
    let session = session_of(&text(&out.stderr));
    let agents = ws.run(&["agents", &session, "--json"]);
    let agents: Value = serde_json::from_slice(&agents.stdout).expect("agents json");
    let agents = agents.as_array().expect("array");
    assert_eq!(agents.len(), 4);
    let keys = [
        "id",
        "path",
        "parent_id",
        "depth",
        "nickname",
        "role",
        "model",
        "status",
        "edge",
        "resident",
        "unread",
        "pending_approvals",
    ];
    for agent in agents {
        for key in keys {
            assert!(agent.get(key).is_some(), "{key} missing in {agent}");
        }
    }
    assert_eq!(agents[0]["path"], "/root");
    assert_eq!(
        agents[1]["status"]["completed"],
        "src/reader.py: renamed with apply_patch"
    );
    assert_eq!(agents[1]["edge"], "open");
    assert_eq!(
        agents[1]["resident"], false,
        "no process drives the session any more"
    );
    let sessions = ws.run(&["sessions", "--json"]);
    let sessions: Value = serde_json::from_slice(&sessions.stdout).expect("sessions json");
    assert_eq!(sessions[0]["id"], session.as_str());
    assert_eq!(sessions[0]["prompt"], "Rename fetch_data to load_records");
    assert_eq!(sessions[0]["agents"], 4);
    let mail = ws.run(&["mail", &session, "/root/worker_a", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&mail.stdout).expect("mail json"),
        Value::Array(vec![])
    );
    let log = ws.run(&["log", &session, "/root/worker_b"]);
    assert!(
        text(&log.stdout).contains("call exec_command"),
        "{}",
        text(&log.stdout)
    );
}

#[test]
fn json_stream_matches_the_documented_events() {
    let ws = Workspace::new();
    let out = ws.exec(&example().join("script.json"), &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("bad line {line}: {e}")))
        .collect();
    assert_eq!(events.first().expect("events")["type"], "session.started");
    assert_eq!(events.last().expect("events")["type"], "session.completed");
    let mut open_turns: std::collections::HashMap<String, i32> = Default::default();
    let mut seen_types = std::collections::BTreeSet::new();
    for event in &events {
        let kind = event["type"].as_str().expect("type");
        assert!(
            DOCUMENTED_EVENTS.contains(&kind),
            "undocumented event {kind}"
        );
        assert!(
            event["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')),
            "{event}"
        );
        seen_types.insert(kind.to_string());
        let path = event["path"].as_str().unwrap_or_default().to_string();
        match kind {
            "turn.started" => *open_turns.entry(path).or_default() += 1,
            "turn.completed" | "turn.aborted" => {
                let open = open_turns.entry(path.clone()).or_default();
                *open -= 1;
                assert_eq!(*open, 0, "{path}: a turn ended that had not started");
            }
            _ => {}
        }
    }
    assert!(
        open_turns.values().all(|n| *n == 0),
        "every turn ended: {open_turns:?}"
    );
    for kind in [
        "agent.spawned",
        "turn.started",
        "agent.message",
        "tool.call",
        "tool.result",
        "mail.sent",
        "mail.delivered",
        "agent.status",
        "turn.completed",
    ] {
        assert!(seen_types.contains(kind), "{kind} never emitted");
    }
    // Causal order: a mail is sent before it is delivered; a child exists before its mail.
    let position =
        |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).expect("event present");
    let spawned_a = position(&|e| e["type"] == "agent.spawned" && e["path"] == "/root/worker_a");
    let parent = &events[spawned_a]["parent"];
    assert_eq!(parent, "/root");
    for sent in events.iter().filter(|e| e["type"] == "mail.sent") {
        let id = &sent["id"];
        let sent_at = position(&|e| e["type"] == "mail.sent" && &e["id"] == id);
        if let Some(delivered_at) = events
            .iter()
            .position(|e| e["type"] == "mail.delivered" && &e["id"] == id)
        {
            assert!(
                sent_at < delivered_at,
                "mail {id} delivered before it was sent"
            );
        }
    }
    let final_event = events.last().expect("events");
    assert_eq!(
        final_event["final_message"],
        "fetch_data is now load_records in src/reader.py, src/report.py and src/cli.py (three workers, one file each)."
    );
}

#[test]
fn bad_input_gets_exit_code_2_and_a_clear_message() {
    let ws = Workspace::new();
    let bad_flag = ws.run(&["exec", "--max-running", "0", "x"]);
    assert_eq!(bad_flag.status.code(), Some(2));
    let script = ws.dir.path().join("bad.json");
    std::fs::write(
        &script,
        r#"{"agents": [{"match": "/root", "responses": [[{"sya": "typo"}]]}]}"#,
    )
    .expect("write");
    let out = ws.exec(&script, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("$.agents[0].responses[0][0]"), "{stderr}");
    let missing = ws.exec(&ws.dir.path().join("missing.json"), &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("missing.json"),
        "{}",
        text(&missing.stderr)
    );
    let no_model = ws.run(&["exec", "hello"]);
    assert_eq!(no_model.status.code(), Some(2));
    assert!(
        text(&no_model.stderr).contains("--script"),
        "{}",
        text(&no_model.stderr)
    );
    ws.exec(&example().join("script.json"), &[]);
    let unknown = ws.run(&["tree", "ffffffffffff"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown.stderr).contains("ffffffffffff"),
        "{}",
        text(&unknown.stderr)
    );
    let no_home = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args([
            "--home",
            &ws.dir.path().join("nowhere").display().to_string(),
            "sessions",
        ])
        .output()
        .expect("runs");
    assert_eq!(no_home.status.code(), Some(0), "a fresh home is no error");
    assert!(text(&no_home.stderr).contains("no sessions yet"));
}

#[test]
fn a_misspelt_tool_or_argument_is_refused_before_the_run() {
    let ws = Workspace::new();
    let script = ws.dir.path().join("typo.json");
    let refused = |script_text: &str| {
        std::fs::write(&script, script_text).expect("write");
        let out = ws.exec(&script, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let stderr = refused(
        r#"{"agents": [{"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "a", "message": "m"}}],
            [{"call": "wait_agnet", "args": {"mode": "all"}}],
            [{"say": "done"}]]}]}"#,
    );
    assert!(
        stderr.contains("$.agents[0].responses[1][0].call: unknown tool \"wait_agnet\""),
        "{stderr}"
    );
    let stderr = refused(
        r#"{"agents": [{"match": "/root", "responses": [
            {"items": [{"call": "spawn_agent", "args": {"name": "a", "message": "m"}}]}]}]}"#,
    );
    assert!(
        stderr.contains(
            "$.agents[0].responses[0].items[0].args.name: unknown argument \"name\" of spawn_agent"
        ),
        "{stderr}"
    );
    // An MCP tool of a server the configuration does not name is a misspelling too.
    let stderr = refused(
        r#"{"agents": [{"match": "/root", "responses": [[{"call": "mcp__fs__read_file"}]]}]}"#,
    );
    assert!(
        stderr.contains("unknown tool \"mcp__fs__read_file\""),
        "{stderr}"
    );
    // Nothing ran: no session was started.
    let sessions = ws.home().join("sessions");
    assert!(!sessions.exists(), "{}", sessions.display());
}

#[test]
fn a_failing_root_turn_exits_1_and_a_childs_failure_does_not() {
    let ws = Workspace::new();
    let script = ws.dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"{"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "fail"}}],
                [{"call": "wait_agent", "args": {"mode": "all"}}],
                [{"say": "child failed but I am fine"}]]},
            {"match": "/root/w", "responses": []}
        ]}"#,
    )
    .expect("write");
    // An empty response list is refused up front: exit 2.
    assert_eq!(ws.exec(&script, &[]).status.code(), Some(2));
    std::fs::write(
        &script,
        r#"{"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "fail"}}],
                [{"call": "wait_agent", "args": {"mode": "all"}}],
                [{"say": "child failed but I am fine"}]]}
        ]}"#,
    )
    .expect("write");
    let out = ws.exec(&script, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no script entry matches /root/w"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(
        &script,
        r#"{"agents": [{"match": "/root", "responses": [[{"call": "list_agents"}]]}]}"#,
    )
    .expect("write");
    let out = ws.exec(&script, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("script exhausted for /root"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn ctrl_c_interrupts_persists_and_exits_130() {
    let ws = Workspace::new();
    let script = ws.dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"{"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "block"}}],
                [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3600000}}],
                [{"say": "unreachable"}]]},
            {"match": "/root/w", "responses": [
                [{"call": "exec_command", "args": {"cmd": "sleep 600", "timeout_ms": 600000}}]]}
        ]}"#,
    )
    .expect("write");
    let mut child = ws
        .arbor()
        .args(["exec", "--json", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(ws.project())
        .arg("block")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut session = String::new();
    for line in BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.expect("line")).expect("json");
        if event["type"] == "session.started" {
            session = event["session_id"].as_str().expect("id").to_string();
        }
        if event["type"] == "tool.call" && event["path"] == "/root/w" {
            break;
        }
    }
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130));
    let agents = ws.run(&["agents", &session, "--json"]);
    let agents: Value = serde_json::from_slice(&agents.stdout).expect("json");
    assert_eq!(
        agents[0]["status"],
        serde_json::json!({"interrupted": "user_interrupt"})
    );
    assert_eq!(
        agents[1]["status"],
        serde_json::json!({"interrupted": "user_interrupt"})
    );
}

#[test]
fn no_wait_children_exits_after_the_roots_turn_and_leaves_children_interrupted() {
    let ws = Workspace::new();
    let script = ws.dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"{"agents": [
            {"match": "/root", "responses": [
                [{"call": "spawn_agent", "args": {"task_name": "w", "message": "block"}}],
                [{"call": "exec_command", "args": {"cmd": "while [ ! -f started ]; do sleep 0.01; done"}}],
                [{"say": "leaving the child behind"}]]},
            {"match": "/root/w", "responses": [
                [{"call": "exec_command", "args": {"cmd": "touch started; sleep 600", "timeout_ms": 600000}}]]}
        ]}"#,
    )
    .expect("write");
    let out = ws.exec(&script, &["--no-wait-children"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "leaving the child behind");
    let session = session_of(&text(&out.stderr));
    let agents = ws.run(&["agents", &session, "--json"]);
    let agents: Value = serde_json::from_slice(&agents.stdout).expect("json");
    assert_eq!(
        agents[0]["status"],
        serde_json::json!({"completed": "leaving the child behind"})
    );
    assert_eq!(
        agents[1]["status"],
        serde_json::json!({"interrupted": "parent_exit"})
    );
    assert_eq!(
        agents[1]["edge"], "open",
        "an interrupted child stays resumable"
    );
}
