//! The guardian's verdict: exactly one JSON object with only the known keys, as the whole
//! answer (surrounding whitespace aside).
//!
//! Only `outcome` is required. Anything else is malformed and so fails closed
//! (`review_unavailable`, behaviour §7): text before or after the object, a code fence, an
//! array (even of one verdict), an unknown key, a duplicated key, a wrong type or a value outside
//! the enums. The guardian is told the format; an answer that does not follow it is not a
//! verdict, and guessing which part of it was meant would let prose or a second object decide.

use arbor_protocol::text::truncate_middle;
use serde::{Deserialize, Serialize};

/// The error of this crate: the reviewer's answer is not a verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    #[error("malformed verdict: {0}")]
    Malformed(String),
}

/// What the guardian decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictOutcome {
    Allow,
    Deny,
}

impl VerdictOutcome {
    pub const ALL: [Self; 2] = [Self::Allow, Self::Deny];

    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// How risky the guardian judged the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

impl RiskLevel {
    pub const ALL: [Self; 4] = [Self::Low, Self::Medium, Self::High, Self::Critical];

    /// The wire text, as stored in the approval log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

/// How clearly the root user's task authorises the action, as the guardian judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserAuthorization {
    Unknown,
    Low,
    Medium,
    High,
}

impl UserAuthorization {
    pub const ALL: [Self; 4] = [Self::Unknown, Self::Low, Self::Medium, Self::High];

    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// A parsed verdict. Absent optional fields and `null` both read as `None`. A reviewer's answer
/// goes through [`parse_verdict`]; the serde derives are for storing a verdict already parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub outcome: VerdictOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_level: Option<RiskLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_authorization: Option<UserAuthorization>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
}

impl Verdict {
    /// Same as [`parse_verdict`].
    pub fn parse(text: &str) -> Result<Self, VerdictError> {
        parse_verdict(text)
    }
}

/// Parses the reviewer's answer: the whole text, trimmed, must be one JSON object with only
/// the keys of the verdict. Anything else is [`VerdictError::Malformed`], with a reason that says
/// what was wrong (prose around the object, a code fence, an array, an unknown key, …).
pub fn parse_verdict(text: &str) -> Result<Verdict, VerdictError> {
    let text = text.trim();
    let Some(first) = text.chars().next() else {
        return Err(VerdictError::Malformed("empty reviewer answer".into()));
    };
    if text.starts_with("```") {
        return Err(VerdictError::Malformed(
            "the answer is in a code fence; expected one bare json object".into(),
        ));
    }
    match first {
        '{' => {}
        '[' => {
            return Err(VerdictError::Malformed(
                "the answer is a json array; expected one json object".into(),
            ));
        }
        _ if text.contains('{') => {
            return Err(VerdictError::Malformed(
                "text before the json object; expected one json object and nothing else".into(),
            ));
        }
        _ => {
            return Err(VerdictError::Malformed(
                "no json object in reviewer answer".into(),
            ));
        }
    }
    serde_json::from_str::<RawVerdict>(text)
        .map_err(|error| malformed(&error))?
        .check()
}

/// The verdict as written: enum values are read as plain strings and checked by hand, so a
/// value can only be one of the exact wire texts.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    outcome: String,
    #[serde(default)]
    risk_level: Option<String>,
    #[serde(default)]
    user_authorization: Option<String>,
    #[serde(default)]
    rationale: Option<String>,
}

impl RawVerdict {
    fn check(self) -> Result<Verdict, VerdictError> {
        Ok(Verdict {
            outcome: one_of("outcome", &self.outcome, &VerdictOutcome::ALL, |v| {
                v.as_str()
            })?,
            risk_level: self
                .risk_level
                .map(|text| one_of("risk_level", &text, &RiskLevel::ALL, |v| v.as_str()))
                .transpose()?,
            user_authorization: self
                .user_authorization
                .map(|text| {
                    one_of("user_authorization", &text, &UserAuthorization::ALL, |v| {
                        v.as_str()
                    })
                })
                .transpose()?,
            rationale: self.rationale,
        })
    }
}

/// The value of `all` whose wire text is exactly `text`.
fn one_of<T: Copy>(
    field: &str,
    text: &str,
    all: &[T],
    wire: impl Fn(T) -> &'static str,
) -> Result<T, VerdictError> {
    all.iter()
        .copied()
        .find(|value| wire(*value) == text)
        .ok_or_else(|| {
            let expected: Vec<&str> = all.iter().map(|value| wire(*value)).collect();
            VerdictError::Malformed(format!(
                "unknown {field} `{}`, expected one of {}",
                truncate_middle(text, 100),
                expected.join(", ")
            ))
        })
}

