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

/// A VM's own limit holds while its share of a pool limit is tighter and yields (`share_yields`:
/// no pool bucket above is scarce). On one pCPU a busy VM limited to 5% sits in a pool limited
/// to 25% beside an idle VM with five times its shares: until the first demand estimate every
/// VM is taken to want a whole pCPU, so its share (a sixth of 25%) is below its own limit, and
/// the share yields because the idle sibling leaves the pool's bucket full. Its own limit must
/// still hold: before the own limit was kept apart from the share it ran at the pool's 25% for
/// the first second (243 ms of 1,000).
#[test]
fn own_limit_holds_while_a_tighter_share_yields() {
    let idle = vmtwin_core::spec::WorkloadSpec::Idle;
    let mut s = spec(
        1,
        2 * S,
        vec![vm("capped", 1, 1000, 0, Some(CORE_MHZ / 20), busy()), vm("sibling", 1, 5000, 0, None, idle.clone()), vm("root", 1, 1000, 0, None, idle)],
    );
    s.pools = vec![PoolSpec { name: "p".into(), parent: None, shares: 1000, reservation_mhz: 0, limit_mhz: Some(CORE_MHZ / 4), expandable: true }];
    s.vms[0].pool = Some("p".into());
    s.vms[1].pool = Some("p".into());
    let mut sim = Simulation::new(s).unwrap();
    for second in 1..=2 {
        sim.run_until(second * S, &mut |_| true).unwrap();
        let used = sim.vm_counters(0)[5] as f64;
        // 5% of the time so far, plus the bucket's depth (100 ms at 5%) and a turn (5 ms)
        let bound = 0.05 * (second * S + 100 * MS) as f64 + (5 * MS) as f64;
        assert!(used <= bound, "after {second} s the 5%-limited VM used {used} ns (bound {bound})");
        assert!(used >= 0.045 * (second * S) as f64, "after {second} s it used {used} ns: under its limit");
    }
}

/// A VM whose pool sibling reserves the pool's whole limit but uses less still runs at the
/// limit's rest. Until the first demand estimate every VM is taken to want all its vCPUs, so
/// the sibling's reservation fills the pool's 1,000 MHz and the VM's share of it is 0 MHz: its
/// bucket accrues nothing, and the vCPUs it holds wait for no refill (`hold`). The estimates
/// then put the sibling at its 600 MHz and the VM's share at the 400 left; before the share's
/// change released what its bucket held (`set_share_limit`), all three vCPUs stayed in MLMTD
/// for the whole run (a drawn scenario: `drawn-pools-610060807`, 0.00 of its 20.25 points).
#[test]
fn a_share_of_zero_releases_its_vcpus_when_it_grows() {
    use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
    let light = WorkloadSpec::CpuBound { duty: 0.3, burst_ns: 2 * MS, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Open };
    // a busy VM outside the pool keeps every pCPU taken: a held vCPU borrows none idle
    let vms = vec![vm("rest", 3, 4000, 0, Some(438), busy()), vm("reserver", 1, 500, 1000, None, light), vm("hog", 4, 4000, 0, None, busy())];
    let mut s = spec(4, 10 * S, vms);
    s.pools = vec![PoolSpec { name: "p".into(), parent: None, shares: 4000, reservation_mhz: 1000, limit_mhz: Some(1000), expandable: false }];
    s.vms[0].pool = Some("p".into());
    s.vms[1].pool = Some("p".into());
    let mut sim = Simulation::new(s).unwrap();
    sim.run_until(5 * S, &mut |_| true).unwrap();
    let (rest, reserver) = (sim.vm_counters(0)[5], sim.vm_counters(1)[5]);
    sim.run().unwrap();
    let rest = (sim.vm_counters(0)[5] - rest) as f64 / (5 * S) as f64;
    let reserver = (sim.vm_counters(1)[5] - reserver) as f64 / (5 * S) as f64;
    // in pCPUs over the last 5 s: the sibling its 0.3, the VM the limit's rest, 0.2
    assert!((reserver - 0.3).abs() < 0.01, "the reserving sibling used {reserver} pCPUs for its 0.3");
    assert!((rest - 0.2).abs() < 0.01, "the VM used {rest} pCPUs of the 0.2 its pool's limit leaves it");
}
