//! `arbor-bench`: runs arbor's benchmarks and prints one JSON line per measurement.
//!
//! Usage: `cargo run --release -p arbor-bench -- [store|rollout|all]`.
//! Files go under `ARBOR_BENCH_DIR` (default: the system temp dir).

mod rollout;
mod store;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map_or("all", String::as_str);
    let result = match which {
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

/// A fresh temporary directory under `ARBOR_BENCH_DIR` (default: the system temp dir).
pub fn bench_dir() -> Result<tempfile::TempDir, String> {
    let base = std::env::var_os("ARBOR_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    tempfile::Builder::new()
        .prefix("arbor-bench-")
        .tempdir_in(base)
        .map_err(|err| format!("cannot create a benchmark dir: {err}"))
}
