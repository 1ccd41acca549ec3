//! Making ids: how many `ThreadId`s a second one thread and two threads at once make, and
//! whether ids keep the order they were made in, within one millisecond and across threads
//! (the session's core sorts thread ids to get creation order). docs/decisions.md "Ids" has
//! the figures that chose the generator.

use std::sync::mpsc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arbor_protocol::ThreadId;
use serde_json::json;

use crate::report;

/// Ids made by each measured thread.
const IDS: usize = 1_000_000;
/// Hand-offs between two threads, each making one id after the other's.
const HANDOFFS: usize = 10_000;

/// Runs every measurement and prints one JSON line per workload.
pub fn run() -> Result<(), String> {
    for threads in [1, 2] {
        burst(threads)?;
    }
    handoff()
}

/// An id's 128 bits: its text form is a ThreadId's only public view, and its hex digits are
/// its bits.
fn bits(id: ThreadId) -> u128 {
    u128::from_str_radix(&id.to_string().replace('-', ""), 16).unwrap_or(0)
}

/// `threads` threads each make [`IDS`] ids as fast as they can.
fn burst(threads: usize) -> Result<(), String> {
    let started = Instant::now();
    let made: Vec<Vec<ThreadId>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| scope.spawn(|| (0..IDS).map(|_| ThreadId::new()).collect()))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or_default())
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let now_ms = unix_millis();
    if made.iter().any(|ids| ids.len() != IDS) {
        return Err("a thread did not finish".to_string());
    }
    let in_order = made
        .iter()
        .all(|ids| ids.windows(2).all(|pair| pair[0] < pair[1]));
    let mut all: Vec<u128> = made.concat().into_iter().map(bits).collect();
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    let duplicates = before - all.len();
    let (max_per_ms, last_ms) = per_millisecond(&all);
    report(json!({
        "bench": "ids",
        "workload": "burst",
        "threads": threads,
        "ids": threads * IDS,
        "ids_per_s": (threads * IDS) as f64 / wall,
        "ns_per_id": wall * 1e9 / IDS as f64,
        "each_thread_in_order": in_order,
        "duplicates": duplicates,
        "max_ids_in_one_ms": max_per_ms,
        // How far the newest id's millisecond ran ahead of the clock: a generator that
        // borrows later milliseconds when one is full stamps ids in the future.
        "stamp_ahead_of_clock_ms": i128::from(last_ms) - i128::from(now_ms),
    }));
    Ok(())
}

/// Two threads take turns: each makes an id only once the other has made its own, so every
/// id is made after the one before it, on another thread.
fn handoff() -> Result<(), String> {
    let (to_b, from_a) = mpsc::sync_channel::<ThreadId>(0);
    let (to_a, from_b) = mpsc::sync_channel::<ThreadId>(0);
    let started = Instant::now();
    let (out_of_order, ids) = std::thread::scope(|scope| {
        let b = scope.spawn(move || {
            let mut out_of_order = 0;
            while let Ok(previous) = from_a.recv() {
                let id = ThreadId::new();
                out_of_order += usize::from(id <= previous);
                if to_a.send(id).is_err() {
                    break;
                }
            }
            out_of_order
        });
        let mut out_of_order = 0;
        let mut previous = ThreadId::new();
        for _ in 0..HANDOFFS {
            if to_b.send(previous).is_err() {
                break;
            }
            let Ok(from_other) = from_b.recv() else {
                break;
            };
            let id = ThreadId::new();
            out_of_order += usize::from(from_other <= previous) + usize::from(id <= from_other);
            previous = id;
        }
        drop(to_b);
        let other = b
            .join()
            .map_err(|_| "a hand-off thread panicked".to_string());
        other.map(|other| (out_of_order + other, HANDOFFS * 2 + 1))
    })?;
    let wall = started.elapsed().as_secs_f64();
    report(json!({
        "bench": "ids",
        "workload": "handoff",
        "threads": 2,
        "ids": ids,
        "us_per_handoff": wall * 1e6 / (HANDOFFS * 2) as f64,
        "out_of_order": out_of_order,
    }));
    Ok(())
}

/// The most ids that share one millisecond stamp, and the newest id's millisecond.
fn per_millisecond(sorted: &[u128]) -> (usize, u64) {
    let millis = |id: u128| u64::try_from(id >> 80).unwrap_or(u64::MAX);
    let mut max = 0;
    let mut run = 0;
    let mut last = None;
    for &id in sorted {
        let ms = millis(id);
        run = if last == Some(ms) { run + 1 } else { 1 };
        max = max.max(run);
        last = Some(ms);
    }
    (max, last.unwrap_or(0))
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