fn malformed(error: &serde_json::Error) -> VerdictError {
    let reason = error.to_string();
    if reason.starts_with("trailing characters") {
        return VerdictError::Malformed(format!(
            "text after the json object ({reason}); expected one json object and nothing else"
        ));
    }
    VerdictError::Malformed(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    use RiskLevel::*;
    use VerdictOutcome::*;

    /// Parses `text` and compares with `expect`: `Ok(outcome, risk, rationale)` or
    /// `Err(substring of the reason)`.
    fn check(text: &str, expect: Result<(VerdictOutcome, Option<RiskLevel>, Option<&str>), &str>) {
        let got = parse_verdict(text);
        match (got, expect) {
            (Ok(verdict), Ok((outcome, risk, rationale))) => {
                assert_eq!(verdict.outcome, outcome, "{text}");
                assert_eq!(verdict.risk_level, risk, "{text}");
                assert_eq!(verdict.rationale.as_deref(), rationale, "{text}");
            }
            (Err(VerdictError::Malformed(reason)), Err(want)) => {
                assert!(reason.contains(want), "{text:?}: {reason:?} lacks {want:?}");
            }
            (got, expect) => panic!("{text:?}: got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn strict_json() {
        check(
            r#"{"outcome":"allow","risk_level":"low","user_authorization":"high","rationale":"reads a file"}"#,
            Ok((Allow, Some(Low), Some("reads a file"))),
        );
        check(r#"  {"outcome": "deny"}  "#, Ok((Deny, None, None)));
        check(
            r#"{"outcome":"deny","risk_level":"critical","rationale":null,"user_authorization":null}"#,
            Ok((Deny, Some(Critical), None)),
        );
    }

    #[test]
    fn every_field_is_read() {
        let verdict = parse_verdict(
            r#"{"outcome":"allow","risk_level":"medium","user_authorization":"unknown","rationale":"r"}"#,
        );
        assert_eq!(
            verdict,
            Ok(Verdict {
                outcome: Allow,
                risk_level: Some(Medium),
                user_authorization: Some(UserAuthorization::Unknown),
                rationale: Some("r".into()),
            })
        );
    }

    #[test]
    fn prose_before_the_object_is_malformed() {
        check(
            "Here is my verdict: {\"outcome\": \"allow\"}",
            Err("text before the json object"),
        );
        check(
            r#"verdict: {"outcome":"deny","rationale":"it runs `rm -rf {dir}/*`"} done"#,
            Err("text before the json object"),
        );
    }

    #[test]
    fn a_code_fence_is_malformed() {
        check(
            "```json\n{\"outcome\": \"allow\", \"risk_level\": \"low\"}\n```",
            Err("code fence"),
        );
        check("```\n{\"outcome\": \"allow\"}\n```", Err("code fence"));
    }

    #[test]
    fn a_one_element_array_is_malformed() {
        check(r#"[{"outcome":"allow"}]"#, Err("json array"));
        check(
            r#"  [ {"outcome":"allow","risk_level":"low"} ] "#,
            Err("json array"),
        );
    }

    #[test]
    fn text_after_the_object_is_malformed() {
        check(
            r#"{"outcome":"allow"} I am confident."#,
            Err("text after the json object"),
        );
        check(
            r#"{"outcome":"deny"} {"outcome":"allow"}"#,
            Err("text after the json object"),
        );
    }

    #[test]
    fn nested_braces_in_the_rationale() {
        check(
            r#"{"outcome":"allow","rationale":"writes {\"a\": {\"b\": 1}} to config.json"}"#,
            Ok((
                Allow,
                None,
                Some(r#"writes {"a": {"b": 1}} to config.json"#),
            )),
        );
    }

    #[test]
    fn unknown_keys_are_malformed() {
        check(
            r#"{"outcome":"allow","confidence":0.9}"#,
            Err("unknown field `confidence`"),
        );
        check(
            r#"{"outcome":"allow","risk_level":"low","override":true}"#,
            Err("unknown field `override`"),
        );
    }

    #[test]
    fn malformed_answers() {
        check("", Err("empty reviewer answer"));
        check("   \n ", Err("empty reviewer answer"));
        check("I think this is fine.", Err("no json object"));
        check("} backwards {", Err("text before the json object"));
        check(r#"{"risk_level":"low"}"#, Err("missing field `outcome`"));
        check(
            r#"{"outcome":"maybe"}"#,
            Err("unknown outcome `maybe`, expected one of allow, deny"),
        );
        check(r#"{"outcome":"Allow"}"#, Err("unknown outcome `Allow`"));
        check(r#"{"outcome":{"allow":null}}"#, Err("invalid type"));
        check(r#"{"outcome":null}"#, Err("invalid type"));
        check(
            r#"{"outcome":"allow","risk_level":"severe"}"#,
            Err("unknown risk_level `severe`"),
        );
        check(
            r#"{"outcome":"allow","user_authorization":"full"}"#,
            Err("unknown user_authorization `full`"),
        );
        check(r#"{"outcome":"allow","rationale":5}"#, Err("invalid type"));
        check(
            r#"{"outcome":"deny","outcome":"allow"}"#,
            Err("duplicate field `outcome`"),
        );
        check(r#"["allow"]"#, Err("json array"));
        check(r#"["allow", "low", "high", "fine"]"#, Err("json array"));
        check(r#"{"outcome":"allow""#, Err("EOF while parsing"));
        check(
            r#"ok {"outcome":"allow"} and {"outcome":"deny"}"#,
            Err("text before the json object"),
        );
    }

    #[test]
    fn the_error_says_malformed_verdict() {
        assert_eq!(
            VerdictError::Malformed("empty reviewer answer".into()).to_string(),
            "malformed verdict: empty reviewer answer"
        );
    }

    #[test]
    fn wire_texts_match_serde() {
        for outcome in VerdictOutcome::ALL {
            assert_eq!(
                serde_json::to_value(outcome).ok(),
                Some(outcome.as_str().into())
            );
        }
        for risk in RiskLevel::ALL {
            assert_eq!(serde_json::to_value(risk).ok(), Some(risk.as_str().into()));
        }
        for auth in UserAuthorization::ALL {
            assert_eq!(serde_json::to_value(auth).ok(), Some(auth.as_str().into()));
        }
    }
}
