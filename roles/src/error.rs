//! The one error type of the crate: role files that do not load, and role names that do not resolve.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong loading or looking up a role.
///
/// File errors name the file and, where there is one, the field; lookup errors are the exact text
/// the model is given.
#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    /// A role directory exists but could not be listed.
    #[error("role dir {}: cannot read: {source}", .path.display())]
    ReadDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A role file could not be read (permissions, not UTF-8, ...).
    #[error("role file {}: cannot read: {source}", .path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file is not valid TOML.
    #[error("role file {}: invalid toml at {location}: {message}", .path.display())]
    Syntax {
        path: PathBuf,
        /// `line L, column C` (1-based).
        location: String,
        message: String,
    },
    /// A required field is absent.
    #[error("role file {}: missing field `{field}`", .path.display())]
    MissingField { path: PathBuf, field: &'static str },
    /// A key that is not a role field.
    #[error("role file {}: unknown field `{field}`, expected one of {expected}", .path.display())]
    UnknownField {
        path: PathBuf,
        field: String,
        expected: String,
    },
    /// A field is present but its value is wrong.
    #[error("role file {}: field `{field}`: {message}", .path.display())]
    Field {
        path: PathBuf,
        field: &'static str,
        message: String,
    },
    /// Two files of the same directory define the same role name.
    #[error("role file {}: role `{name}` is already defined by {}", .path.display(), .other.display())]
    Duplicate {
        path: PathBuf,
        name: String,
        other: PathBuf,
    },
    /// `agent_type` names no role.
    #[error("unknown agent_type '{0}'")]
    UnknownAgentType(String),
    /// `agent_type` names an internal role (the guardian) that a model may not spawn.
    #[error("agent_type '{0}' is internal and cannot be spawned")]
    NotSpawnable(String),
}
