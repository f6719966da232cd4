//! Co-scheduling (`relaxed-4x`) in the engine: a running vCPU never leads a sibling that is not
//! progressing by more than the skew threshold, time stays conserved with COSTOP counted, and
//! co-stops happen where siblings drift apart and not where they progress together.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::cpu::{CoschedMode, VcpuState, STATES};
use vmtwin_core::spec::{Arrivals, BurstDist, SimSpec, WorkloadSpec};
use vmtwin_core::Simulation;

const THRESHOLD: u64 = 3 * MS;

fn relaxed(mut s: SimSpec) -> SimSpec {
    s.cpu_sched.cosched_mode = CoschedMode::Relaxed4x;
    s.cpu_sched.cosched_skew_threshold_ns = THRESHOLD;
    s
}

/// Progress as the mechanism defines it, recomputed here from the public counters: ns in RUN
/// or WAIT_IDLE, the current state's open interval included.
fn progress(sim: &Simulation, v: usize) -> u64 {
    let vc = &sim.sched().vcpus[v];
    let mut p = vc.time_ns[VcpuState::Run as usize] + vc.time_ns[VcpuState::Idle as usize];
    if matches!(vc.state, VcpuState::Run | VcpuState::Idle) {
        p += sim.now() - vc.since;
    }
    p
}

fn moving(state: VcpuState) -> bool {
    matches!(state, VcpuState::Run | VcpuState::Idle)
}

fn workload() -> impl Strategy<Value = WorkloadSpec> {
    (0.05f64..=1.0, 1u64..40, any::<bool>(), any::<bool>()).prop_map(|(duty, burst_ms, exp, open)| WorkloadSpec::CpuBound {
        duty,
        burst_ns: burst_ms * MS,
        burst_dist: if exp { BurstDist::Exponential } else { BurstDist::Fixed },
        arrivals: if open { Arrivals::Open } else { Arrivals::Closed },
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, rng_seed: RngSeed::Fixed(44), ..ProptestConfig::default() })]

    /// Whenever time moves on, no running vCPU leads a sibling that is not progressing by more
    /// than the threshold, and every vCPU's state times add up to its powered-on time.
    #[test]
    fn leaders_are_stopped_at_the_threshold_and_time_is_conserved(
        pcpus in 1u32..5,
        vms in proptest::collection::vec((1u32..5, 1u32..4000, any::<bool>(), 10u64..120, workload()), 1..7),
    ) {
        let specs: Vec<_> = vms.iter().enumerate().map(|(i, (n, shares, limited, limit_pct, w))| {
            let limit = limited.then(|| (limit_pct * CORE_MHZ / 100).max(1));
            vm(&format!("vm{i}"), (*n).min(pcpus), *shares, 0, limit, w.clone())
        }).collect();
        let duration = 3 * S;
        let mut sim = Simulation::new(relaxed(spec(pcpus, duration, specs.clone()))).unwrap();
        let mut first = vec![0usize];
        for v in &specs {
            first.push(first.last().unwrap() + v.vcpus as usize);
        }
        let (mut at, mut same) = (0, 0u32);
        while sim.step() {
            // time must move on: a co-stop and a release must not chase each other forever
            same = if sim.now() == at { same + 1 } else { 0 };
            at = sim.now();
            prop_assert!(same < 10_000, "stuck at {} ns", at);
            // look only once every event of this instant is done
            if sim.now() >= duration || sim_next_is_later(&sim) {
                for vm in 0..specs.len() {
                    let sibs = first[vm]..first[vm + 1];
                    for i in sibs.clone() {
                        if sim.sched().vcpus[i].state != VcpuState::Run {
                            continue;
                        }
                        for j in sibs.clone() {
                            let sj = sim.sched().vcpus[j].state;
                            if !moving(sj) {
                                let lead = progress(&sim, i).saturating_sub(progress(&sim, j));
                                prop_assert!(lead <= THRESHOLD, "vm {} vCPU {} runs {} ns ahead of {} ({:?}) at {}", vm, i, lead, j, sj, sim.now());
                            }
                        }
                    }
                }
            }
            if sim.now() >= duration {
                break;
            }
        }
        for vm in 0..specs.len() {
            sim.vm_counters(vm as u32); // accounts every vCPU up to now
            for v in first[vm]..first[vm + 1] {
                let t = &sim.sched().vcpus[v].time_ns;
                let on: u64 = (0..STATES).filter(|&s| s != VcpuState::Off as usize).map(|s| t[s]).sum();
                prop_assert_eq!(on, sim.now(), "vCPU {}", v);
            }
        }
    }
}

/// The next event is after the current instant (or there is none).
fn sim_next_is_later(sim: &Simulation) -> bool {
    sim.next_event_time().is_none_or(|t| t > sim.now())
}

fn costop_ns(sim: &mut Simulation, vm: u32, first: usize, n: usize) -> u64 {
    sim.vm_counters(vm);
    (first..first + n).map(|v| sim.sched().vcpus[v].time_ns[VcpuState::Costop as usize]).sum()
}

#[test]
fn a_vm_whose_vcpus_drift_apart_is_costopped_and_off_means_never() {
    // a 2-vCPU VM at 60% duty with random bursts, entitled to less than it wants beside three
    // busy single-vCPU VMs on 2 pCPUs: one of its vCPUs waits READY while the other halts
    // (progress), so they drift apart
    let light = WorkloadSpec::CpuBound { duty: 0.6, burst_ns: 5 * MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Closed };
    let pair = vm("pair", 2, 1000, 0, None, light);
    let vms = vec![pair, vm("a", 1, 1000, 0, None, busy()), vm("b", 1, 1000, 0, None, busy()), vm("c", 1, 1000, 0, None, busy())];
    let mut on = Simulation::new(relaxed(spec(2, 10 * S, vms.clone()))).unwrap();
    on.run().unwrap();
    assert!(on.sched().stats.costops > 0);
    assert!(costop_ns(&mut on, 0, 0, 2) > 0);
    let mut off = Simulation::new(spec(2, 10 * S, vms)).unwrap();
    off.run().unwrap();
    assert_eq!(off.sched().stats.costops, 0);
    assert_eq!(costop_ns(&mut off, 0, 0, 2), 0);
}

#[test]
fn siblings_that_progress_together_are_never_costopped() {
    // a busy 4-vCPU VM alone on 4 pCPUs: every vCPU runs all the time
    let mut sim = Simulation::new(relaxed(spec(4, 5 * S, vec![vm("wide", 4, 1000, 0, None, busy())]))).unwrap();
    sim.run().unwrap();
    assert_eq!(sim.sched().stats.costops, 0);
}
