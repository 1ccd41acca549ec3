//! arbor's integration tests: one binary, one module per area.

mod paths;
mod rollout;
mod store;
