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
    /// A fresh time-ordered id: every id this process makes sorts after the ones it made
    /// before, on any thread and within one millisecond (`Uuid::now_v7`'s process-wide counter).
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

/// The low 32 bits of a fresh id: random, from the OS. A v7 id from the uuid crate holds its
/// 48-bit millisecond stamp, then a 42-bit counter (seeded at random each millisecond, one up
/// per id within it, so the process's ids sort by creation), then random bits.
pub(crate) fn random_bits() -> u32 {
    Uuid::now_v7().as_u128() as u32
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
    use std::time::{SystemTime, UNIX_EPOCH};

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
    fn fresh_ids_are_v7_unique_and_ordered_across_threads() {
        let made: Vec<Vec<ThreadId>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| (0..5_000).map(|_| ThreadId::new()).collect::<Vec<_>>()))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("thread"))
                .collect()
        });
        let millis = |id: &ThreadId| id.0.as_u128() >> 80;
        assert!(
            made[0]
                .windows(2)
                .any(|pair| millis(&pair[0]) == millis(&pair[1])),
            "ids made back to back share a millisecond, and still sort"
        );
        let mut all = std::collections::HashSet::new();
        for ids in &made {
            assert!(
                ids.windows(2).all(|pair| pair[0] < pair[1]),
                "ids of one thread sort"
            );
            for id in ids {
                assert_eq!(id.0.get_version_num(), 7);
                assert_eq!(id.0.get_variant(), uuid::Variant::RFC4122);
                assert!(all.insert(*id), "duplicate id {id}");
            }
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_millis();
        let (secs, nanos) = made[0][0].0.get_timestamp().expect("v7 stamp").to_unix();
        let stamped = u128::from(secs) * 1000 + u128::from(nanos / 1_000_000);
        assert!(
            now.abs_diff(stamped) < 60_000,
            "the stamp is the time: {stamped} vs {now}"
        );
    }

    #[test]
    fn bad_id_names_the_text() {
        let err = ThreadId::parse("nope").expect_err("not a uuid");
        assert!(err.to_string().contains("`nope`"), "{err}");
    }
}
