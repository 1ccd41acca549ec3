//! Agent paths: `/root`, `/root/worker_a`, … with the naming rules of behaviour §1.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ProtocolError;
use crate::limits::{MAX_PATH_BYTES, MAX_SEGMENT_BYTES};

/// The name of the root segment.
pub const ROOT_NAME: &str = "root";

/// An absolute agent path. Always starts with `/root`; every further segment is a valid name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentPath(String);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Limits {
    Checked,
    Unchecked,
}

impl AgentPath {
    /// The root agent's path, `/root`.
    pub fn root() -> Self {
        Self(format!("/{ROOT_NAME}"))
    }

    /// Parses an absolute path with every rule, byte limits included.
    pub fn parse(text: &str) -> Result<Self, ProtocolError> {
        Self::parse_with(text, Limits::Checked)
    }

    /// Parses a path read back from disk: syntax is checked, the byte limits are not, so a path
    /// written under other limits still loads.
    pub fn from_persisted(text: &str) -> Result<Self, ProtocolError> {
        Self::parse_with(text, Limits::Unchecked)
    }

    fn parse_with(text: &str, limits: Limits) -> Result<Self, ProtocolError> {
        if text.len() > 1 && text.ends_with('/') {
            return Err(ProtocolError::TrailingSlash);
        }
        let rest = text
            .strip_prefix("/root")
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .ok_or(ProtocolError::NotUnderRoot)?;
        if !rest.is_empty() {
            for segment in rest[1..].split('/') {
                check_name(segment, limits)?;
            }
        }
        if limits == Limits::Checked && text.len() > MAX_PATH_BYTES {
            return Err(ProtocolError::PathTooLong);
        }
        Ok(Self(text.to_string()))
    }

    /// Checks one agent name (a `task_name`) against every rule.
    pub fn validate_name(name: &str) -> Result<(), ProtocolError> {
        check_name(name, Limits::Checked)
    }

    /// The child path `self/name`, checking the name and the whole-path limit.
    pub fn join(&self, name: &str) -> Result<Self, ProtocolError> {
        check_name(name, Limits::Checked)?;
        let joined = format!("{}/{name}", self.0);
        if joined.len() > MAX_PATH_BYTES {
            return Err(ProtocolError::PathTooLong);
        }
        Ok(Self(joined))
    }

    /// Resolves a target as the agent at `self` would name it: `/…` is absolute; anything else
    /// is relative to `self`, so relative names only reach descendants.
    pub fn resolve(&self, target: &str) -> Result<Self, ProtocolError> {
        if target.starts_with('/') {
            return Self::parse(target);
        }
        if target.is_empty() {
            return Err(ProtocolError::EmptyName);
        }
        if target.ends_with('/') {
            return Err(ProtocolError::TrailingSlash);
        }
        let mut path = self.clone();
        for segment in target.split('/') {
            path = path.join(segment)?;
        }
        Ok(path)
    }

    /// The last segment: `root` for the root, the task name otherwise.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(ROOT_NAME)
    }

    /// True for `/root`.
    pub fn is_root(&self) -> bool {
        self.0.len() == ROOT_NAME.len() + 1
    }

    /// The parent path, `None` for the root.
    pub fn parent(&self) -> Option<Self> {
        if self.is_root() {
            return None;
        }
        self.0.rfind('/').map(|cut| Self(self.0[..cut].to_string()))
    }

    /// Depth below the root: 0 for `/root`, 1 for its children.
    pub fn depth(&self) -> usize {
        self.0.matches('/').count() - 1
    }

    /// True when `self` is `other` or lies below it.
    pub fn is_within(&self, other: &AgentPath) -> bool {
        self == other
            || (self.0.starts_with(&other.0) && self.0.as_bytes().get(other.0.len()) == Some(&b'/'))
    }

    /// The text form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn check_name(name: &str, limits: Limits) -> Result<(), ProtocolError> {
    if name.is_empty() {
        return Err(ProtocolError::EmptyName);
    }
    if name == ROOT_NAME || name == "." || name == ".." {
        return Err(ProtocolError::ReservedName(name.to_string()));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(ProtocolError::NameCharset);
    }
    if limits == Limits::Checked && name.len() > MAX_SEGMENT_BYTES {
        return Err(ProtocolError::NameTooLong);
    }
    Ok(())
}

impl fmt::Display for AgentPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for AgentPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentPath({})", self.0)
    }
}

