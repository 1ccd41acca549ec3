//! The SQLite store: spawn graph, thread index, durable mail, approval log, bad files.
