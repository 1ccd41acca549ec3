//! Session handles: every session gets a short name that is unique in its home and shown
//! wherever its id is; every command that takes SESSION takes the handle, a unique prefix of
//! the id, or `--last`; an ambiguous prefix lists the handles; the handle survives a rebuild
//! of the store from the session logs.

use serde_json::{Value, json};

use crate::cli::{Workspace, session_of, text};
use crate::resume::write_script;

fn example_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/refactor/script.json")
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The session's handle, from `arbor sessions --json`.
fn handle_of(ws: &Workspace, id: &str) -> String {
    let sessions = json_of(&ws.run(&["sessions", "--json"]));
    let found = sessions
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} listed: {sessions}"));
    found["handle"].as_str().expect("a handle").to_string()
}

/// The shortest prefix of `id` (at least 8 characters) that `other` does not share.
fn unique_prefix(id: &str, other: &str) -> String {
    let common = id
        .chars()
        .zip(other.chars())
        .take_while(|(a, b)| a == b)
        .count();
    id[..(common + 1).max(8)].to_string()
}

#[test]
fn a_session_has_a_handle_shown_with_its_id_and_unique_in_the_home() {
    let ws = Workspace::new();
    let out = ws.exec(&example_script(), &[]);
    let stderr = text(&out.stderr);
    let id = session_of(&stderr);
    let handle = handle_of(&ws, &id);
    assert!(arbor_protocol::is_handle(&handle), "{handle}");
    let first: Vec<&str> = stderr.lines().take(2).collect();
    assert_eq!(
        first,
        [format!("session: {id}"), format!("handle: {handle}")],
        "exec's first line names the session by id, the second by handle"
    );
    let listed = text(&ws.run(&["sessions"]).stdout);
    assert!(listed.starts_with(&format!("{handle}  {id}  ")), "{listed}");
    let tree = ws.run(&["tree", &handle]);
    assert!(
        text(&tree.stderr).contains(&format!("session: {id} ({handle})")),
        "{}",
        text(&tree.stderr)
    );
    assert_eq!(
        json_of(&ws.run(&["tree", &handle, "--json"]))["handle"],
        handle
    );

    // `--json` carries it in `session.started`.
    let out = ws.exec(&example_script(), &["--json"]);
    let started: Value = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("event"))
        .find(|e| e["type"] == "session.started")
        .expect("session.started");
    let second = started["session_id"].as_str().expect("id").to_string();
    assert_eq!(
        started["handle"].as_str(),
        Some(handle_of(&ws, &second).as_str())
    );

    // Many sessions, each its own handle.
    for _ in 0..4 {
        ws.exec(&example_script(), &[]);
    }
    let sessions = json_of(&ws.run(&["sessions", "--json"]));
    let handles: std::collections::BTreeSet<&str> = sessions
        .as_array()
        .expect("array")
        .iter()
        .map(|s| s["handle"].as_str().expect("handle"))
        .collect();
    assert_eq!(handles.len(), 6, "{sessions}");

    // An ambiguous prefix names each match with its handle.
    let (newest, older) = (&sessions[0], &sessions[1]);
    let common: String = newest["id"]
        .as_str()
        .expect("id")
        .chars()
        .zip(older["id"].as_str().expect("id").chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    if common.len() >= 8 {
        let out = ws.run(&["tree", &common]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(err.contains("is ambiguous"), "{err}");
        for s in [newest, older] {
            let named = format!(
                "{} ({})",
                s["id"].as_str().expect("id"),
                s["handle"].as_str().expect("h")
            );
            assert!(err.contains(&named), "{err}");
        }
    }

    // The handle is in the root's header in the log: a rebuilt store keeps it.
    std::fs::remove_file(ws.home().join("state.sqlite")).expect("store removed");
    let rebuilt = ws.run(&["doctor", "--rebuild"]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));
    assert_eq!(handle_of(&ws, &id), handle);
    assert_eq!(
        json_of(&ws.run(&["tree", &handle, "--json"]))["id"],
        id.as_str()
    );
}

