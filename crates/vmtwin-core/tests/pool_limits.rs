//! Resource-pool limits bind the VMs below them, even when pCPUs are idle.

mod common;

use common::*;
use vmtwin_core::spec::PoolSpec;
use vmtwin_core::Simulation;

#[test]
fn nested_pool_limit_caps_all_vms_below_it() {
    let mut s = spec(4, 30 * S, vec![vm("x", 2, 2000, 0, None, busy()), vm("y", 2, 2000, 0, None, busy())]);
    s.pools = vec![
        PoolSpec { name: "outer".into(), parent: None, shares: 4000, reservation_mhz: 0, limit_mhz: Some(CORE_MHZ), expandable: true },
        PoolSpec { name: "inner".into(), parent: Some("outer".into()), shares: 4000, reservation_mhz: 0, limit_mhz: None, expandable: true },
    ];
    s.vms[0].pool = Some("inner".into());
    s.vms[1].pool = Some("inner".into());
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    let used: f64 = (0..2).map(|vm| sim.vm_counters(vm)[5] as f64).sum::<f64>() / (30 * S) as f64;
    // one pCPU's worth (the limit) plus at most the initial bucket, although 3 pCPUs sit idle
    assert!((used - 1.0).abs() < 0.01, "x + y used {used} pCPUs under a 1-pCPU pool limit");
    let mlmtd: u64 = (0..2).map(|vm| sim.vm_counters(vm)[2]).sum();
    assert!(mlmtd > 2 * 30 * S, "held time {mlmtd} ns: the limit should show as MLMTD");
}

/// A pool limit far from binding sleeps (`limit.rs`, dormant pool limits), charged in bulk, and
/// wakes when load arrives under it: three VMs busy for 3 s in every 6 under a 2-pCPU pool
/// limit (20 ms slices, so that the pool's slice allowance at the share split, a third of 100
/// ms, binds none). Over the run they get at most the limit's rate plus the depth and the two
/// dormancies the bound allows, in their busy phases the limit, and the held time shows as MLMTD.
#[test]
fn dormant_pool_limit_wakes_when_load_arrives() {
    use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
    let phases = WorkloadSpec::CpuBound { duty: 0.5, burst_ns: 3 * S, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Closed };
    let mut s = spec(4, 30 * S, (0..3).map(|i| vm(&format!("c{i}"), 1, 1000, 0, None, phases.clone())).collect());
    s.cpu_sched.quantum_ns = 20 * MS;
    s.pools = vec![PoolSpec { name: "p".into(), parent: None, shares: 4000, reservation_mhz: 0, limit_mhz: Some(2 * CORE_MHZ), expandable: true }];
    for v in &mut s.vms {
        v.pool = Some("p".into());
    }
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    let used = (0..3).map(|vm| sim.vm_counters(vm)[5]).sum::<u64>() as f64;
    let mlmtd: u64 = (0..3).map(|vm| sim.vm_counters(vm)[2]).sum();
    // 2 x (30 s + 2 x 25 ms) + 200 ms, and a slice of overdraw per vCPU
    let bound = 2.0 * (30 * S + 50 * MS) as f64 + (200 * MS + 3 * 20 * MS) as f64;
    assert!(used <= bound, "the VMs used {used} ns over 30 s at a 2-pCPU pool limit (bound {bound})");
    // its busy phases (half the run: about 15 s) get the limit
    assert!(used > 0.95 * 2.0 * (15 * S) as f64, "the VMs used {used} ns");
    assert!(mlmtd > 3 * S, "held time {mlmtd} ns: the limit binds in the busy phases");
}
