//! The `pcpu` table: per-pCPU busy time, accounted separately from the vCPUs' RUN time, must
//! agree with it: each interval, the pCPUs' mean utilisation is the host's, each pCPU's is
//! within 0-100, and a host with more busy vCPUs than pCPUs keeps every pCPU busy.

mod common;

use common::*;
use vmtwin_core::metrics::Column;
use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
use vmtwin_core::Simulation;

fn f64s(c: &Column) -> Vec<f64> {
    match c {
        Column::F64(v) => v.clone(),
        _ => unreachable!(),
    }
}

#[test]
fn pcpu_rows_add_up_to_the_host_row() {
    let light = WorkloadSpec::CpuBound { duty: 0.3, burst_ns: 7 * MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Open };
    let vms = vec![vm("a", 2, 1000, 0, None, light.clone()), vm("b", 1, 500, 0, Some(900), busy()), vm("c", 3, 2000, 0, None, light)];
    let mut sim = Simulation::new(spec(3, 20 * S, vms)).unwrap();
    sim.run().unwrap();
    let (host, pcpu) = (sim.table("host").unwrap(), sim.table("pcpu").unwrap());
    let (hu, pu) = (f64s(host.column("%PCPU_UTIL").unwrap()), f64s(pcpu.column("%PCPU_UTIL").unwrap()));
    assert_eq!(pu.len(), 3 * hu.len());
    for (i, h) in hu.iter().enumerate() {
        let rows = &pu[3 * i..3 * i + 3];
        assert!(rows.iter().all(|&u| (0.0..=100.0 + 1e-9).contains(&u)), "{rows:?}");
        let mean = rows.iter().sum::<f64>() / 3.0;
        assert!((mean - h).abs() < 1e-6, "interval {i}: pCPUs {rows:?} mean {mean}, host {h}");
    }
    assert!(hu.iter().any(|&h| h > 10.0 && h < 95.0), "the load should be partial: {hu:?}");
}

#[test]
fn an_overcommitted_host_keeps_every_pcpu_busy() {
    let vms = (0..5).map(|i| vm(&format!("v{i}"), 1, 1000, 0, None, busy())).collect();
    let mut sim = Simulation::new(spec(4, 6 * S, vms)).unwrap();
    sim.run().unwrap();
    let pcpu = sim.table("pcpu").unwrap();
    for u in f64s(pcpu.column("%PCPU_UTIL").unwrap()) {
        assert!(u > 99.999, "{u}");
    }
}
