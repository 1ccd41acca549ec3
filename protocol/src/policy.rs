//! Sandbox modes, approval policies and reviewers (behaviour §7, §8), shared by roles, tools and
//! the runtime.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How far a command may reach. Ordered from strictest to widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

impl SandboxMode {
    /// The wire and flag name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }

    /// Parses the wire and flag name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read-only" => Some(Self::ReadOnly),
            "workspace-write" => Some(Self::WorkspaceWrite),
            "danger-full-access" => Some(Self::DangerFullAccess),
            _ => None,
        }
    }

    /// The stricter of two modes: a child can narrow its parent's sandbox, never widen it.
    pub fn narrowest(self, other: Self) -> Self {
        self.min(other)
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When an action needs someone's approval. Ordered from widest to strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// No one is asked; a command that needs approval is refused.
    Never,
    /// The model asks for escalation; prompt rules may also ask.
    OnRequest,
    /// Everything but known read-only commands needs approval.
    Untrusted,
}

impl ApprovalPolicy {
    /// The wire and flag name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::OnRequest => "on-request",
            Self::Untrusted => "untrusted",
        }
    }

    /// Parses the wire and flag name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "never" => Some(Self::Never),
            "on-request" => Some(Self::OnRequest),
            "untrusted" => Some(Self::Untrusted),
            _ => None,
        }
    }
}

impl fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who answers approval requests (behaviour §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalsReviewer {
    /// The human: at the terminal of `arbor exec`, or with `arbor approve|deny`.
    #[default]
    User,
    /// The session's guardian agent, `/root/guardian`.
    Guardian,
}

impl ApprovalsReviewer {
    /// The wire and flag name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Guardian => "guardian",
        }
    }

    /// Parses the wire and flag name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "user" => Some(Self::User),
            "guardian" => Some(Self::Guardian),
            _ => None,
        }
    }
}

impl fmt::Display for ApprovalsReviewer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_never_widens() {
        use SandboxMode::*;
        assert_eq!(WorkspaceWrite.narrowest(DangerFullAccess), WorkspaceWrite);
        assert_eq!(ReadOnly.narrowest(WorkspaceWrite), ReadOnly);
        assert_eq!(
            DangerFullAccess.narrowest(DangerFullAccess),
            DangerFullAccess
        );
        for mode in [ReadOnly, WorkspaceWrite, DangerFullAccess] {
            assert_eq!(SandboxMode::parse(mode.as_str()), Some(mode));
        }
        for policy in [
            ApprovalPolicy::Never,
            ApprovalPolicy::OnRequest,
            ApprovalPolicy::Untrusted,
        ] {
            assert_eq!(ApprovalPolicy::parse(policy.as_str()), Some(policy));
        }
        for reviewer in [ApprovalsReviewer::User, ApprovalsReviewer::Guardian] {
            assert_eq!(ApprovalsReviewer::parse(reviewer.as_str()), Some(reviewer));
        }
    }
}
