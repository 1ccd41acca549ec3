//! The closed network with real sockets: the socket filter refuses every socket but unix and
//! udp ones (MPTCP, SCTP, ICMP, netlink, TCP whose `listen` would bind a port), unix servers and
//! `socketpair` still work, and an open network has no filter.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::sync::Arc;

use super::tests::{enforced_or_reported, run, workspace};
use super::*;

/// Tries each socket and prints `<name> ok` or `<name> errno <n>`, one line each.
const SOCKETS: &str = r#"
import socket, errno
tries = [
    ("unix-stream", socket.AF_UNIX, socket.SOCK_STREAM, 0),
    ("unix-dgram", socket.AF_UNIX, socket.SOCK_DGRAM, 0),
    ("udp", socket.AF_INET, socket.SOCK_DGRAM, 0),
    ("udp-proto", socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, 17),
    ("udp6", socket.AF_INET6, socket.SOCK_DGRAM, 0),
    ("tcp", socket.AF_INET, socket.SOCK_STREAM, 0),
    ("tcp6", socket.AF_INET6, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, 6),
    ("mptcp", socket.AF_INET, socket.SOCK_STREAM, 262),
    ("mptcp6", socket.AF_INET6, socket.SOCK_STREAM, 262),
    ("sctp", socket.AF_INET, socket.SOCK_SEQPACKET, 132),
    ("ping", socket.AF_INET, socket.SOCK_DGRAM, 1),
    ("raw", socket.AF_INET, socket.SOCK_RAW, 255),
    ("netlink", socket.AF_NETLINK, socket.SOCK_RAW, 0),
    ("packet", socket.AF_PACKET, socket.SOCK_DGRAM, 0),
    ("vsock", 40, socket.SOCK_STREAM, 0),
]
for name, family, kind, proto in tries:
    try:
        socket.socket(family, kind, proto).close()
        print(name, "ok")
    except OSError as e:
        print(name, "errno", e.errno)
a, b = socket.socketpair()
a.send(b"x"); print("socketpair", b.recv(1).decode())
try:
    socket.socketpair(socket.AF_INET)
    print("socketpair-inet ok")
except OSError as e:
    print("socketpair-inet errno", e.errno)
"#;

fn closed(ws: &tempfile::TempDir, support: Support) -> Arc<SandboxLauncher> {
    Arc::new(SandboxLauncher::with_support(
        SandboxMode::WorkspaceWrite,
        ws.path().to_path_buf(),
        false,
        support,
    ))
}

/// The launcher of a closed network with the filter; `None` where nothing or no filter is
/// enforced (said so on stderr).
fn filtered(ws: &tempfile::TempDir) -> Option<Arc<SandboxLauncher>> {
    let launcher = closed(ws, Support::get());
    if !enforced_or_reported(&launcher) {
        return None;
    }
    if !Support::get().socket_filter {
        assert!(
            launcher.sandbox_label().contains("no socket filter")
                || launcher.sandbox_label().contains("network not restricted"),
            "{}",
            launcher.sandbox_label()
        );
        eprintln!("skipped: no socket filter can be installed here");
        return None;
    }
    Some(launcher)
}

fn python(script: &str) -> String {
    format!("python3 -c '{}'", script.replace('\'', "'\\''"))
}

#[tokio::test]
async fn a_closed_network_leaves_only_unix_and_udp_sockets() {
    let ws = workspace();
    let Some(launcher) = filtered(&ws) else {
        return;
    };
    assert!(
        launcher
            .sandbox_label()
            .ends_with("tcp blocked, socket filter: unix and udp only)"),
        "{}",
        launcher.sandbox_label()
    );
    let out = run(&launcher, &python(SOCKETS), ws.path()).await;
    assert!(out.succeeded(), "{out:?}");
    let eperm = format!("errno {}", libc::EPERM);
    for line in out.stdout.lines() {
        let (name, result) = line.split_once(' ').expect("name and result");
        let allowed = matches!(
            name,
            "unix-stream" | "unix-dgram" | "udp" | "udp-proto" | "udp6" | "socketpair"
        );
        match (allowed, result) {
            (true, "ok" | "x") => {}
            // A machine without IPv6 has no inet6 sockets at all.
            (true, result) if name == "udp6" && result.starts_with("errno") => {}
            (false, result) if result == eperm => {}
            _ => panic!("{name}: {result}\n{}", out.stdout),
        }
    }
    assert_eq!(out.stdout.lines().count(), 17, "{}", out.stdout);
}

#[tokio::test]
async fn mptcp_never_reaches_a_listener_on_localhost() {
    let mptcp = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").unwrap_or_default();
    if mptcp.trim() != "1" {
        eprintln!("skipped: this kernel has no MPTCP enabled (/proc/sys/net/mptcp/enabled)");
        return;
    }
    let ws = workspace();
    let Some(launcher) = filtered(&ws) else {
        return;
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let script = format!(
        "import socket\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)\n\
         s.connect((\"127.0.0.1\", {port}))\n\
         print(\"connected\")\n"
    );
    let out = run(&launcher, &python(&script), ws.path()).await;
    assert!(!out.succeeded(), "{out:?}");
    assert!(
        out.stderr.contains("Operation not permitted"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("connected"), "{}", out.stdout);
    // A connection the command made is in the accept queue by the time connect returned.
    match listener.accept() {
        Err(err) if err.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener was reached: {other:?}"),
    }
}

#[tokio::test]
async fn listen_cannot_bind_a_port_and_unix_servers_still_work() {
    let ws = workspace();
    let Some(launcher) = filtered(&ws) else {
        return;
    };
    // listen() on an unbound TCP socket binds a free port on every address.
    let autobind = "import socket\n\
                    s = socket.socket()\n\
                    s.listen(1)\n\
                    print(\"listening on\", s.getsockname())\n";
    let out = run(&launcher, &python(autobind), ws.path()).await;
    assert!(!out.succeeded(), "{out:?}");
    assert!(!out.stdout.contains("listening"), "{}", out.stdout);
    assert!(
        out.stderr.contains("Operation not permitted"),
        "{}",
        out.stderr
    );

    let unix = "import socket\n\
                s = socket.socket(socket.AF_UNIX)\n\
                s.bind(\"srv.sock\")\n\
                s.listen(1)\n\
                c = socket.socket(socket.AF_UNIX)\n\
                c.connect(\"srv.sock\")\n\
                a, _ = s.accept()\n\
                c.send(b\"hello\")\n\
                print(a.recv(5).decode())\n";
    let out = run(&launcher, &python(unix), ws.path()).await;
    assert!(out.succeeded(), "{out:?}");
    assert_eq!(out.stdout.trim(), "hello");
}

#[tokio::test]
async fn an_open_network_has_no_filter_and_no_filter_is_reported() {
    let ws = workspace();
    let open = Arc::new(SandboxLauncher::new(
        SandboxMode::WorkspaceWrite,
        ws.path(),
        true,
    ));
    if !enforced_or_reported(&open) {
        return;
    }
    let tcp = python("import socket\nsocket.socket().close()\nprint(\"made\")\n");
    let out = run(&open, &tcp, ws.path()).await;
    assert_eq!(out.stdout.trim(), "made", "{out:?}");

    let unfiltered = closed(
        &ws,
        Support {
            socket_filter: false,
            ..Support::get()
        },
    );
    let label = unfiltered.sandbox_label();
    assert!(
        label.ends_with("tcp blocked, no socket filter)")
            || label.ends_with("network not restricted)"),
        "{label}"
    );
    let out = run(&unfiltered, &tcp, ws.path()).await;
    assert_eq!(out.stdout.trim(), "made", "{out:?}");
}
