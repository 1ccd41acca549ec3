//! A closed network stays closed: an agent's MPTCP socket never reaches a listener on the
//! machine (Landlock's TCP rules do not see MPTCP), and its `listen()` on an unbound socket never
//! opens a port (it would bind one on every address); the agent reads why.

use std::io::ErrorKind;
use std::net::TcpListener;

use arbor_protocol::SandboxMode;
use arbor_tests::Session;
use serde_json::{Value, json};

use crate::sandbox::exec_result;

/// The results of the root's commands, each run with `exec_command`.
async fn root_runs(commands: &[String]) -> Vec<Value> {
    let mut responses: Vec<Value> = commands
        .iter()
        .map(|cmd| json!([{"call": "exec_command", "args": {"cmd": cmd}}]))
        .collect();
    responses.push(json!([{"say": "done"}]));
    let script = json!({"agents": [{"match": "/root", "responses": responses}]});
    let mut s = Session::new(script, |_| {}).await;
    s.run("reach the network").await;
    s.tool_results("/root")
        .iter()
        .map(|(_, output)| exec_result(output))
        .collect()
}

fn python(script: &str) -> String {
    format!("python3 -c '{}'", script.replace('\'', "'\\''"))
}

/// Whether the socket filter is in place here; when it is not, the label must say so.
fn filtered() -> bool {
    let status = arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    if status.label.contains("socket filter: unix and udp only") {
        return true;
    }
    assert!(
        status.label == "none"
            || status.label.contains("no socket filter")
            || status.label.contains("network not restricted"),
        "the label claims what is not enforced: {status:?}"
    );
    eprintln!("skipped: no socket filter here ({})", status.label);
    false
}

/// What the agent reads of a refused command: a failure saying `Operation not permitted`, the
/// sandbox label naming the socket filter.
fn assert_refused(result: &Value) {
    assert_ne!(result["exit_code"], 0, "{result}");
    let stderr = result["stderr"].as_str().unwrap_or_default();
    assert!(stderr.contains("Operation not permitted"), "{result}");
    let label = result["sandbox"].as_str().unwrap_or_default();
    assert!(label.contains("socket filter"), "{result}");
}

#[tokio::test]
async fn an_mptcp_socket_never_reaches_a_listener_on_the_machine() {
    let mptcp = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").unwrap_or_default();
    if mptcp.trim() != "1" {
        eprintln!("skipped: this kernel has no MPTCP (/proc/sys/net/mptcp/enabled is not 1)");
        return;
    }
    if !filtered() {
        return;
    }
    let mut listeners = vec![TcpListener::bind("127.0.0.1:0").expect("bind")];
    // IPv6 where the machine has it.
    listeners.extend(TcpListener::bind("[::1]:0"));
    let commands: Vec<String> = listeners
        .iter()
        .map(|listener| {
            let addr = listener.local_addr().expect("addr");
            let family = if addr.is_ipv4() {
                "AF_INET"
            } else {
                "AF_INET6"
            };
            python(&format!(
                "import socket\n\
                 s = socket.socket(socket.{family}, socket.SOCK_STREAM, 262)\n\
                 s.connect((\"{}\", {}))\n\
                 print(\"connected\")\n",
                addr.ip(),
                addr.port()
            ))
        })
        .collect();
    let results = root_runs(&commands).await;
    assert_eq!(results.len(), listeners.len());
    for (result, listener) in results.iter().zip(&listeners) {
        assert_refused(result);
        assert!(
            !result["stdout"]
                .as_str()
                .unwrap_or_default()
                .contains("connected")
        );
        // A connection the command made sits in the accept queue since its connect returned.
        listener.set_nonblocking(true).expect("nonblocking");
        match listener.accept() {
            Err(err) if err.kind() == ErrorKind::WouldBlock => {}
            other => panic!("the agent reached the listener: {other:?}"),
        }
    }
}

#[tokio::test]
async fn listen_on_an_unbound_socket_opens_no_port() {
    if !filtered() {
        return;
    }
    let autobind = python(
        "import socket\n\
         for family in (socket.AF_INET, socket.AF_INET6):\n\
         \x20   s = socket.socket(family, socket.SOCK_STREAM)\n\
         \x20   s.listen(8)\n\
         \x20   print(\"listening on\", s.getsockname()[1])\n",
    );
    // A unix server still works.
    let unix = python(
        "import socket\n\
         s = socket.socket(socket.AF_UNIX)\n\
         s.bind(\"srv.sock\")\n\
         s.listen(1)\n\
         print(\"unix server up\")\n",
    );
    let results = root_runs(&[autobind, unix]).await;
    assert_refused(&results[0]);
    let stdout = results[0]["stdout"].as_str().unwrap_or_default();
    assert!(!stdout.contains("listening"), "a port was opened: {stdout}");
    assert_eq!(results[1]["exit_code"], 0, "{}", results[1]);
    assert_eq!(results[1]["stdout"], "unix server up\n", "{}", results[1]);
}
