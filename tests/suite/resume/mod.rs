//! Whole-tree resume, mail across processes, the lease, crash recovery and `doctor --rebuild`;
//! one module each, with the helpers that drive the real binary here (other areas use them too).

mod continued;
mod crash;
mod live;

use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};

use serde_json::Value;

use crate::cli::{Workspace, text};

pub(crate) fn write_script(ws: &Workspace, name: &str, script: &Value) -> PathBuf {
    let path = ws.dir.path().join(name);
    std::fs::write(&path, script.to_string()).expect("script");
    path
}

/// A script where `/root` spawns `w`, waits for it and then says `root done`, and `w` gives
/// `w_responses`.
pub(crate) fn root_waits_for_w(w_responses: Value) -> Value {
    serde_json::json!({"agents": [
        {"match": "/root", "responses": [
            [{"call": "spawn_agent", "args": {"task_name": "w", "message": "block"}}],
            [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 600000}}],
            [{"say": "root done"}]]},
        {"match": "/root/w", "responses": w_responses}
    ]})
}

pub(crate) fn agents(ws: &Workspace, session: &str) -> Vec<Value> {
    let out = ws.run(&["agents", session, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout)
        .expect("json")
        .as_array()
        .expect("array")
        .clone()
}

pub(crate) fn agent<'a>(list: &'a [Value], path: &str) -> &'a Value {
    list.iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed"))
}

/// A driver started with `--json`, whose events the test reads as they come.
pub(crate) struct Driver {
    pub(crate) child: Child,
    events: Lines<BufReader<ChildStdout>>,
    pub(crate) session: String,
}

impl Driver {
    pub(crate) fn start(ws: &Workspace, script: &Path, extra: &[&str]) -> Self {
        let mut args: Vec<std::ffi::OsString> =
            vec!["exec".into(), "--json".into(), "--script".into()];
        args.push(script.into());
        args.push("--cwd".into());
        args.push(ws.project().into());
        args.extend(extra.iter().map(Into::into));
        args.push("go".into());
        Self::spawn(ws, &args)
    }

    /// Runs `arbor ARGS` (a command that drives a session with `--json`) with stdin closed, and
    /// reads events up to `session.started`.
    pub(crate) fn spawn(ws: &Workspace, args: &[std::ffi::OsString]) -> Self {
        let mut child = ws
            .arbor()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn arbor");
        let events = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut driver = Self {
            child,
            events,
            session: String::new(),
        };
        let started = driver.until(|e| e["type"] == "session.started");
        driver.session = started["session_id"].as_str().expect("id").to_string();
        driver
    }

    /// The next event, `None` once the driver has closed its output.
    pub(crate) fn next_event(&mut self) -> Option<Value> {
        let line = self.events.next()?.ok()?;
        serde_json::from_str(&line).ok()
    }

    /// Reads events until one matches.
    pub(crate) fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        for line in self.events.by_ref() {
            let event: Value = serde_json::from_str(&line.expect("line")).expect("event json");
            if pred(&event) {
                return event;
            }
        }
        panic!("the driver ended before the awaited event");
    }

    /// Reads events until each of `preds` has matched one, in any order.
    pub(crate) fn until_each(&mut self, preds: &[&dyn Fn(&Value) -> bool]) {
        let seen = std::cell::RefCell::new(vec![false; preds.len()]);
        self.until(|e| {
            let mut seen = seen.borrow_mut();
            for (done, pred) in seen.iter_mut().zip(preds) {
                *done |= pred(e);
            }
            seen.iter().all(|done| *done)
        });
    }

    pub(crate) fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    pub(crate) fn wait(mut self) -> i32 {
        for _ in self.events.by_ref() {}
        self.child.wait().expect("wait").code().unwrap_or(-1)
    }
}
