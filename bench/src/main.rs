//! `arbor-bench`: runs arbor's benchmarks and prints one JSON line per measurement.
//!
//! Usage: `cargo run --release -p arbor-bench -- [store|rollout|all]`

mod rollout;
mod store;

use std::process::ExitCode;

fn main() -> ExitCode {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".to_string());
    let result = match which.as_str() {
        "store" => store::run(),
        "rollout" => rollout::run(),
        "all" => store::run().and_then(|()| rollout::run()),
        other => {
            eprintln!("error: unknown benchmark `{other}`; expected store, rollout or all");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Prints one measurement as a JSON line.
pub fn report(value: serde_json::Value) {
    println!("{value}");
}
