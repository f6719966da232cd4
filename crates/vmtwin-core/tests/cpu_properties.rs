//! Property tests of the CPU scheduler: time conservation and proportional share.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::metrics::Column;
use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
use vmtwin_core::Simulation;

fn workload() -> impl Strategy<Value = WorkloadSpec> {
    prop_oneof![
        Just(WorkloadSpec::Idle),
        (0.05f64..=1.0, 1u64..60, any::<bool>(), any::<bool>()).prop_map(|(duty, burst_ms, exp, open)| WorkloadSpec::CpuBound {
            duty,
            burst_ns: burst_ms * MS,
            burst_dist: if exp { BurstDist::Exponential } else { BurstDist::Fixed },
            arrivals: if open { Arrivals::Open } else { Arrivals::Closed },
        }),
        (proptest::collection::vec(0.0f64..=1.0, 1..6), 1u64..20).prop_map(|(u, burst_ms)| WorkloadSpec::Trace {
            segment_ns: vec![700 * MS; u.len()],
            utilization: u,
            burst_ns: burst_ms * MS,
            repeat: true,
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, rng_seed: RngSeed::Fixed(128), ..ProptestConfig::default() })]

    /// For every vCPU, RUN + READY + MLMTD + WAIT + WAIT_IDLE equals its powered-on time, no
    /// pCPU runs more than one vCPU at a time, and the sampled per-interval counters add up to
    /// the interval.
    #[test]
    fn vcpu_time_is_conserved(
        pcpus in 1u32..6,
        vms in proptest::collection::vec((1u32..4, 1u32..8000, any::<bool>(), 5u64..150, workload(), 0u64..3), 1..10),
    ) {
        let cap = pcpus as u64 * CORE_MHZ;
        let specs: Vec<_> = vms.iter().enumerate().map(|(i, (n, shares, limited, limit_pct, w, on_s))| {
            let n = (*n).min(pcpus);
            let limit = limited.then(|| (limit_pct * CORE_MHZ / 100).max(1));
            let mut v = vm(&format!("vm{i}"), n, *shares, 0, limit, w.clone());
            v.power_on_ns = on_s * S + (i as u64) * 3 * MS;
            v
        }).collect();
        let duration = 8 * S;
        let mut sim = Simulation::new(spec(pcpus, duration, specs.clone())).unwrap();
        sim.run().unwrap();
        for (i, v) in specs.iter().enumerate() {
            let c = sim.vm_counters(i as u32);
            let total: u64 = c[..5].iter().sum();
            prop_assert_eq!(total, (duration - v.power_on_ns) * v.vcpus as u64, "vm {}", i);
            // charged (used) time is work the guest had: none for an idle guest; with fixed
            // bursts, at most duty of the powered-on time plus a burst per vCPU (closed loop:
            // each burst is followed by its halt; open loop: one burst arrives per burst/duty),
            // with one more burst of slack for integer rounding of the spacing
            let on = (duration - v.power_on_ns) as f64;
            match &v.workload {
                WorkloadSpec::Idle => prop_assert_eq!(c[5], 0, "idle vm {} charged", i),
                WorkloadSpec::CpuBound { duty, burst_ns, burst_dist: BurstDist::Fixed, .. } => {
                    let most = v.vcpus as f64 * (duty * on + 2.0 * *burst_ns as f64);
                    prop_assert!(c[5] as f64 <= most, "vm {} used {} ns, more than its guest's work {}", i, c[5], most);
                }
                _ => {}
            }
        }
        let run_all: u64 = (0..specs.len()).map(|i| sim.vm_counters(i as u32)[0]).sum();
        prop_assert!(run_all <= pcpus as u64 * duration);
        // the samples: each vCPU row's states add up to its span
        let (_, vcpu) = sim.tables()[2];
        let col = |name: &str| match vcpu.column(name).unwrap() { Column::U64(v) => v.clone(), _ => unreachable!() };
        let (run, ready, wait, idle, mlmtd) = (col("run_ns"), col("ready_ns"), col("wait_ns"), col("idle_ns"), col("mlmtd_ns"));
        let Column::F64(t) = vcpu.column("time_s").unwrap() else { unreachable!() };
        let Column::U32(vmid) = vcpu.column("vm_id").unwrap() else { unreachable!() };
        for r in 0..run.len() {
            let end = (t[r] * 1e9).round() as u64;
            let start = (end - 2 * S).max(specs[vmid[r] as usize].power_on_ns);
            prop_assert_eq!(run[r] + ready[r] + wait[r] + idle[r] + mlmtd[r], end - start);
        }
        let _ = cap;
    }

    /// CPU-bound single-vCPU VMs receive CPU within 2% of the exact weighted max-min fair
    /// allocation: shares, clamped by reservations, limits and one pCPU per vCPU.
    #[test]
    fn cpu_bound_vms_get_the_water_filling_allocation(
        pcpus in 1u32..9,
        vms in proptest::collection::vec((1u32..10_000, 0u32..=100, 1u32..=100, any::<bool>()), 1..14),
    ) {
        let cap = pcpus as f64;
        // reservations (in % of a pCPU) scaled down to fit the host, as admission control demands
        let want: f64 = vms.iter().map(|v| v.1 as f64 / 100.0).sum();
        let scale = if want > cap { cap / want * 0.999 } else { 1.0 };
        let mut shares = vec![];
        let mut lo = vec![];
        let mut hi = vec![];
        let mut specs = vec![];
        for (i, &(s, r_pct, l_pct, limited)) in vms.iter().enumerate() {
            let r_mhz = ((r_pct as f64 / 100.0 * scale) * CORE_MHZ as f64).floor() as u64;
            let l_mhz = limited.then(|| ((l_pct as u64 * CORE_MHZ) / 100).max(r_mhz).max(1));
            shares.push(s as f64);
            lo.push(r_mhz as f64 / CORE_MHZ as f64);
            hi.push(l_mhz.map_or(1.0, |l| (l as f64 / CORE_MHZ as f64).min(1.0)));
            specs.push(vm(&format!("vm{i}"), 1, s, r_mhz, l_mhz, busy()));
        }
        let exact = oracle(cap, &shares, &lo, &hi);
        let duration = 120 * S;
        let mut sim = Simulation::new(spec(pcpus, duration, specs)).unwrap();
        sim.run().unwrap();
        for (i, e) in exact.iter().enumerate() {
            let got = sim.vm_counters(i as u32)[5] as f64 / duration as f64;
            prop_assert!((got - e).abs() <= 0.02 * e.max(0.25), "vm{} got {} pCPU, exact {} (all: {:?})", i, got, e, exact);
        }
    }
}