impl Serialize for AgentPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AgentPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::from_persisted(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> AgentPath {
        AgentPath::parse(text).expect(text)
    }

    fn err(result: Result<AgentPath, ProtocolError>) -> String {
        result.expect_err("should be refused").to_string()
    }

    #[test]
    fn root_has_its_name() {
        let root = AgentPath::root();
        assert_eq!(root.as_str(), "/root");
        assert_eq!(root.name(), "root");
        assert!(root.is_root());
        assert_eq!(root.depth(), 0);
        assert_eq!(root.parent(), None);
    }

    #[test]
    fn join_builds_child_paths() {
        let child = AgentPath::root().join("worker_a").expect("join");
        assert_eq!(child.as_str(), "/root/worker_a");
        assert_eq!(child.name(), "worker_a");
        assert!(!child.is_root());
        assert_eq!(child.depth(), 1);
        assert_eq!(child.parent(), Some(AgentPath::root()));
        assert_eq!(child.join("x1").expect("join").depth(), 2);
    }

    #[test]
    fn resolve_relative_reaches_descendants_and_absolute_reaches_anyone() {
        let caller = path("/root/a");
        assert_eq!(caller.resolve("b").expect("rel"), path("/root/a/b"));
        assert_eq!(caller.resolve("b/c").expect("rel"), path("/root/a/b/c"));
        assert_eq!(
            caller.resolve("/root/sibling").expect("abs"),
            path("/root/sibling")
        );
        assert_eq!(caller.resolve("/root").expect("abs"), AgentPath::root());
        assert_eq!(err(caller.resolve("../x")), "agent_name `..` is reserved");
        assert_eq!(err(caller.resolve("./x")), "agent_name `.` is reserved");
        assert_eq!(err(caller.resolve("root")), "agent_name `root` is reserved");
        assert_eq!(err(caller.resolve("")), "agent_name must not be empty");
        assert_eq!(
            err(caller.resolve("b/")),
            "agent path must not end with `/`"
        );
        assert_eq!(
            err(caller.resolve("/other/x")),
            "agent path must start with /root"
        );
    }

    #[test]
    fn names_are_lowercase_digits_and_underscores() {
        let charset = "agent_name must use only lowercase letters, digits, and underscores";
        assert_eq!(err(AgentPath::root().join("Worker")), charset);
        assert_eq!(err(AgentPath::root().join("a-b")), charset);
        assert_eq!(err(AgentPath::root().join("a b")), charset);
        assert_eq!(err(AgentPath::root().join("é")), charset);
        assert_eq!(err(AgentPath::parse("/root/A")), charset);
        assert_eq!(
            err(AgentPath::parse("/root//a")),
            "agent_name must not be empty"
        );
        assert_eq!(
            err(AgentPath::parse("/root/a/")),
            "agent path must not end with `/`"
        );
        assert_eq!(
            err(AgentPath::parse("/rooted")),
            "agent path must start with /root"
        );
        assert_eq!(
            err(AgentPath::parse("root/a")),
            "agent path must start with /root"
        );
        assert!(AgentPath::validate_name("w_07").is_ok());
    }

    #[test]
    fn segment_limit_is_inclusive() {
        let ok = "a".repeat(255);
        assert_eq!(AgentPath::root().join(&ok).expect("255 bytes").name(), ok);
        let long = "a".repeat(256);
        assert_eq!(
            err(AgentPath::root().join(&long)),
            "agent_name must be at most 255 bytes"
        );
        assert_eq!(
            err(AgentPath::parse(&format!("/root/{long}"))),
            "agent_name must be at most 255 bytes"
        );
        assert!(AgentPath::from_persisted(&format!("/root/{long}")).is_ok());
    }

    #[test]
    fn path_limit_is_inclusive_but_not_checked_on_persisted_paths() {
        let exact = path_of_len(4096);
        assert_eq!(exact.len(), 4096);
        assert!(AgentPath::parse(&exact).is_ok());
        let over = path_of_len(4098);
        assert_eq!(over.len(), 4098);
        assert_eq!(
            err(AgentPath::parse(&over)),
            "agent path must be at most 4096 bytes"
        );
        assert_eq!(
            AgentPath::from_persisted(&over)
                .expect("persisted")
                .as_str(),
            over
        );
        let cut = exact.rfind('/').expect("slash");
        let parent = AgentPath::parse(&exact[..cut]).expect("parent");
        let last = exact.len() - cut - 1;
        assert!(parent.join(&"z".repeat(last)).is_ok());
        assert_eq!(
            err(parent.join(&"z".repeat(last + 1))),
            "agent path must be at most 4096 bytes"
        );
    }

    /// `/root` followed by `/aaa…` segments of at most 200 bytes, exactly `len` bytes long.
    fn path_of_len(len: usize) -> String {
        let mut text = String::from("/root");
        while text.len() < len {
            let room = len - text.len() - 1;
            let take = room.min(200);
            // Avoid a final one-byte remainder that cannot hold "/x".
            let take = if room > 200 && room - take < 2 {
                take - 2
            } else {
                take
            };
            text.push('/');
            text.push_str(&"a".repeat(take.max(1)));
        }
        text
    }

    #[test]
    fn within_compares_whole_segments() {
        assert!(path("/root/a/b").is_within(&path("/root/a")));
        assert!(path("/root/a").is_within(&path("/root/a")));
        assert!(!path("/root/ab").is_within(&path("/root/a")));
        assert!(path("/root/ab").is_within(&AgentPath::root()));
    }

    #[test]
    fn serde_uses_the_text_form() {
        let p = path("/root/a");
        assert_eq!(serde_json::to_string(&p).expect("ser"), "\"/root/a\"");
        assert_eq!(
            serde_json::from_str::<AgentPath>("\"/root/a\"").expect("de"),
            p
        );
        assert!(serde_json::from_str::<AgentPath>("\"/root/A\"").is_err());
    }
}
