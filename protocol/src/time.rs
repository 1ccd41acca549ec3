//! UTC timestamps with millisecond precision, written as `2026-11-30T09:32:03.123Z`.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ProtocolError;

/// Milliseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Self(millis)
    }

    /// From milliseconds since the epoch.
    pub fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the epoch.
    pub fn as_millis(self) -> i64 {
        self.0
    }

    /// The calendar date `(year, month, day)` in UTC.
    pub fn date(self) -> (i64, u32, u32) {
        civil_from_days(self.0.div_euclid(86_400_000))
    }

    /// `YYYY-MM-DDTHH-MM-SS`: a form safe in file names.
    pub fn file_stamp(self) -> String {
        let (y, mo, d) = self.date();
        let secs = self.0.div_euclid(1000).rem_euclid(86_400);
        format!(
            "{y:04}-{mo:02}-{d:02}T{:02}-{:02}-{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }

    /// Parses the form written by `Display` (milliseconds optional).
    pub fn parse(text: &str) -> Result<Self, ProtocolError> {
        parse_rfc3339(text).ok_or_else(|| ProtocolError::Timestamp(text.to_string()))
    }
}

fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' || *b.last()? != b'Z' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = text.get(from..to)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let millis = match &text[19..text.len() - 1] {
        "" => 0,
        frac => {
            let digits = frac.strip_prefix('.')?;
            if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|c| c.is_ascii_digit())
            {
                return None;
            }
            let padded = format!("{digits:0<3}");
            padded[..3].parse::<i64>().ok()?
        }
    };
    let days = days_from_civil(year, month as u32, day as u32);
    Some(Timestamp(
        ((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis,
    ))
}

/// Days since 1970-01-01 for a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, mo, d) = self.date();
        let ms = self.0.rem_euclid(86_400_000);
        write!(
            f,
            "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        )
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_known_instants() {
        let epoch = Timestamp::from_millis(0);
        assert_eq!(epoch.to_string(), "1970-01-01T00:00:00.000Z");
        let t = Timestamp::parse("2026-11-30T09:32:03.123Z").expect("parse");
        assert_eq!(t.to_string(), "2026-11-30T09:32:03.123Z");
        assert_eq!(t.date(), (2026, 11, 30));
        assert_eq!(t.file_stamp(), "2026-11-30T09-32-03");
        let leap = Timestamp::parse("2024-02-29T23:59:59Z").expect("leap day");
        assert_eq!(leap.to_string(), "2024-02-29T23:59:59.000Z");
        assert_eq!(
            Timestamp::from_millis(leap.as_millis() + 1000).date(),
            (2024, 3, 1)
        );
    }

    #[test]
    fn every_day_round_trips() {
        for day in (0..2_900_000).step_by(37) {
            let t = Timestamp::from_millis(day * 86_400_000 + 45_296_789);
            assert_eq!(Timestamp::parse(&t.to_string()), Ok(t));
        }
    }

    #[test]
    fn rejects_other_forms() {
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T09:32:03",
            "2026-13-01T00:00:00Z",
            "2026-11-30T09:32:03.Z",
            "2026-11-30 09:32:03Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }
}
