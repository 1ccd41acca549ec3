//! Telling one rollout line apart: a known item, an item from a newer version, or a fault.

use arbor_protocol::{RolloutItem, RolloutLine};
use serde_json::Value;

/// A line that parsed as JSON.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "`Known` is the common case and is moved straight out; boxing it costs an allocation per line"
)]
pub(crate) enum Parsed {
    /// A line of a type this version knows.
    Known(RolloutLine),
    /// A well-formed object whose `type` this version does not know (written by a newer one).
    Unknown(String),
}

/// A line that did not parse.
#[derive(Debug)]
pub(crate) enum Fault {
    /// Not JSON at all: as a last line without its newline, a torn write.
    NotJson(String),
    /// JSON, but not a rollout line of a known type.
    Malformed(String),
}

impl Fault {
    pub(crate) fn into_reason(self) -> String {
        match self {
            Self::NotJson(reason) | Self::Malformed(reason) => reason,
        }
    }
}

/// Classifies one line (without its newline).
///
/// The typed parse is tried first because it is the common case; only a line it refuses is
/// parsed again as a `serde_json::Value` to tell an unknown `type` (skipped) from a malformed
/// line (an error) and from text that is not JSON (a torn tail when it is the last line).
pub(crate) fn parse_line(bytes: &[u8]) -> Result<Parsed, Fault> {
    let typed_err = match serde_json::from_slice::<RolloutLine>(bytes) {
        Ok(line) => return Ok(Parsed::Known(line)),
        Err(err) => err,
    };
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|err| Fault::NotJson(format!("not valid json: {err}")))?;
    let Value::Object(map) = &value else {
        return Err(Fault::Malformed("expected a json object".to_string()));
    };
    let Some(Value::String(type_name)) = map.get("type") else {
        return Err(Fault::Malformed(
            "expected a string field `type`".to_string(),
        ));
    };
    if RolloutItem::KNOWN_TYPES.contains(&type_name.as_str()) {
        Err(Fault::Malformed(format!(
            "malformed `{type_name}` line: {typed_err}"
        )))
    } else {
        Ok(Parsed::Unknown(type_name.clone()))
    }
}

/// True for a line holding nothing but whitespace.
pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders the classification of `line` as one short string.
    fn check(line: &str, expected: &str) {
        let got = match parse_line(line.as_bytes()) {
            Ok(Parsed::Known(line)) => format!("known {}", line.item.type_name()),
            Ok(Parsed::Unknown(name)) => format!("unknown {name}"),
            Err(Fault::NotJson(_)) => "not json".to_string(),
            Err(Fault::Malformed(reason)) => format!("malformed: {reason}"),
        };
        assert!(
            got.starts_with(expected),
            "{line}\n got: {got}\nwant: {expected}"
        );
    }

    const TS: &str = r#""timestamp":"2026-01-02T03:04:05.678Z""#;

    #[test]
    fn known_line() {
        check(
            &format!(r#"{{{TS},"type":"turn_started","payload":{{"turn":1}}}}"#),
            "known turn_started",
        );
    }

    #[test]
    fn unknown_type() {
        check(
            &format!(r#"{{{TS},"type":"hologram","payload":{{}}}}"#),
            "unknown hologram",
        );
    }

    #[test]
    fn known_type_with_bad_payload() {
        check(
            &format!(r#"{{{TS},"type":"turn_started","payload":{{"turn":"one"}}}}"#),
            "malformed: malformed `turn_started` line: invalid type",
        );
    }

    #[test]
    fn known_type_without_timestamp() {
        check(
            r#"{"type":"turn_started","payload":{"turn":1}}"#,
            "malformed: malformed `turn_started` line: missing field `timestamp`",
        );
    }

    #[test]
    fn no_type() {
        check(
            &format!(r#"{{{TS},"payload":{{}}}}"#),
            "malformed: expected a string field `type`",
        );
    }

    #[test]
    fn not_an_object() {
        check("[1, 2]", "malformed: expected a json object");
    }

    #[test]
    fn cut_in_half() {
        check(&format!(r#"{{{TS},"type":"turn_sta"#), "not json");
    }

    #[test]
    fn blank_lines() {
        assert!(is_blank(b""));
        assert!(is_blank(b" \t\r"));
        assert!(!is_blank(b" {}"));
    }
}
