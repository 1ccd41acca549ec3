//! Guardian review: the bounded review request, verdict parsing, the fail-closed mapping and
//! the denial breaker. No I/O: the orchestrator runs the reviewer agent.
