//! Fluid mode's tables: the event mode's schema, states that add up, the max-min allocation
//! (checked against the bisection oracle of `common.rs`, written apart from the engine),
//! power-ons between samples, reconfiguration, and byte-identical repeats.

mod common;

use common::{oracle, spec, vm, CORE_MHZ, MS, S};
use proptest::prelude::*;
use vmtwin_core::fluid::FluidSim;
use vmtwin_core::metrics::{Column, Table};
use vmtwin_core::spec::{Arrivals, BurstDist, SimSpec, WorkloadSpec};
use vmtwin_core::Simulation;

fn open(duty: f64) -> WorkloadSpec {
    WorkloadSpec::CpuBound { duty, burst_ns: 10 * MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Open }
}

fn mixed() -> SimSpec {
    let mut s = spec(
        4,
        20 * S,
        vec![
            vm("a", 2, 2000, 1000, None, open(0.9)),
            vm("b", 1, 1000, 0, Some(700), common::busy()),
            vm("c", 1, 500, 0, None, WorkloadSpec::Idle),
            vm("d", 3, 3000, 0, None, WorkloadSpec::Trace { segment_ns: vec![3 * S, 5 * S], utilization: vec![0.9, 0.2], burst_ns: 10 * MS, repeat: true }),
        ],
    );
    s.vms[2].power_on_ns = 3 * S;
    s
}

fn column<'a>(t: &'a Table, name: &str) -> &'a Column {
    t.column(name).unwrap_or_else(|| panic!("no column {name}"))
}

fn u64s(t: &Table, name: &str) -> Vec<u64> {
    match column(t, name) {
        Column::U64(v) => v.clone(),
        c => panic!("{name} is {}", c.dtype()),
    }
}

#[test]
fn tables_have_the_event_modes_columns_in_order() {
    let mut ev = Simulation::new(mixed()).unwrap();
    ev.run().unwrap();
    let mut fl = FluidSim::new(mixed()).unwrap();
    fl.run().unwrap();
    assert_eq!(fl.tables().len(), 4);
    for ((name, e), (fname, f)) in ev.tables().iter().zip(fl.tables().iter()) {
        assert_eq!(name, fname);
        let shape = |t: &Table| t.columns.iter().map(|(n, c)| (n.to_string(), c.dtype())).collect::<Vec<_>>();
        assert_eq!(shape(e), shape(f), "table {name}");
        assert_eq!(e.rows(), f.rows(), "table {name}: one row per sample and entity in both modes");
    }
}

#[test]
fn each_vcpus_states_add_up_to_its_powered_on_time() {
    let mut fl = FluidSim::new(mixed()).unwrap();
    fl.run().unwrap();
    let vcpu = fl.tables()[2].1;
    let vm_ids = match column(vcpu, "vm_id") {
        Column::U32(v) => v.clone(),
        _ => unreachable!(),
    };
    let cols = ["run_ns", "ready_ns", "mlmtd_ns", "wait_ns", "idle_ns", "costop_ns"].map(|c| u64s(vcpu, c));
    let times = match column(vcpu, "time_s") {
        Column::F64(v) => v.clone(),
        _ => unreachable!(),
    };
    for r in 0..vcpu.rows() {
        let total: u64 = cols.iter().map(|c| c[r]).sum();
        // c powers on at 3 s, inside the first 2..4 s interval
        let want = if vm_ids[r] == 2 && times[r] == 4.0 { S } else { 2 * S };
        assert_eq!(total, want, "row {r}");
    }
    // b's limit (700 of 2000 MHz) holds it: 35% used, 65% MLMTD, as the event mode shows it
    let c = fl.vm_counters(1);
    assert_eq!((c[5], c[2], c[1]), (7 * S, 13 * S, 0));
}

#[test]
fn sections_fluid_mode_does_not_model_are_refused() {
    let mut s = mixed();
    s.perf = Some(Default::default());
    let err = FluidSim::new(s).unwrap_err().to_string();
    assert!(err.starts_with("perf: ") && err.contains("fluid mode"), "{err}");
    let mut s = mixed();
    s.cpu_sched.cosched_mode = vmtwin_core::cpu::CoschedMode::Relaxed4x;
    let err = FluidSim::new(s).unwrap_err().to_string();
    assert!(err.starts_with("cpu_scheduler.cosched_mode: got relaxed-4x"), "{err}");
}