#[test]
fn every_session_command_takes_the_handle_a_unique_prefix_and_last() {
    let ws = Workspace::new();
    let first = session_of(&text(&ws.exec(&example_script(), &[]).stderr));
    let newest = session_of(&text(&ws.exec(&example_script(), &[]).stderr));
    let day_two = write_script(
        &ws,
        "day2.json",
        &json!({"agents": [
            {"match": "/root", "repeat": true, "responses": [[{"say": "root read {{input}}"}]]},
            {"match": "/root/worker_b", "repeat": true, "responses": [[{"say": "b again: {{input}}"}]]},
            {"match": "/root/worker_a", "repeat": true, "responses": [[{"say": "a: the work so far"}]]}
        ]}),
    );
    let day_two = day_two.display().to_string();
    // Each form closes a worker of its own (the first two name the same session).
    let forms = [
        (
            "handle",
            handle_of(&ws, &first),
            first.clone(),
            "/root/worker_c",
        ),
        (
            "prefix",
            unique_prefix(&first, &newest),
            first.clone(),
            "/root/worker_b",
        ),
        (
            "--last",
            "--last".to_string(),
            newest.clone(),
            "/root/worker_c",
        ),
    ];
    for (form, session, id, closing) in &forms {
        let s = session.as_str();
        let why = |command: &str| format!("{command} with the {form} `{s}`");
        let ok = |args: &[&str]| {
            let out = ws.run(args);
            assert!(
                out.status.success(),
                "{}: {}",
                why(args[0]),
                text(&out.stderr)
            );
            out
        };
        assert_eq!(
            json_of(&ok(&["tree", s, "--json"]))["id"],
            id.as_str(),
            "{}",
            why("tree")
        );
        assert_eq!(
            json_of(&ok(&["agents", s, "--json"]))[0]["id"],
            id.as_str(),
            "{}",
            why("agents")
        );
        assert!(
            text(&ok(&["log", s, "--json"]).stdout).contains(id.as_str()),
            "{}",
            why("log")
        );
        assert!(
            ok(&["approvals", s, "--json"]).stdout.starts_with(b"["),
            "{}",
            why("approvals")
        );
        // Mail sent through the form arrives in that session, and `mail` reads it the same way.
        let note = format!("note by {form}");
        ok(&["send", s, "/root/worker_a", &note]);
        assert!(
            text(&ok(&["mail", s, "/root/worker_a"]).stdout).contains(&note),
            "{}",
            why("mail")
        );
        assert!(
            text(&ok(&["mail", id, "/root/worker_a"]).stdout).contains(&note),
            "{}",
            why("send")
        );
        for answer in ["approve", "deny"] {
            let out = ws.run(&[answer, s, "no-such-request"]);
            let err = text(&out.stderr);
            assert!(
                err.contains(&format!("not found in session {id}")),
                "{}: {err}",
                why(answer)
            );
        }
        for worktree_command in ["diff", "merge"] {
            let out = ws.run(&[worktree_command, s, "/root/worker_a"]);
            let err = text(&out.stderr);
            assert!(
                err.contains("works in the shared checkout"),
                "{}: {err}",
                why(worktree_command)
            );
        }
        ok(&["interrupt", s, "/root/worker_a"]);
        let answer = ok(&[
            "followup",
            s,
            "/root/worker_b",
            "once more",
            "--script",
            &day_two,
        ]);
        assert!(
            text(&answer.stdout).contains("b again"),
            "{}",
            why("followup")
        );
        ok(&["compact", s, "/root/worker_a", "--script", &day_two]);
        let shown = ok(&["resume", s]);
        assert!(
            text(&shown.stderr).contains(&format!("session: {id} (")),
            "{}",
            why("resume")
        );
        let continued = ok(&["resume", s, "--continue", "--script", &day_two]);
        assert!(
            text(&continued.stderr).contains("no turn of this session was left interrupted"),
            "{}: {}",
            why("resume --continue"),
            text(&continued.stderr)
        );
        ok(&["close", s, closing]);
        let tree = json_of(&ok(&["tree", id, "--json", "--all"]));
        let closed = tree["children"]
            .as_array()
            .expect("children")
            .iter()
            .find(|child| child["path"] == *closing)
            .expect("the closed worker");
        assert_eq!(closed["edge"], "closed", "{}", why("close"));
    }
    let bad = ws.run(&["tree", "--jsn"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("`--jsn` is not an option"),
        "{}",
        text(&bad.stderr)
    );
    let fresh = Workspace::new();
    let none = fresh.run(&["tree", "--last"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        text(&none.stderr).contains("no arbor state"),
        "{}",
        text(&none.stderr)
    );
}
