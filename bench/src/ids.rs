//! Making ids: how many `ThreadId`s a second one thread and two threads at once make, and
//! whether ids keep the order they were made in, within one millisecond and across threads
//! (the session's core sorts thread ids to get creation order). Beside arbor's generator, the
//! `uuid` crate's `Uuid::now_v7` is measured the same way.

use std::sync::mpsc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arbor_protocol::ThreadId;
use serde_json::json;

use crate::report;

/// Ids made by each measured thread.
const IDS: usize = 1_000_000;
/// Hand-offs between two threads, each making one id after the other's.
const HANDOFFS: usize = 10_000;

/// One way of making ids: ids that sort as they were made, and their 128 bits afterwards.
trait Generator {
    const NAME: &'static str;
    type Id: Ord + Copy + Send;
    fn make() -> Self::Id;
    fn bits(id: Self::Id) -> u128;
}

/// arbor's `ThreadId::new`.
struct Arbor;

impl Generator for Arbor {
    const NAME: &'static str = "arbor";
    type Id = ThreadId;
    fn make() -> ThreadId {
        ThreadId::new()
    }
    fn bits(id: ThreadId) -> u128 {
        // The text form is a ThreadId's only public view; its hex digits are its bits.
        u128::from_str_radix(&id.to_string().replace('-', ""), 16).unwrap_or(0)
    }
}

/// The `uuid` crate's `Uuid::now_v7`, with its process-wide counter.
struct UuidV7;

impl Generator for UuidV7 {
    const NAME: &'static str = "uuid_now_v7";
    type Id = uuid::Uuid;
    fn make() -> uuid::Uuid {
        uuid::Uuid::now_v7()
    }
    fn bits(id: uuid::Uuid) -> u128 {
        id.as_u128()
    }
}

/// Runs every measurement and prints one JSON line per generator and workload.
pub fn run() -> Result<(), String> {
    measure::<Arbor>()?;
    measure::<UuidV7>()
}

fn measure<G: Generator>() -> Result<(), String> {
    for threads in [1, 2] {
        burst::<G>(threads)?;
    }
    handoff::<G>()
}

/// `threads` threads each make [`IDS`] ids as fast as they can.
fn burst<G: Generator>(threads: usize) -> Result<(), String> {
    let started = Instant::now();
    let made: Vec<Vec<G::Id>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| scope.spawn(|| (0..IDS).map(|_| G::make()).collect()))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or_default())
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let now_ms = unix_millis();
    if made.iter().any(|ids| ids.len() != IDS) {
        return Err(format!("a {} thread did not finish", G::NAME));
    }
    let in_order = made
        .iter()
        .all(|ids| ids.windows(2).all(|pair| pair[0] < pair[1]));
    let mut all: Vec<u128> = made.concat().into_iter().map(G::bits).collect();
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    let duplicates = before - all.len();
    let (max_per_ms, last_ms) = per_millisecond(&all);
    report(json!({
        "bench": "ids",
        "generator": G::NAME,
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
fn handoff<G: Generator>() -> Result<(), String> {
    let (to_b, from_a) = mpsc::sync_channel::<G::Id>(0);
    let (to_a, from_b) = mpsc::sync_channel::<G::Id>(0);
    let started = Instant::now();
    let (out_of_order, ids) = std::thread::scope(|scope| {
        let b = scope.spawn(move || {
            let mut out_of_order = 0;
            while let Ok(previous) = from_a.recv() {
                let id = G::make();
                out_of_order += usize::from(id <= previous);
                if to_a.send(id).is_err() {
                    break;
                }
            }
            out_of_order
        });
        let mut out_of_order = 0;
        let mut previous = G::make();
        for _ in 0..HANDOFFS {
            if to_b.send(previous).is_err() {
                break;
            }
            let Ok(from_other) = from_b.recv() else {
                break;
            };
            let id = G::make();
            out_of_order += usize::from(from_other <= previous) + usize::from(id <= from_other);
            previous = id;
        }
        drop(to_b);
        let other = b
            .join()
            .map_err(|_| format!("a {} hand-off thread panicked", G::NAME));
        other.map(|other| (out_of_order + other, HANDOFFS * 2 + 1))
    })?;
    let wall = started.elapsed().as_secs_f64();
    report(json!({
        "bench": "ids",
        "generator": G::NAME,
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