#[test]
fn repeated_runs_are_byte_identical() {
    let run = || {
        let mut fl = FluidSim::new(mixed()).unwrap();
        fl.run_until(7 * S, &mut |_| true).unwrap();
        fl.set_vm_cpu(0, Some(500), None, Some(Some(1500))).unwrap();
        fl.run().unwrap();
        fl.drain_tables().into_iter().map(|(n, t)| (n, t.columns.iter().map(|(c, v)| (c.to_string(), v.to_le_bytes())).collect::<Vec<_>>())).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn reconfiguration_takes_effect_from_the_stop() {
    let mut fl = FluidSim::new(spec(1, 10 * S, vec![vm("a", 1, 1000, 0, None, common::busy()), vm("b", 1, 1000, 0, None, common::busy())])).unwrap();
    fl.run_until(5 * S, &mut |_| true).unwrap();
    fl.set_vm_cpu(0, Some(3000), None, None).unwrap();
    fl.run().unwrap();
    // 5 s at 1:1, then 5 s at 3:1
    assert_eq!(fl.vm_counters(0)[5], 2_500_000_000 + 3_750_000_000);
    assert_eq!(fl.vm_counters(1)[5], 2_500_000_000 + 1_250_000_000);
}

#[test]
fn admission_control_refuses_as_in_the_event_mode() {
    let s = spec(1, S, vec![vm("a", 1, 1000, 1500, None, common::busy()), vm("b", 1, 1000, 1000, None, common::busy())]);
    let fl = FluidSim::new(s.clone()).unwrap_err().to_string();
    let ev = Simulation::new(s).unwrap_err().to_string();
    assert_eq!(fl, ev);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Flat host, open-loop work: each VM uses its weighted max-min share of the host, its
    /// ceiling min(demand, limit, vCPUs) and its floor min(reservation, ceiling).
    #[test]
    fn flat_host_uses_the_max_min_allocation(
        pcpus in 1u32..=8,
        draws in prop::collection::vec((1u32..=4, 1u32..=8000, 0u32..=100, prop::option::of(1u32..=100), 0u32..=100), 1..12),
    ) {
        let mut vms = vec![];
        let mut free = pcpus as u64 * CORE_MHZ;
        for (i, &(vcpus, shares, duty, limit, res)) in draws.iter().enumerate() {
            let vcpus = vcpus.min(pcpus);
            let cap = vcpus as u64 * CORE_MHZ;
            let limit = limit.map(|p| (p as u64 * cap / 100).max(1));
            let res = (res as u64 * cap / 400).min(limit.unwrap_or(cap)).min(free);
            free -= res;
            let w = if duty == 0 { WorkloadSpec::Idle } else { open(duty as f64 / 100.0) };
            vms.push(vm(&format!("v{i}"), vcpus, shares, res, limit, w));
        }
        let s = spec(pcpus, 10 * S, vms.clone());
        let mut fl = FluidSim::new(s).unwrap();
        fl.run().unwrap();
        let (mut shares, mut lo, mut hi) = (vec![], vec![], vec![]);
        for v in &vms {
            let duty = match v.workload { WorkloadSpec::CpuBound { duty, .. } => duty, _ => 0.0 };
            let top = (duty * v.vcpus as f64).min(v.limit_mhz.map_or(f64::MAX, |l| l as f64 / CORE_MHZ as f64));
            shares.push(v.shares as f64);
            hi.push(top);
            lo.push((v.reservation_mhz as f64 / CORE_MHZ as f64).min(top));
        }
        let want = oracle(pcpus as f64, &shares, &lo, &hi);
        for (i, w) in want.iter().enumerate() {
            let used = fl.vm_counters(i as u32)[5] as f64 / (10 * S) as f64;
            // ns rounding: one ns per vCPU per sample interval at most
            prop_assert!((used - w).abs() < 1e-6, "vm {i}: used {used} pCPUs, oracle {w}");
        }
    }
}
