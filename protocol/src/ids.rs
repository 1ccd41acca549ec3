//! Thread and mail identifiers: UUID v7 strings, so they sort by creation time.

use std::cell::Cell;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use crate::error::ProtocolError;

/// The id of one agent thread (and, for a root thread, of its session).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(Uuid);

impl ThreadId {
    /// A fresh time-ordered id.
    pub fn new() -> Self {
        Self(fresh_v7())
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

/// The process's last id stamp: milliseconds since the epoch shifted left by 12, plus a
/// sequence number within the millisecond (RFC 9562 §6.2, a fixed-length counter in
/// `rand_a`). One atomic for every thread, so ids of one process sort by creation even when
/// made in the same millisecond; a sequence past 4 095 borrows the next millisecond.
static LAST_STAMP: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's generator of the 62 random bits, seeded once from the OS's keys
    /// (std's `RandomState`), so an id costs no system call.
    static RANDOM: Cell<u64> = Cell::new({
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(LAST_STAMP.load(Ordering::Relaxed));
        hasher.finish()
    });
}

/// The next stamp, strictly after every stamp this process made before.
fn next_stamp() -> u64 {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX >> 16))
        .unwrap_or(0);
    let wanted = (millis & ((1 << 48) - 1)) << 12;
    let mut last = LAST_STAMP.load(Ordering::Relaxed);
    loop {
        let next = wanted.max(last + 1);
        match LAST_STAMP.compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// 64 random bits of this thread's SplitMix64 sequence.
pub(crate) fn random_u64() -> u64 {
    RANDOM.with(|state| {
        let next = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// A UUID v7: 48 bits of milliseconds, the version, the 12-bit sequence, the variant, and 62
/// random bits.
fn fresh_v7() -> Uuid {
    let stamp = u128::from(next_stamp());
    let millis = stamp >> 12;
    let sequence = stamp & 0xFFF;
    let random = u128::from(random_u64() >> 2);
    Uuid::from_u128((millis << 80) | (0x7 << 76) | (sequence << 64) | (0b10 << 62) | random)
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
