//! A coarse limit turn (`limit_min_slice_ns`) still delivers the limit: the resume level stays
//! under a quarter of the bucket's depth (`cpu/limit.rs`, `BucketRules::resume_below`).

mod common;

use common::*;
use vmtwin_core::Simulation;

const TURN_NS: u64 = 5 * MS;

#[test]
fn a_limit_whose_turns_overfill_its_bucket_is_delivered() {
    // four 5 ms turns (20 ms) are more than the 16.7 ms a 334 MHz bucket holds: resuming only
    // when full, the bucket dropped what it earned while the turns ran (16.47% here)
    let d = 30 * S;
    let mut s = spec(8, d, vec![vm("capped", 4, 1000, 0, Some(334), busy()), vm("busy", 4, 1000, 0, None, busy())]);
    s.cpu_sched.limit_min_slice_ns = TURN_NS;
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    let got = sim.vm_counters(0)[5] as f64 / d as f64;
    assert!((got - 334.0 / 2000.0).abs() < 0.002, "a 334 MHz limit delivered {got} pCPUs");
}
