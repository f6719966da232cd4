//! The scheduler's limit constants are parameters (`CpuSchedParams`: `limit_borrow_ns`,
//! `limit_share_split_below`, `limit_dormant_max`): each takes effect, in the direction its
//! mechanism says (`cpu/limit.rs`), and an out-of-range value of any of the five parameters
//! that were constants is refused naming the field, the value and what is allowed.
//! (`demand_wait_power` and `short_margin` take effect in tests beside `update_demand`, in
//! `cpu/sched.rs`.)

mod common;

use common::*;
use vmtwin_core::spec::{PoolSpec, SimSpec};
use vmtwin_core::{Simulation, VmtwinError};

fn run(s: SimSpec) -> Simulation {
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    sim
}

/// `n` busy 1-vCPU VMs on `pcpus` pCPUs below one pool limited to `pool_pcpus` pCPUs.
fn pooled(pcpus: u32, n: usize, pool_pcpus: u64, d: u64) -> SimSpec {
    let mut s = spec(pcpus, d, (0..n).map(|i| vm(&format!("c{i}"), 1, 1000, 0, None, busy())).collect());
    s.pools = vec![PoolSpec { name: "p".into(), parent: None, shares: 4000, reservation_mhz: 0, limit_mhz: Some(pool_pcpus * CORE_MHZ), expandable: true }];
    for v in &mut s.vms {
        v.pool = Some("p".into());
    }
    s
}

/// A busy VM limited to a quarter of a pCPU, alone on two: each time its bucket runs dry, a pCPU
/// would idle, so the held vCPU runs on into at most `limit_borrow_ns` of debt. A larger borrow
/// runs it longer before it is held (fewer, longer stretches: 1601 dispatches at 1 ms, 1001 at
/// 4 ms), and the debt is repaid, so both deliver the limit.
#[test]
fn a_larger_borrow_runs_a_limited_vcpu_longer_beside_an_idle_pcpu() {
    let d = 20 * S;
    let stretch = |borrow: u64| {
        let mut s = spec(2, d, vec![vm("capped", 1, 1000, 0, Some(CORE_MHZ / 4), busy())]);
        s.cpu_sched.limit_borrow_ns = borrow;
        let mut sim = run(s);
        let used = sim.vm_counters(0)[5];
        assert!((used as f64 / d as f64 - 0.25).abs() < 0.001, "borrow {borrow}: used {used} ns of {d}");
        used as f64 / sim.sched().stats.dispatches as f64
    };
    let (short, long) = (stretch(MS), stretch(4 * MS));
    assert!(long > 1.4 * short, "mean run {long} ns with a 4 ms borrow, {short} ns with 1 ms");
}

/// A pool limited to one pCPU over 14 busy vCPUs on 4 pCPUs is throttled; it resumes once it holds
/// a turn per wanting vCPU (70 ms), at most half the share split (`BucketRules::resume_below`).
/// At a share split of 0.1 of its 100 ms depth that is 5 ms, not 25, so the pool runs in shorter
/// turns: more dispatches for the same CPU (89,131 against 47,981), and the limit still delivered.
#[test]
fn a_lower_share_split_resumes_a_pool_in_shorter_turns() {
    let d = 20 * S;
    let dispatches = |split: f64| {
        let mut s = pooled(4, 14, 1, d);
        s.cpu_sched.limit_share_split_below = split;
        let mut sim = run(s);
        let used: u64 = (0..14).map(|v| sim.vm_counters(v)[5]).sum();
        assert!((used as f64 / d as f64 - 1.0).abs() < 0.005, "split {split}: used {used} ns of a 1-pCPU limit over {d}");
        sim.sched().stats.dispatches
    };
    let (low, default) = (dispatches(0.1), dispatches(0.5));
    assert!(low as f64 > 1.5 * default as f64, "{low} dispatches at a 0.1 split, {default} at 0.5");
}

/// A pool limited to 4 pCPUs over 2 busy vCPUs can never drain its bucket, so it sleeps for the
/// longest dormancy, `limit_dormant_max` of its 100 ms burst, and is looked at again after each:
/// every 25 ms at 0.25, every 100 ms at 1, 600 looks fewer over 20 s. Nothing else changes: a
/// dormant pool decides what the per-stop bucket would.
#[test]
fn a_longer_dormancy_looks_at_a_pool_less_often() {
    let d = 20 * S;
    let look = |dormant: f64| {
        let mut s = pooled(4, 2, 4, d);
        s.cpu_sched.limit_dormant_max = dormant;
        let mut sim = run(s);
        let used: Vec<u64> = (0..2).map(|v| sim.vm_counters(v)[5]).collect();
        (sim.event_count(), sim.sched().stats.dispatches, used)
    };
    let (quarter, whole) = (look(0.25), look(1.0));
    let fewer = quarter.0 - whole.0;
    assert!((590..=610).contains(&fewer), "{fewer} events fewer at 1 than at 0.25");
    assert_eq!((quarter.1, &quarter.2), (whole.1, &whole.2), "dispatches and run time");
}

fn refused(set: impl Fn(&mut SimSpec), field: &str, allowed: &str) {
    let mut s = spec(2, S, vec![vm("a", 1, 1000, 0, None, busy())]);
    set(&mut s);
    match Simulation::new(s) {
        Err(VmtwinError::InvalidScenario { path, allowed: a, .. }) => {
            assert_eq!(path, format!("cpu_scheduler.{field}"));
            assert!(a.contains(allowed), "{field}: allowed {a}");
        }
        Err(e) => panic!("{field}: {e}"),
        Ok(_) => panic!("{field}: accepted"),
    }
}

#[test]
fn out_of_range_values_are_refused_naming_the_field() {
    refused(|s| s.cpu_sched.limit_borrow_ns = 0, "limit_borrow", "a duration > 0");
    for bad in [0.0, -0.5, 1.5, f64::NAN] {
        refused(|s| s.cpu_sched.limit_share_split_below = bad, "limit_share_split_below", "(0, 1]");
        refused(|s| s.cpu_sched.limit_dormant_max = bad, "limit_dormant_max", "(0, 1]");
        if !(0.0..=1.0).contains(&bad) {
            refused(|s| s.cpu_sched.short_margin = bad, "short_margin", "from 0 to 1");
        }
    }
    // 0.04 of a 100 ms burst is less than the 5 ms turn: such a dormancy is never taken
    refused(|s| s.cpu_sched.limit_dormant_max = 0.04, "limit_dormant_max", "at least limit_min_slice");
    refused(|s| s.cpu_sched.demand_wait_power = 33, "demand_wait_power", "from 0 to 32");
    // the bounds themselves are accepted
    let mut s = spec(2, S, vec![vm("a", 1, 1000, 0, None, busy())]);
    let p = &mut s.cpu_sched;
    (p.limit_share_split_below, p.limit_dormant_max, p.short_margin, p.demand_wait_power) = (1.0, 0.05, 0.0, 32);
    run(s);
    let mut s = spec(2, S, vec![vm("a", 1, 1000, 0, None, busy())]);
    (s.cpu_sched.short_margin, s.cpu_sched.demand_wait_power) = (1.0, 0);
    run(s);
}
