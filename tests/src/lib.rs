//! Support code for arbor's integration tests. The tests themselves live in `tests/suite/` and
//! are compiled as one binary, the `suite` test of the `arbor-cli` package, so that they can run
//! the real `arbor` binary (`CARGO_BIN_EXE_arbor`) as well as drive the `Orchestrator` directly.

mod history;
pub mod mock_http;
mod session;
pub mod tools;

pub use history::{mail_payloads, payload, texts};
pub use session::Session;
