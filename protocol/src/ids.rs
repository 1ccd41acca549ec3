//! Thread and mail identifiers: UUID v7 strings, so they sort by creation time.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use crate::error::ProtocolError;

/// The id of one agent thread (and, for a root thread, of its session).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(Uuid);

impl ThreadId {
    /// A fresh time-ordered id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// Parses the hyphenated text form.
    pub fn parse(text: &str) -> Result<Self, ProtocolError> {
        Uuid::try_parse(text)
            .map(Self)
            .map_err(|_| ProtocolError::Id(text.to_string()))
    }

    /// The hyphenated lowercase text form.
    pub fn as_string(&self) -> String {
        self.0.hyphenated().to_string()
    }
}

impl Default for ThreadId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadId({})", self.0.hyphenated())
    }
}

impl FromStr for ThreadId {
    type Err = ProtocolError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for ThreadId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0.hyphenated())
    }
}

impl<'de> Deserialize<'de> for ThreadId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The id of one mail. Same text form as [`ThreadId`]; a separate type so the two never mix.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MailId(ThreadId);

impl MailId {
    /// A fresh time-ordered id.
    pub fn new() -> Self {
        Self(ThreadId::new())
    }

    /// Parses the hyphenated text form.
    pub fn parse(text: &str) -> Result<Self, ProtocolError> {
        ThreadId::parse(text).map(Self)
    }
}

impl Default for MailId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for MailId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for MailId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MailId({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_round_trip_and_sort_by_creation() {
        let a = ThreadId::new();
        let b = ThreadId::new();
        assert!(a < b);
        assert_eq!(ThreadId::parse(&a.to_string()), Ok(a));
        let json = serde_json::to_string(&a).expect("serialise");
        assert_eq!(json, format!("\"{a}\""));
        assert_eq!(serde_json::from_str::<ThreadId>(&json).expect("parse"), a);
    }

    #[test]
    fn bad_id_names_the_text() {
        let err = ThreadId::parse("nope").expect_err("not a uuid");
        assert!(err.to_string().contains("`nope`"), "{err}");
    }
}
