//! arbor's integration tests: one binary (the `suite` test of `arbor-cli`), one module per
//! area. Shared support code is the `arbor-tests` library.

mod approvals;
mod architecture;
mod architecture_modules;
mod cli;
mod compaction;
mod config;
mod docs;
mod doctor;
mod durability;
mod engine_seam;
mod gc;
mod handles;
mod hardening;
mod lease;
mod mcp;
mod outside;
mod paths;
mod providers;
mod residency;
mod restate;
mod resume;
mod rollout;
mod sandbox;
mod scenarios;
mod settling;
mod store;
mod store_lag;
mod streaming;
mod ui;
mod worktrees;
