//! The size limits of agent names and paths (behaviour §1), which the path rules enforce and
//! their errors name.

/// Longest agent name (one segment), in bytes, inclusive.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// Longest whole path, in bytes, inclusive.
pub const MAX_PATH_BYTES: usize = 4096;
