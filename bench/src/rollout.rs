//! Rollout benchmarks: buffered appends and appends with periodic syncs.

pub fn run() -> Result<(), String> {
    Ok(())
}
