//! The session's decisions as sequences of operations, without a server.
