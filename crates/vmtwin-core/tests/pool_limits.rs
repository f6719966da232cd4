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
