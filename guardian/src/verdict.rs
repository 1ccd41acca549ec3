//! The guardian's verdict: strict JSON, found as the whole answer or as its outermost braces.
//!
//! Only `outcome` is required. Unknown extra keys are tolerated and ignored: they cannot turn a
//! deny into an allow (only an explicit `"outcome": "allow"` allows), and rejecting them would
//! turn harmless chatter into `review_unavailable` denials. A duplicated key, a wrong type or a
//! value outside the enums is malformed.

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

/// Parses the reviewer's answer: the whole text as a JSON object, else the text from its
/// first `{` to its last `}` (the outermost object, so braces inside the rationale are fine).
/// Anything else is [`VerdictError::Malformed`]; so is a top-level array, which serde would
/// otherwise read as a struct.
pub fn parse_verdict(text: &str) -> Result<Verdict, VerdictError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(VerdictError::Malformed("empty reviewer answer".into()));
    }
    if text.starts_with('{') {
        match serde_json::from_str::<RawVerdict>(text) {
            Ok(raw) => return raw.check(),
            // Valid JSON of the wrong shape: the answer is the whole text, and it is wrong.
            Err(error) if error.is_data() => return Err(malformed(&error)),
            Err(_) => {}
        }
    }
    let object = text
        .find('{')
        .zip(text.rfind('}'))
        .filter(|(start, end)| start < end)
        .map(|(start, end)| &text[start..=end]);
    let Some(object) = object else {
        return Err(VerdictError::Malformed(
            "no json object in reviewer answer".into(),
        ));
    };
    serde_json::from_str::<RawVerdict>(object)
        .map_err(|error| malformed(&error))?
        .check()
}

/// The verdict as written: enum values are read as plain strings and checked by hand, so a
/// value can only be one of the exact wire texts.
#[derive(Deserialize)]
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
    VerdictError::Malformed(error.to_string())
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
    fn json_inside_prose_uses_the_outermost_braces() {
        check(
            "Here is my verdict:\n```json\n{\"outcome\": \"deny\", \"risk_level\": \"high\"}\n```\nThanks.",
            Ok((Deny, Some(High), None)),
        );
        check(
            r#"verdict: {"outcome":"deny","rationale":"it runs `rm -rf {dir}/*` and {x}"} done"#,
            Ok((Deny, None, Some("it runs `rm -rf {dir}/*` and {x}"))),
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
    fn unknown_keys_are_tolerated() {
        check(
            r#"{"outcome":"allow","confidence":0.9,"notes":{"a":1}}"#,
            Ok((Allow, None, None)),
        );
    }

    #[test]
    fn malformed_answers() {
        check("", Err("empty reviewer answer"));
        check("   \n ", Err("empty reviewer answer"));
        check("I think this is fine.", Err("no json object"));
        check("} backwards {", Err("no json object"));
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
        check(r#"["allow"]"#, Err("no json object"));
        check(r#"["allow", "low", "high", "fine"]"#, Err("no json object"));
        check(r#"{"outcome":"allow""#, Err("no json object"));
        check(
            r#"ok {"outcome":"allow"} and {"outcome":"deny"}"#,
            Err("trailing characters"),
        );
        check(
            r#"prose {"outcome": "maybe"} prose"#,
            Err("unknown outcome `maybe`"),
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
