//! Agent-path rules through the public API.
