//! Property test of the fair clock's lag (issue 5: "lag is bounded for every vCPU"; C3).
//!
//! Random hosts and VMs as users build them: 1-4 vCPU VMs that sleep (duty-cycled, open and
//! closed loop, traces, idle), reservations, VM limits, root pools with shares, limits and
//! reservations, and the clock's bounds drawn small as well as at their defaults, so that they
//! bind. Every 10 ms of a 30 s run, from outside the scheduler (`CpuSched::lag_ns`, each
//! runnable vCPU's lag from its own key and weight), it checks:
//! - the clock is the weight-averaged key of the runnable vCPUs: their lags sum to zero
//!   (the scheduler keeps the clock in O(1) sums updated at every join, leave and charge; this
//!   recomputes it from the records);
//! - no vCPU owes more than the bound of the last entitlement update (`max_debt_ns`, or
//!   `max_backlog_debt_ns` for a backlogged vCPU of a held-back VM) plus one interval's CPU;
//! - none is owed more than `max_lag_ns` plus one interval's CPU on every pCPU.
//! The slack is loose on purpose: between updates a lag moves with the clock, and even right
//! after one a clamped lag sits past its bound by its weight's part of what the clamps took off
//! (the clock is the mean of the clamped keys; seen: owed 20.1 ms for a 20 ms bound). What the
//! bounds catch is a lag that grows without one. Before `max_backlog_debt_ns`, a backlogged
//! vCPU of a held-back VM had none at an update (one drawn scenario's settled at 1.30 s); its
//! bound was the clock's zero sum, which grows with the number of runnable vCPUs.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::spec::{Arrivals, BurstDist, PoolSpec, WorkloadSpec};
use vmtwin_core::Simulation;

const STEP: u64 = 10 * MS;
const RUN: u64 = 30 * S;

fn workload() -> impl Strategy<Value = WorkloadSpec> {
    prop_oneof![
        1 => Just(WorkloadSpec::Idle),
        6 => (prop_oneof![0.05f64..=1.0, 0.7f64..=1.0], 1u64..40, any::<bool>(), any::<bool>()).prop_map(|(duty, burst_ms, exp, open)| WorkloadSpec::CpuBound {
            duty,
            burst_ns: burst_ms * MS,
            burst_dist: if exp { BurstDist::Exponential } else { BurstDist::Fixed },
            arrivals: if open { Arrivals::Open } else { Arrivals::Closed },
        }),
        1 => (proptest::collection::vec(0.0f64..=1.0, 1..5), 1u64..20).prop_map(|(u, burst_ms)| WorkloadSpec::Trace {
            segment_ns: vec![900 * MS; u.len()],
            utilization: u,
            burst_ns: burst_ms * MS,
            repeat: true,
        }),
    ]
}

/// (pool index or none, vCPUs, shares, reservation as a fraction of its fair part, limit in
/// percent of its vCPUs' capacity or none, workload)
fn vms() -> impl Strategy<Value = Vec<(Option<usize>, u32, u32, f64, Option<u64>, WorkloadSpec)>> {
    proptest::collection::vec(
        (proptest::option::of(0usize..2), 1u32..=4, 1u32..10_000, prop_oneof![Just(0.0), 0.0f64..0.9], proptest::option::of(10u64..100), workload()),
        2..10,
    )
}

/// (shares, limit in percent of the host or none, expandable)
fn pools() -> impl Strategy<Value = Vec<(u32, Option<u64>, bool)>> {
    proptest::collection::vec((1u32..10_000, proptest::option::of(5u64..100), any::<bool>()), 0..=2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, rng_seed: RngSeed::Fixed(41), ..ProptestConfig::default() })]

    #[test]
    fn every_vcpu_lag_is_bounded_and_the_clock_is_the_runnable_mean(
        pcpus in 1u32..=4,
        vms in vms(),
        pools in pools(),
        (max_lag_ms, max_debt_ms, backlog_ms) in prop_oneof![Just((100u64, 300u64, 3000u64)), Just((20, 50, 50)), Just((20, 50, 400))],
        interval_ms in prop_oneof![Just(1000u64), Just(250)],
    ) {
        let cap = pcpus as u64 * CORE_MHZ;
        let n = vms.len() as f64;
        let mut specs: Vec<_> = vms.iter().enumerate().map(|(i, (pool, vcpus, shares, res, limit, w))| {
            let vcpus = (*vcpus).min(pcpus);
            // reservations within admission control: each VM at most its part of 60% of the host
            // and 90% of its own vCPUs
            let reservation = (res * (0.6 * cap as f64 / n).min(0.9 * (vcpus as u64 * CORE_MHZ) as f64)) as u64;
            let limit = limit.map(|pct| (pct * vcpus as u64 * CORE_MHZ / 100).max(reservation).max(1));
            let mut v = vm(&format!("vm{i}"), vcpus, *shares, reservation, limit, w.clone());
            v.pool = pool.filter(|&p| p < pools.len()).map(|p| format!("p{p}"));
            v.power_on_ns = (i as u64) * 7 * MS;
            v
        }).collect();
        let pool_specs: Vec<_> = pools.iter().enumerate().map(|(p, (shares, limit, expandable))| {
            let name = format!("p{p}");
            let below: u64 = specs.iter().filter(|v| v.pool.as_deref() == Some(name.as_str())).map(|v| v.reservation_mhz).sum();
            // a fixed pool reserves what its VMs do; a limit holds them
            let limit = limit.map(|pct| (pct * cap / 100).max(below).max(1));
            PoolSpec { name, parent: None, shares: *shares, reservation_mhz: if *expandable { 0 } else { below }, limit_mhz: limit, expandable: *expandable }
        }).collect();
        specs.sort_by_key(|v| v.power_on_ns);
        let mut s = spec(pcpus, RUN, specs);
        s.pools = pool_specs;
        s.cpu_sched.max_lag_ns = max_lag_ms * MS;
        s.cpu_sched.max_debt_ns = max_debt_ms * MS;
        s.cpu_sched.max_backlog_debt_ns = backlog_ms * MS;
        s.cpu_sched.entitlement_interval_ns = interval_ms * MS;
        let mut sim = Simulation::new(s).unwrap();
        let n_vcpus = sim.sched().vcpus.len();
        let interval = (interval_ms * MS) as f64;
        let mut t = 0;
        while t < RUN {
            t += STEP;
            sim.run_until(t, &mut |_| true).unwrap();
            let sched = sim.sched();
            let (mut sum, mut mag) = (0.0, 0.0);
            for v in 0..n_vcpus as u32 {
                let Some(lag) = sched.lag_ns(v, t) else { continue };
                sum += lag;
                mag += lag.abs();
                let slack = interval;
                let debt_bound = sched.debt_bound_ns(v) + slack;
                prop_assert!(-lag <= debt_bound, "t {} ms: vCPU {} owes {:.1} ms, bound {:.1} ms", t / MS, v, -lag / 1e6, debt_bound / 1e6);
                let credit_bound = (max_lag_ms * MS) as f64 + slack * pcpus as f64;
                prop_assert!(lag <= credit_bound, "t {} ms: vCPU {} is owed {:.1} ms, bound {:.1} ms", t / MS, v, lag / 1e6, credit_bound / 1e6);
            }
            prop_assert!(sum.abs() <= 1e-9 * mag + 1e3, "t {} ms: the runnable vCPUs' lags sum to {:.3} ns (of {:.3e})", t / MS, sum, mag);
        }
    }
}
