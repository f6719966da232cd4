//! The demand estimate behind entitlements.

mod common;

use common::*;
use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
use vmtwin_core::Simulation;

/// An uncontended vCPU busy 30% of the time is estimated at about 0.3 pCPU within a few
/// entitlement intervals (the EWMA weight 0.5 halves the old estimate's weight every second),
/// and a halted one decays towards zero.
#[test]
fn demand_tracks_duty_cycle() {
    let duty = WorkloadSpec::CpuBound { duty: 0.3, burst_ns: 5 * MS, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Closed };
    let mut sim = Simulation::new(spec(2, 20 * S, vec![vm("a", 1, 1000, 0, None, duty), vm("b", 1, 1000, 0, None, WorkloadSpec::Idle)])).unwrap();
    sim.run_until(10 * S, &mut |_| true).unwrap();
    let a = sim.sched().vcpus[0].demand;
    let b = sim.sched().vcpus[1].demand;
    assert!((a - 0.3).abs() < 0.02, "duty-cycle demand estimate {a}");
    assert!(b < 0.01, "idle demand estimate {b}");
}
