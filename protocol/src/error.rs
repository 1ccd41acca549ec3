//! The protocol crate's one error: text that is not a valid agent name or path, timestamp or
//! id. The `Display` texts of the name and path variants are given to the model verbatim.

use crate::limits::{MAX_PATH_BYTES, MAX_SEGMENT_BYTES};

/// Why a name, path, timestamp or id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("agent_name must not be empty")]
    EmptyName,
    #[error("agent_name `{0}` is reserved")]
    ReservedName(String),
    #[error("agent_name must use only lowercase letters, digits, and underscores")]
    NameCharset,
    #[error("agent_name must be at most {MAX_SEGMENT_BYTES} bytes")]
    NameTooLong,
    #[error("agent path must be at most {MAX_PATH_BYTES} bytes")]
    PathTooLong,
    #[error("agent path must start with /root")]
    NotUnderRoot,
    #[error("agent path must not end with `/`")]
    TrailingSlash,
    /// Text that is not an RFC 3339 UTC timestamp of the form arbor writes.
    #[error("invalid timestamp `{0}`: expected YYYY-MM-DDTHH:MM:SS[.mmm]Z")]
    Timestamp(String),
    /// A thread or mail id that is not a UUID.
    #[error("invalid id `{0}`: expected a UUID such as 0190c2a4-7b3e-7c1a-9f2b-3c4d5e6f7a8b")]
    Id(String),
}
