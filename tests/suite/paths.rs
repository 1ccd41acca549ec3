//! Agent-path rules through the public API.

use arbor_protocol::{AgentPath, ProtocolError};

/// Renders a result as the path text, or `error: <message>`, and compares.
fn check(actual: Result<AgentPath, ProtocolError>, expected: &str) {
    let got = match actual {
        Ok(path) => path.to_string(),
        Err(err) => format!("error: {err}"),
    };
    assert_eq!(got, expected);
}

fn at(path: &str) -> AgentPath {
    AgentPath::parse(path).expect(path)
}

/// `/root` followed by `/aaa…` segments, exactly `len` bytes long.
fn long_path(len: usize) -> String {
    let mut text = String::from("/root");
    while len - text.len() > 201 + 2 {
        text.push('/');
        text.push_str(&"a".repeat(200));
    }
    text.push('/');
    text.push_str(&"b".repeat(len - text.len()));
    assert_eq!(text.len(), len);
    text
}

const CHARSET: &str = "error: agent_name must use only lowercase letters, digits, and underscores";

#[test]
fn root_is_named_root() {
    let root = AgentPath::root();
    assert_eq!(
        (root.as_str(), root.name(), root.depth()),
        ("/root", "root", 0)
    );
    assert!(root.is_root());
    assert_eq!(root.parent(), None);
    check(AgentPath::parse("/root"), "/root");
}

#[test]
fn join_appends_a_segment() {
    check(AgentPath::root().join("worker_a"), "/root/worker_a");
}

#[test]
fn join_twice() {
    check(at("/root/a").join("b_2"), "/root/a/b_2");
}

#[test]
fn child_knows_its_parent() {
    assert_eq!(at("/root/a/b").parent(), Some(at("/root/a")));
}

#[test]
fn relative_reaches_a_child() {
    check(at("/root/a").resolve("b"), "/root/a/b");
}

#[test]
fn relative_reaches_a_grandchild() {
    check(at("/root/a").resolve("b/c"), "/root/a/b/c");
}

#[test]
fn absolute_reaches_a_sibling() {
    check(at("/root/a").resolve("/root/b"), "/root/b");
}

#[test]
fn absolute_reaches_the_root() {
    check(at("/root/a").resolve("/root"), "/root");
}

#[test]
fn dotdot_is_reserved() {
    check(
        at("/root/a").resolve("../x"),
        "error: agent_name `..` is reserved",
    );
}

#[test]
fn dot_is_reserved() {
    check(
        at("/root/a").resolve("./x"),
        "error: agent_name `.` is reserved",
    );
}

#[test]
fn root_is_a_reserved_name() {
    check(
        AgentPath::root().join("root"),
        "error: agent_name `root` is reserved",
    );
}

#[test]
fn empty_target() {
    check(
        at("/root/a").resolve(""),
        "error: agent_name must not be empty",
    );
}

#[test]
fn trailing_slash() {
    check(
        at("/root/a").resolve("b/"),
        "error: agent path must not end with `/`",
    );
}

#[test]
fn absolute_outside_root() {
    check(
        at("/root/a").resolve("/other/x"),
        "error: agent path must start with /root",
    );
}

#[test]
fn uppercase_name() {
    check(AgentPath::root().join("Worker"), CHARSET);
}

#[test]
fn uppercase_in_a_path() {
    check(AgentPath::parse("/root/A"), CHARSET);
}

#[test]
fn uppercase_relative() {
    check(at("/root/a").resolve("B"), CHARSET);
}

#[test]
fn hyphen_name() {
    check(AgentPath::root().join("a-b"), CHARSET);
}

#[test]
fn segment_of_255_bytes() {
    check(
        AgentPath::root().join(&"a".repeat(255)),
        &format!("/root/{}", "a".repeat(255)),
    );
}

#[test]
fn segment_of_256_bytes() {
    check(
        AgentPath::root().join(&"a".repeat(256)),
        "error: agent_name must be at most 255 bytes",
    );
}

#[test]
fn path_of_4096_bytes() {
    check(AgentPath::parse(&long_path(4096)), &long_path(4096));
}

#[test]
fn path_of_4098_bytes() {
    check(
        AgentPath::parse(&long_path(4098)),
        "error: agent path must be at most 4096 bytes",
    );
}

#[test]
fn persisted_path_of_4098_bytes() {
    check(
        AgentPath::from_persisted(&long_path(4098)),
        &long_path(4098),
    );
}

#[test]
fn persisted_path_keeps_the_syntax_rules() {
    check(AgentPath::from_persisted("/root/A"), CHARSET);
}
