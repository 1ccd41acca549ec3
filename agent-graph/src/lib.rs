//! The SQLite store: spawn edges, thread index, durable mail and the approval log.
