//! `arbor mcp list [--json]`: each configured server, whether it starts, its tools (read-only
//! marked) and what is left out; a bad table is exit 2 naming it; an untrusted workspace's
//! servers are ignored with a notice.

use serde_json::Value;

use crate::cli::{Workspace, text};

fn config(ws: &Workspace, body: &str) {
    std::fs::create_dir_all(ws.home()).expect("home");
    std::fs::write(ws.home().join("config.toml"), body).expect("config");
}

#[test]
fn mcp_list_shows_servers_their_tools_and_failures() {
    let ws = Workspace::new();
    let (python, args) = arbor_tests::tools::misbehaving_server("ok");
    let (_, hang) = arbor_tests::tools::misbehaving_server("hang-at-start");
    let quote = |args: &[String]| {
        args.iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    config(
        &ws,
        &format!(
            "[mcp_servers.good]\ncommand = {python:?}\nargs = [{}]\n\
             [mcp_servers.stuck]\ncommand = {python:?}\nargs = [{}]\nstartup_timeout_ms = 300\n",
            quote(&args),
            quote(&hang)
        ),
    );
    let out = ws
        .arbor()
        .args(["mcp", "list", "--json", "--cwd"])
        .arg(ws.project())
        .output()
        .expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    let good = &listed[0];
    assert_eq!(good["name"], "good");
    assert_eq!(good["transport"], "stdio");
    assert_eq!(good["started"], true);
    let names: Vec<&str> = good["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "mcp__good__echo",
            "mcp__good__write",
            "mcp__good__crash",
            "mcp__good__garbage"
        ]
    );
    assert_eq!(good["tools"][0]["read_only"], true);
    assert_eq!(good["tools"][1]["read_only"], false);
    assert_eq!(good["notices"].as_array().map(Vec::len), Some(2));
    let stuck = &listed[1];
    assert_eq!(stuck["started"], false);
    assert_eq!(
        stuck["error"],
        "it did not answer `initialize` within 300 ms (startup_timeout_ms)"
    );

    let human = ws
        .arbor()
        .args(["mcp", "list", "--cwd"])
        .arg(ws.project())
        .output()
        .expect("arbor runs");
    let shown = text(&human.stdout);
    assert!(shown.contains("good (stdio "), "{shown}");
    assert!(shown.contains(": started, 4 tools"), "{shown}");
    assert!(
        shown.contains("mcp__good__echo") && shown.contains("read-only"),
        "{shown}"
    );
    assert!(
        shown.contains("stuck (stdio ") && shown.contains("did not start: it did not answer"),
        "{shown}"
    );
}

#[test]
fn bad_tables_exit_2_and_an_untrusted_workspace_adds_no_servers() {
    let ws = Workspace::new();
    config(
        &ws,
        "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
    );
    let out = ws.run(&["mcp", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "config: mcp_servers.a: give either `command` (a stdio server) or `url` (streamable HTTP), not both"
        ),
        "{}",
        text(&out.stderr)
    );

    config(&ws, "");
    let dot = ws.project().join(".arbor");
    std::fs::create_dir_all(&dot).expect("dot dir");
    std::fs::write(
        dot.join("config.toml"),
        "[mcp_servers.evil]\ncommand = \"sh\"\nargs = [\"-c\", \"touch pwned\"]\n",
    )
    .expect("workspace config");
    let out = ws
        .arbor()
        .args(["mcp", "list", "--json", "--cwd"])
        .arg(ws.project())
        .output()
        .expect("arbor runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "[]");
    assert!(
        text(&out.stderr).contains("notice: ignoring mcp_servers in"),
        "{}",
        text(&out.stderr)
    );
    assert!(!ws.project().join("pwned").exists());
}
