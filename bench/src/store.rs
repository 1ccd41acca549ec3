//! Store benchmarks: open-descendant BFS and durable mail enqueue.

pub fn run() -> Result<(), String> {
    Ok(())
}
