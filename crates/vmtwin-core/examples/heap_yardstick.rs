//! A yardstick for this machine's speed at the moment: the cost of one pop + push on a binary heap
//! of 80 pending `(time, seq)` keys, the textbook discrete-event queue at bench-64vm's size (issue
//! 5 measured the engine against it: 94 ns per event was then 2.0 such operations).
//!
//! The machine the benchmarks run on drifts by several percent between hours (another tenant,
//! clock speed), more than most code changes move them. `benchmarks/run.py` runs this beside
//! the benchmarks and reports each run's cost per event in these units too, so two recordings
//! taken in different machine states can be told apart from two different engines.
//!
//! Usage: `heap_yardstick [OPS]` (default 10,000,000 per round, best of 5 rounds); prints one
//! JSON object: `{"heap_ns": ..., "ops": ..., "checksum": ...}`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// Pending keys: bench-64vm has about one pending event per VM plus a few timers.
const PENDING: u64 = 80;
/// Rounds timed; the fastest counts (the others include interruptions).
const ROUNDS: usize = 5;
/// Keys are pushed up to this far ahead (ns, about a millisecond): a slice or a short halt.
const AHEAD_NS: u64 = 1 << 20;

fn main() {
    let ops: u64 = match std::env::args().nth(1) {
        None => 10_000_000,
        Some(s) => match s.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("error: OPS = {s:?}: expected a whole number of operations > 0");
                std::process::exit(2);
            }
        },
    };
    let mut best = f64::INFINITY;
    let mut checksum = 0u64;
    for round in 0..ROUNDS {
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ round as u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut heap = BinaryHeap::with_capacity(PENDING as usize + 1);
        for seq in 0..PENDING {
            heap.push(Reverse((next() % AHEAD_NS, seq)));
        }
        let mut seq = PENDING;
        let start = Instant::now();
        for _ in 0..ops {
            let Reverse((t, s)) = heap.pop().expect("the heap never empties");
            checksum = checksum.wrapping_add(t ^ s);
            heap.push(Reverse((t + next() % AHEAD_NS, seq)));
            seq += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / ops as f64 * 1e9);
    }
    println!("{{\"heap_ns\": {best:.3}, \"ops\": {ops}, \"checksum\": {checksum}}}");
}
