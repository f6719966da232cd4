//! A coarse limit turn (`limit_min_slice_ns`) still delivers the limit: the resume level stays
//! under a quarter of the bucket's depth (`cpu/limit.rs`, `BucketRules::resume_below`); and the
//! gaps the turns leave go to the limited VM's loans before a VM held back that has run its
//! entitlement.

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

/// The gaps a limit's turns leave go to the limited VM's loans, not to a VM entitled to less
/// than one loan an interval (`CpuSched::borrower`). On 3 pCPUs: `big` (2 busy vCPUs) is
/// entitled to its two pCPUs, `capped` (3 busy vCPUs) to its 1-pCPU limit, and `crumbs` (3
/// busy vCPUs, 1 share) to nothing. `capped` runs its three vCPUs in 5 ms turns; while they
/// are held, `big` runs on two pCPUs and the third is a gap. `crumbs` used to take every gap
/// (the loan only went where no vCPU was queued): 0.043 pCPU, and `big` 1.957 of its 2. Now
/// `capped` borrows there: `crumbs` 0.002, `big` 1.998, and the limit still holds (1.0002 over
/// 20 s, inside the bucket's 100 ms depth).
#[test]
fn a_limits_gaps_go_to_its_loans_not_to_a_vm_entitled_to_nothing() {
    let d = 20 * S;
    let mut s = spec(3, d, vec![
        vm("big", 2, 1000, 0, None, busy()),
        vm("capped", 3, 1000, 0, Some(CORE_MHZ), busy()),
        vm("crumbs", 3, 1, 0, None, busy()),
    ]);
    s.cpu_sched.limit_min_slice_ns = TURN_NS;
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    let mut used = |v: u32| sim.vm_counters(v)[5] as f64 / d as f64;
    let (big, capped, crumbs) = (used(0), used(1), used(2));
    assert!(capped <= 1.0 + 0.1 / 20.0, "a 1-pCPU limit delivered {capped} pCPUs");
    assert!(big > 1.99, "big got {big} of its 2 pCPUs");
    assert!(crumbs < 0.005, "crumbs, entitled to nothing, got {crumbs} pCPUs");
}

/// Nor to a VM entitled to more than a loan an interval once it has run its entitlement
/// (`CpuSched::gap_unowed`): the gate is its pace, not a threshold on its entitlement. The same
/// host with `small` (1 vCPU, 10 shares) for `crumbs`: entitled to 0.0198 pCPU (10 / 1,010 of
/// the two pCPUs `capped`'s limit leaves), 20 loans an interval. With no loan in place of a
/// queued vCPU it took the gaps (0.136 pCPU, `big` 1.865); now 0.0198 and 1.980.
#[test]
fn a_limits_gaps_go_to_its_loans_not_to_a_vm_past_its_entitlement() {
    let d = 20 * S;
    let mut s = spec(3, d, vec![
        vm("big", 2, 1000, 0, None, busy()),
        vm("capped", 3, 1000, 0, Some(CORE_MHZ), busy()),
        vm("small", 1, 10, 0, None, busy()),
    ]);
    s.cpu_sched.limit_min_slice_ns = TURN_NS;
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    let mut used = |v: u32| sim.vm_counters(v)[5] as f64 / d as f64;
    let (big, capped, small) = (used(0), used(1), used(2));
    assert!(capped <= 1.0 + 0.1 / 20.0, "a 1-pCPU limit delivered {capped} pCPUs");
    assert!(big > 1.975, "big got {big} of its 1.98 pCPUs");
    assert!(small < 0.0198 + 0.005, "small, entitled to 0.0198, got {small} pCPUs");
}
