//! Co-scheduling in the engine, every mode: `strict` (ESX 2.x) and `relaxed-3x` (ESX 3.x), with
//! VM-wide co-stop and gang co-start, and `relaxed-4x` (ESX 4.x).
//!
//! The properties are judged against the engine's public state after every instant (once every
//! event of the instant is done), with the cumulative skew of research/cpu.md C10 recomputed
//! here from the observed states, independently of `cosched.rs`:
//! - `strict`: no vCPU runs while a sibling is READY (ready but not running) for longer than the
//!   skew threshold at a stretch, and a VM never has a vCPU running and one co-stopped at once
//!   (co-stop is VM-wide, co-start starts the whole gang at one instant);
//! - `relaxed-3x`: the same VM-wide co-stop; no READY vCPU's skew exceeds the threshold by more
//!   than the accounting tick it co-stops on;
//! - `relaxed-4x`: a running vCPU's lead over a sibling that does not progress never exceeds the
//!   threshold by more than one quantum (it is in fact never over it at all);
//! - every mode: RUN + READY + MLMTD + WAIT + WAIT_IDLE + COSTOP = powered-on time per vCPU;
//! - max-min: busy VMs whose threads do not synchronise still get their weighted max-min
//!   allocation (the exact oracle of `common.rs`) when co-scheduling is on.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::cpu::{CoschedMode, VcpuState, SKEW_TICK_NS, STATES};
use vmtwin_core::spec::{Arrivals, BurstDist, SimSpec, VmSpec, WorkloadSpec};
use vmtwin_core::Simulation;

fn with_mode(mut s: SimSpec, mode: CoschedMode, threshold: u64) -> SimSpec {
    s.cpu_sched.cosched_mode = mode;
    s.cpu_sched.cosched_skew_threshold_ns = threshold;
    s
}

fn workload() -> impl Strategy<Value = WorkloadSpec> {
    (0.05f64..=1.0, 1u64..40, any::<bool>(), any::<bool>()).prop_map(|(duty, burst_ms, exp, open)| WorkloadSpec::CpuBound {
        duty,
        burst_ns: burst_ms * MS,
        burst_dist: if exp { BurstDist::Exponential } else { BurstDist::Fixed },
        arrivals: if open { Arrivals::Open } else { Arrivals::Closed },
    })
}

fn progressing(s: VcpuState) -> bool {
    matches!(s, VcpuState::Run | VcpuState::Idle)
}

/// Progress (ns running or halted) of vCPU `v` up to now, from the public counters.
fn progress(sim: &Simulation, v: usize) -> u64 {
    let vc = &sim.sched().vcpus[v];
    let mut p = vc.time_ns[VcpuState::Run as usize] + vc.time_ns[VcpuState::Idle as usize];
    if progressing(vc.state) {
        p += sim.now() - vc.since;
    }
    p
}

/// What the run looked like, judged after every instant.
#[derive(Default, Debug)]
struct Watch {
    /// longest stretch during which a vCPU was READY while a sibling ran, ns
    run_beside_ready_max: u64,
    /// a VM had a vCPU in RUN and one in COSTOP after some instant
    run_beside_costop: bool,
    /// largest cumulative skew (C10, recomputed here) of a READY vCPU, ns
    ready_skew_max: u64,
    /// largest lead of a running vCPU over a sibling that is not progressing, ns
    lead_max: u64,
    /// most events at one instant
    same_instant_max: u32,
    /// `relaxed-4x`: largest lead over its slowest sibling of a vCPU leaving COSTOP, ns (the
    /// co-start skew bounds it: it leaves only once its laggards caught up)
    release_lead_max: u64,
    /// `relaxed-4x`: smallest lead over its slowest sibling of a vCPU left in COSTOP after an
    /// instant, ns (it must exceed the co-start skew: else it should have been released)
    held_lead_min: Option<u64>,
    /// vCPUs that left COSTOP
    releases: u64,
    /// `strict` / `relaxed-3x`: smallest, over instants and VMs with a vCPU in COSTOP, of the
    /// VM's largest cumulative skew (C10, recomputed here), ns: a co-stop lasts only while some
    /// skew is over the co-start skew
    costop_vm_skew_min: Option<u64>,
}

/// Run `s` to its end, watching every VM's siblings after every instant.
fn watch(s: SimSpec) -> (Simulation, Watch) {
    let first: Vec<usize> = s.vms.iter().scan(0usize, |f, v| {
        let at = *f;
        *f += v.vcpus as usize;
        Some(at)
    }).collect();
    let sizes: Vec<usize> = s.vms.iter().map(|v| v.vcpus as usize).collect();
    let n: usize = sizes.iter().sum();
    let duration = s.duration_ns;
    let mut sim = Simulation::new(s).unwrap();
    let mut w = Watch::default();
    let mut skew = vec![0u64; n];
    let mut states = vec![VcpuState::Off; n];
    let mut stretch_from: Vec<Option<u64>> = vec![None; n];
    let (mut last, mut same) = (0u64, 0u32);
    loop {
        let more = sim.step();
        same = if sim.now() == last { same + 1 } else { 0 };
        w.same_instant_max = w.same_instant_max.max(same);
        assert!(same < 100_000, "stuck at {} ns", sim.now());
        if more && sim.now() < duration && sim.next_event_time().is_some_and(|t| t == sim.now()) {
            continue;
        }
        // the states held over [last, now): advance the skews (C10) with them
        let dt = sim.now() - last;
        for (vm, &f) in first.iter().enumerate() {
            let sibs = f..f + sizes[vm];
            let any = sibs.clone().any(|i| progressing(states[i]));
            for i in sibs {
                if progressing(states[i]) {
                    skew[i] = skew[i].saturating_sub(dt);
                } else if any {
                    skew[i] += dt;
                }
            }
        }
        last = sim.now();
        let before = states.clone();
        for (i, st) in states.iter_mut().enumerate() {
            *st = sim.sched().vcpus[i].state;
        }
        for (vm, &f) in first.iter().enumerate() {
            let sibs = f..f + sizes[vm];
            let slowest = sibs.clone().map(|j| progress(&sim, j)).min().unwrap_or(0);
            for i in sibs {
                let lead = progress(&sim, i) - slowest;
                if before[i] == VcpuState::Costop && states[i] != VcpuState::Costop {
                    w.releases += 1;
                    w.release_lead_max = w.release_lead_max.max(lead);
                }
                if states[i] == VcpuState::Costop {
                    w.held_lead_min = Some(w.held_lead_min.map_or(lead, |m| m.min(lead)));
                }
            }
        }
        for (vm, &f) in first.iter().enumerate() {
            let sibs = f..f + sizes[vm];
            let running = sibs.clone().any(|i| states[i] == VcpuState::Run);
            if sibs.clone().any(|i| states[i] == VcpuState::Costop) && running {
                w.run_beside_costop = true;
            }
            for j in sibs.clone() {
                if running && states[j] == VcpuState::Ready {
                    let from = *stretch_from[j].get_or_insert(last);
                    w.run_beside_ready_max = w.run_beside_ready_max.max(last - from);
                } else if let Some(from) = stretch_from[j].take() {
                    w.run_beside_ready_max = w.run_beside_ready_max.max(last - from);
                }
            }
            if sibs.clone().any(|i| states[i] == VcpuState::Costop) {
                let most = sibs.clone().map(|i| skew[i]).max().unwrap_or(0);
                w.costop_vm_skew_min = Some(w.costop_vm_skew_min.map_or(most, |m| m.min(most)));
            }
            for i in sibs.clone() {
                if states[i] == VcpuState::Ready {
                    w.ready_skew_max = w.ready_skew_max.max(skew[i]);
                }
                if states[i] == VcpuState::Run {
                    for j in sibs.clone() {
                        if !progressing(states[j]) {
                            w.lead_max = w.lead_max.max(progress(&sim, i).saturating_sub(progress(&sim, j)));
                        }
                    }
                }
            }
        }
        if !more || sim.now() >= duration {
            break;
        }
    }
    (sim, w)
}

/// Every powered-on vCPU's state times add up to the time it has been on.
fn conserved(sim: &mut Simulation, vms: usize) -> Result<(), String> {
    let mut v = 0;
    for vm in 0..vms {
        sim.vm_counters(vm as u32); // accounts every vCPU up to now
        let n = sim.sched().vcpus.iter().filter(|c| c.vm == vm as u32).count();
        for _ in 0..n {
            let t = &sim.sched().vcpus[v].time_ns;
            let on: u64 = (0..STATES).filter(|&s| s != VcpuState::Off as usize).map(|s| t[s]).sum();
            if on != sim.now() {
                return Err(format!("vCPU {v}: states add to {on} ns, powered on {} ns", sim.now()));
            }
            v += 1;
        }
    }
    Ok(())
}

fn random_vms() -> impl Strategy<Value = Vec<(u32, u32, bool, u64, WorkloadSpec)>> {
    proptest::collection::vec((1u32..5, 1u32..4000, any::<bool>(), 10u64..120, workload()), 1..6)
}

fn build(pcpus: u32, vms: &[(u32, u32, bool, u64, WorkloadSpec)]) -> Vec<VmSpec> {
    vms.iter()
        .enumerate()
        .map(|(i, (n, shares, limited, limit_pct, w))| {
            let limit = limited.then(|| (limit_pct * CORE_MHZ / 100).max(1));
            vm(&format!("vm{i}"), (*n).min(pcpus), *shares, 0, limit, w.clone())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, rng_seed: RngSeed::Fixed(2026), ..ProptestConfig::default() })]

    /// `strict`: a vCPU runs beside a READY sibling for at most the threshold (+1 ns: the skew
    /// must *exceed* it) at a stretch; never beside a co-stopped one; time is conserved.
    #[test]
    fn strict_never_runs_beside_a_ready_sibling_past_the_threshold(
        pcpus in 1u32..5,
        threshold_us in prop_oneof![Just(1u64), 1u64..5000],
        vms in random_vms(),
    ) {
        let th = threshold_us * 1000;
        let specs = build(pcpus, &vms);
        let (mut sim, w) = watch(with_mode(spec(pcpus, 2 * S, specs.clone()), CoschedMode::Strict, th));
        prop_assert!(w.run_beside_ready_max <= th + 1, "{:?}", w);
        prop_assert!(!w.run_beside_costop, "{:?}", w);
        prop_assert!(w.ready_skew_max <= th, "{:?}", w);
        prop_assert!(w.costop_vm_skew_min.is_none_or(|m| m > th), "{:?}", w);
        prop_assert!(conserved(&mut sim, specs.len()).is_ok(), "{:?}", conserved(&mut sim, specs.len()));
    }

    /// `relaxed-3x`, with a co-start skew drawn from 0 to the threshold: co-stop is VM-wide
    /// and lasts after the gang co-start until the skew is down, so a VM has a vCPU in COSTOP
    /// only while some cumulative skew is over the co-start skew; no READY vCPU's skew exceeds
    /// the threshold by more than the accounting tick it co-stops on; a vCPU runs beside a
    /// co-stopped sibling only when that co-stop has lasted past a gang co-start; time is
    /// conserved.
    #[test]
    fn relaxed_3x_costops_last_until_the_skew_is_down(
        pcpus in 1u32..5,
        threshold_us in 100u64..5000,
        costart_pct in prop_oneof![Just(0u64), Just(100u64), 0u64..100],
        vms in random_vms(),
    ) {
        let th = threshold_us * 1000;
        let cs = th * costart_pct / 100;
        let specs = build(pcpus, &vms);
        let mut s = with_mode(spec(pcpus, 2 * S, specs.clone()), CoschedMode::Relaxed3x, th);
        s.cpu_sched.cosched_costart_skew_ns = cs;
        let (mut sim, w) = watch(s);
        prop_assert!(w.ready_skew_max <= th + SKEW_TICK_NS, "{:?}", w);
        prop_assert!(w.costop_vm_skew_min.is_none_or(|m| m > cs), "held late: {:?}", w);
        prop_assert!(!w.run_beside_costop || sim.sched().stats.costarts > 0, "{:?}", w);
        prop_assert!(conserved(&mut sim, specs.len()).is_ok(), "{:?}", conserved(&mut sim, specs.len()));
    }

    /// `relaxed-4x`: a running vCPU's lead over a sibling that is not progressing stays within
    /// the threshold plus one quantum (the bound; the engine keeps it within the
    /// threshold); time is conserved.
    #[test]
    fn relaxed_4x_lead_stays_within_threshold_plus_a_quantum(
        pcpus in 1u32..5,
        threshold_us in 100u64..5000,
        vms in random_vms(),
    ) {
        let th = threshold_us * 1000;
        let specs = build(pcpus, &vms);
        let s = with_mode(spec(pcpus, 2 * S, specs.clone()), CoschedMode::Relaxed4x, th);
        let quantum = s.cpu_sched.quantum_ns;
        let (mut sim, w) = watch(s);
        prop_assert!(w.lead_max <= th + quantum, "{:?}", w);
        prop_assert!(w.lead_max <= th, "{:?}", w);
        prop_assert!(conserved(&mut sim, specs.len()).is_ok(), "{:?}", conserved(&mut sim, specs.len()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, rng_seed: RngSeed::Fixed(2027), ..ProptestConfig::default() })]

    /// `relaxed-4x` with a co-start skew (C12's hysteresis, drawn from 0 to the threshold): a
    /// co-stopped vCPU leaves COSTOP only once no sibling is more than the co-start skew behind
    /// it, and is never left in COSTOP once none is (judged from the public counters after
    /// every instant); the lead bound and time conservation still hold.
    #[test]
    fn relaxed_4x_costop_lasts_until_the_laggards_caught_up(
        pcpus in 1u32..5,
        threshold_us in 100u64..5000,
        costart_pct in prop_oneof![Just(0u64), Just(100u64), 0u64..100],
        vms in random_vms(),
    ) {
        let th = threshold_us * 1000;
        let cs = th * costart_pct / 100;
        let specs = build(pcpus, &vms);
        let mut s = with_mode(spec(pcpus, 2 * S, specs.clone()), CoschedMode::Relaxed4x, th);
        s.cpu_sched.cosched_costart_skew_ns = cs;
        let (mut sim, w) = watch(s);
        prop_assert!(w.lead_max <= th, "{:?}", w);
        prop_assert!(w.release_lead_max <= cs, "released early: {:?}", w);
        prop_assert!(w.held_lead_min.is_none_or(|m| m > cs), "held late: {:?}", w);
        prop_assert!(conserved(&mut sim, specs.len()).is_ok(), "{:?}", conserved(&mut sim, specs.len()));
    }
}

/// Probe: event counts and co-scheduling counters of one spec per mode (`--ignored --nocapture`).
#[test]
#[ignore]
fn probe() {
    let pair = vm("pair", 2, 2000, 0, None, busy());
    let one = vm("one", 1, 1000, 0, None, busy());
    for mode in [CoschedMode::Off, CoschedMode::Strict, CoschedMode::Relaxed3x, CoschedMode::Relaxed4x] {
        for th in [1_000u64, 100_000, 3 * MS] {
            let t0 = std::time::Instant::now();
            let mut sim = Simulation::new(with_mode(spec(2, 3 * S, vec![pair.clone(), one.clone()]), mode, th)).unwrap();
            let mut steps = 0u64;
            while sim.step() && sim.now() < 3 * S {
                steps += 1;
                if steps > 20_000_000 {
                    break;
                }
            }
            let c0 = sim.vm_counters(0);
            let c1 = sim.vm_counters(1);
            let st = sim.sched().stats;
            println!(
                "{mode:?} th={th}: events {steps} in {:?}; pair used {:.3} one used {:.3}; costops {} vm {} costarts {} ",
                t0.elapsed(),
                c0[5] as f64 / sim.now() as f64,
                c1[5] as f64 / sim.now() as f64,
                st.costops,
                st.vm_costops,
                st.costarts
            );
        }
    }
}

/// `relaxed-3x`'s READY skew bound (threshold + one accounting tick) on proptest's shrunk case:
/// a 2-vCPU VM beside a 1-vCPU VM on 2 pCPUs, a 0.1 ms threshold and a 1 ms tick. Its laggard
/// halts within microseconds of each co-start and wakes still over the threshold; while its
/// co-stop ended at the co-start, the skew ratcheted up to 2.75 ms (session 19); a co-stop
/// that lasts until the skew is down bounds it.
#[test]
fn relaxed_3x_ready_skew_stays_within_threshold_plus_a_tick() {
    let pair = vm("pair", 2, 1, 0, None, WorkloadSpec::CpuBound {
        duty: 0.912143919517026, burst_ns: MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Closed });
    let one = vm("one", 1, 1, 0, None, WorkloadSpec::CpuBound {
        duty: 0.6726619961257035, burst_ns: 21 * MS, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Closed });
    let th = 100_000;
    let (_, w) = watch(with_mode(spec(2, 2 * S, vec![pair, one]), CoschedMode::Relaxed3x, th));
    assert!(w.ready_skew_max <= th + SKEW_TICK_NS, "{w:?}");
}

/// Busy VMs of 1-3 vCPUs (threads that do not synchronise) on 2-4 pCPUs, 30 s under `mode`:
/// each VM's share of the host, pCPUs, beside its exact weighted max-min allocation (the oracle,
/// a VM capped at its vCPUs).
fn max_min_run(mode: CoschedMode, pcpus: u32, vms: &[(u32, u32)]) -> (Vec<f64>, Vec<f64>) {
    let specs: Vec<_> = vms.iter().enumerate().map(|(i, &(n, s))| vm(&format!("vm{i}"), n.min(pcpus), s, 0, None, busy())).collect();
    let shares: Vec<f64> = specs.iter().map(|v| v.shares as f64).collect();
    let hi: Vec<f64> = specs.iter().map(|v| v.vcpus as f64).collect();
    let exact = oracle(pcpus as f64, &shares, &vec![0.0; specs.len()], &hi);
    let duration = 30 * S;
    let mut sim = Simulation::new(with_mode(spec(pcpus, duration, specs), mode, 3 * MS)).unwrap();
    sim.run().unwrap();
    let got = (0..exact.len()).map(|i| sim.vm_counters(i as u32)[5] as f64 / duration as f64).collect();
    (got, exact)
}

/// Must some VM run in gangs under `relaxed-3x`? C10: a busy VM's vCPUs keep their skews down
/// only if, while it runs, at least half of them run, so a 3-vCPU VM under 1.5 pCPU must take
/// two pCPUs at once in bursts (`vcpus` and `exact` per VM).
fn must_gang(vcpus: &[u32], exact: &[f64]) -> bool {
    vcpus.iter().zip(exact).any(|(&n, &e)| n >= 3 && e < n as f64 / 2.0)
}

fn max_min_vms() -> impl Strategy<Value = Vec<(u32, u32)>> {
    proptest::collection::vec((1u32..4, 1u32..8000), 1..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: RngSeed::Fixed(5), ..ProptestConfig::default() })]

    /// Max-min with `relaxed-4x` on: every VM gets its exact allocation within 3% (of the larger
    /// of it and a quarter pCPU). 200 draws, 3-vCPU VMs among them; the census
    /// (`max_min_census`) finds none of 2,400 over 0.4%.
    #[test]
    fn relaxed_4x_keeps_the_max_min_allocation(pcpus in 2u32..5, vms in max_min_vms()) {
        let (got, exact) = max_min_run(CoschedMode::Relaxed4x, pcpus, &vms);
        for (i, (g, e)) in got.iter().zip(&exact).enumerate() {
            prop_assert!((g - e).abs() <= 0.03 * e.max(0.25), "vm{} got {} pCPU, exact {} (all: {:?})", i, g, e, exact);
        }
    }

    /// Max-min with `relaxed-3x` on. C10's cumulative skew makes the exact allocation out of
    /// reach for some VMs (docs/cosched.md): a busy n-vCPU VM keeps its vCPUs' skews bounded
    /// only if, while it runs, at least n / 2 of them run on average (with k running, their
    /// skews grow by n - 2k ns per ns in sum), so a 3-vCPU VM under 1.5 pCPU must take two
    /// pCPUs at once half the time, from VMs that may have nothing to spare. What holds:
    /// no VM is starved, each gets at least 3/4 of its allocation (the census's least, over
    /// 2,400 draws, is 0.830; before gangs took pCPUs by priority alone, 0.006); and where no
    /// VM has to run in gangs (no 3-vCPU VM under 1.5 pCPU), each is within 3% of its
    /// allocation, as under relaxed-4x (all 1,690 such draws of the census; 1,677 before a
    /// held vCPU competed by key for the pCPUs its VM's co-stop frees, 1,651 before a gang
    /// short of pCPUs could start part of its laggards on an idle one).
    #[test]
    fn relaxed_3x_starves_no_vm(pcpus in 2u32..5, vms in max_min_vms()) {
        let (got, exact) = max_min_run(CoschedMode::Relaxed3x, pcpus, &vms);
        let sizes: Vec<u32> = vms.iter().map(|v| v.0.min(pcpus)).collect();
        let gangs = must_gang(&sizes, &exact);
        for (i, (g, e)) in got.iter().zip(&exact).enumerate() {
            prop_assert!(*g >= 0.75 * e, "vm{} got {} pCPU, exact {} (all: {:?})", i, g, e, exact);
            prop_assert!(gangs || (g - e).abs() <= 0.03 * e.max(0.25), "no VM gangs: vm{} got {} pCPU, exact {} (all: {:?})", i, g, e, exact);
        }
    }
}

/// `relaxed-4x`, VMs entitled to between n - 1 and n pCPUs (census cases): a co-stopped
/// leader released once its laggard caught up only queued, so it ran beside the laggard only
/// when a pCPU freed within the threshold, and the VM got n - 1 pCPUs (a 2-vCPU VM 1.000 of
/// its 1.123 on 2 pCPUs; a 3-vCPU VM 2.009 of its 2.215 on 4). Released as a waking vCPU is
/// placed, it may preempt another VM's vCPU: each VM within 3% of its exact allocation.
#[test]
fn relaxed_4x_a_vm_gets_more_than_n_minus_1_pcpus() {
    for (pcpus, vms) in [(2u32, vec![(1u32, 1301u32), (2, 3184), (1, 1184)]), (4, vec![(2, 660), (3, 7727), (2, 5570)])] {
        let (got, exact) = max_min_run(CoschedMode::Relaxed4x, pcpus, &vms);
        for (i, (g, e)) in got.iter().zip(&exact).enumerate() {
            assert!((g - e).abs() <= 0.03 * e.max(0.25), "{pcpus} pCPUs {vms:?}: vm{i} got {g} pCPU, exact {e}");
        }
    }
}

/// The docs' two scenarios (docs/cosched.md), per mode: a 2-vCPU barrier program (threads spin
/// at the barrier) beside a busy 1-vCPU VM on 2 pCPUs (research/cpu.md B4's setup), and the same
/// program alone on 4 pCPUs. Prints barriers/s, host utilisation, the pair's %CSTP and %RDY.
/// `cargo test --release -p vmtwin-core --test cosched_gang docs_scenarios -- --ignored --nocapture`
#[test]
#[ignore]
fn docs_scenarios() {
    let program = WorkloadSpec::Barrier {
        phase_ns: 5 * MS,
        phase_dist: BurstDist::Fixed,
        wait: vmtwin_core::spec::BarrierWait::Spin,
        spin_limit_ns: None,
        spin_poll_ns: 50_000,
    };
    let dur = 60 * S;
    for (name, pcpus, with_one) in [("contended: B4 setup, 2 pCPUs", 2u32, true), ("uncontended: alone on 4 pCPUs", 4, false)] {
        println!("{name}");
        for mode in [CoschedMode::Off, CoschedMode::Strict, CoschedMode::Relaxed3x, CoschedMode::Relaxed4x] {
            let mut vms = vec![vm("pair", 2, 2000, 0, None, program.clone())];
            if with_one {
                vms.push(vm("one", 1, 1000, 0, None, busy()));
            }
            let mut sim = Simulation::new(with_mode(spec(pcpus, dur, vms), mode, 3 * MS)).unwrap();
            sim.run().unwrap();
            let t = sim.table("barrier").unwrap();
            let barriers: u64 = match t.column("barriers").unwrap() {
                vmtwin_core::metrics::Column::U64(v) => v.iter().sum(),
                _ => unreachable!(),
            };
            let c = sim.vm_counters(0);
            let used: u64 = (0..sim.vm_names().len() as u32).map(|i| sim.vm_counters(i)[5]).sum();
            let cstp: u64 = (0..2).map(|v| sim.sched().vcpus[v].time_ns[VcpuState::Costop as usize]).sum();
            println!(
                "  {mode:?}: {:.1} barriers/s, host util {:.1}%, pair %CSTP {:.1} %RDY {:.1} (per vCPU), costops {} vm {} costarts {}",
                barriers as f64 / (dur as f64 / S as f64),
                100.0 * used as f64 / (pcpus as f64 * dur as f64),
                100.0 * cstp as f64 / (2.0 * dur as f64),
                100.0 * c[1] as f64 / (2.0 * dur as f64),
                sim.sched().stats.costops,
                sim.sched().stats.vm_costops,
                sim.sched().stats.costarts,
            );
        }
    }
}

/// The fluid engine refuses every co-scheduling mode but `off`, naming the field and the mode,
/// and refuses barrier programs naming the VM's workload.
#[test]
fn fluid_mode_refuses_cosched_and_barriers_naming_the_field() {
    for (mode, name) in [(CoschedMode::Strict, "strict"), (CoschedMode::Relaxed3x, "relaxed-3x"), (CoschedMode::Relaxed4x, "relaxed-4x")] {
        let s = with_mode(spec(2, S, vec![vm("a", 2, 1000, 0, None, busy())]), mode, 3 * MS);
        let err = vmtwin_core::fluid::FluidSim::new(s).unwrap_err().to_string();
        assert!(err.starts_with("cpu_scheduler.cosched_mode") && err.contains(name), "{err}");
    }
    let program = WorkloadSpec::Barrier {
        phase_ns: 5 * MS,
        phase_dist: BurstDist::Fixed,
        wait: vmtwin_core::spec::BarrierWait::Halt,
        spin_limit_ns: None,
        spin_poll_ns: 50_000,
    };
    let err = vmtwin_core::fluid::FluidSim::new(spec(2, S, vec![vm("a", 2, 1000, 0, None, program)])).unwrap_err().to_string();
    assert!(err.starts_with("vms[0].workload.kind"), "{err}");
}

/// `relaxed-3x` whose co-stops last, on the cases that broke the max-min allocation while it
/// was built (session 20): a 1-vCPU VM beside a 2-vCPU VM on 2 pCPUs, shares 7 : 8 (a held
/// vCPU compared with a queue entry its own co-stop had left behind, and lost: 0.991 and 1.009
/// pCPU instead of 0.933 and 1.067), and a 2-vCPU VM entitled to a whole pCPU per vCPU beside a
/// 3-vCPU VM on 4 pCPUs (a held vCPU took the pCPU of a vCPU it may not displace: 1.908
/// instead of 2). Each VM within 3% of the exact oracle, as the proptest judges.
#[test]
fn relaxed_3x_lasting_costops_keep_max_min_on_the_cases_that_broke_it() {
    for (pcpus, vms) in [(2u32, vec![(1u32, 7u32), (2, 8)]), (4, vec![(2, 821), (3, 1)])] {
        let specs: Vec<_> = vms.iter().enumerate().map(|(i, &(n, s))| vm(&format!("vm{i}"), n, s, 0, None, busy())).collect();
        let shares: Vec<f64> = specs.iter().map(|v| v.shares as f64).collect();
        let hi: Vec<f64> = specs.iter().map(|v| v.vcpus as f64).collect();
        let exact = oracle(pcpus as f64, &shares, &vec![0.0; specs.len()], &hi);
        let duration = 30 * S;
        let mut sim = Simulation::new(with_mode(spec(pcpus, duration, specs), CoschedMode::Relaxed3x, 3 * MS)).unwrap();
        sim.run().unwrap();
        let cstp: u64 = sim.sched().vcpus.iter().map(|v| v.time_ns[VcpuState::Costop as usize]).sum();
        assert!(cstp > 0, "{pcpus} pCPUs {vms:?}: the co-stops last");
        for (i, e) in exact.iter().enumerate() {
            let got = sim.vm_counters(i as u32)[5] as f64 / duration as f64;
            assert!((got - e).abs() <= 0.03 * e.max(0.25), "{pcpus} pCPUs {vms:?}: vm{i} got {got} pCPU, exact {e}");
        }
    }
}

/// `relaxed-3x`, census draws where no VM has to gang that missed by 5-8% (seeds 95 and 22): a
/// VM-wide co-stop frees its VM's pCPUs, the gang co-start takes some, and the held vCPUs took
/// the rest as idle ones, ahead of other VMs' READY vCPUs owed more (a 3-vCPU VM got 1.747 pCPU
/// of its 1.682 beside a 2-vCPU VM at 1.253 of 1.318, co-stopping every 2-4 ms, so its vCPUs
/// kept their pCPUs without a slice end's key comparison). A held vCPU takes such a pCPU only
/// when no vCPU queued for it has a lower key: each VM within 3%.
#[test]
fn relaxed_3x_held_vcpus_take_a_freed_pcpu_by_key() {
    for (pcpus, vms) in [(3u32, vec![(2u32, 3993u32), (3, 5094)]), (3, vec![(1, 7084), (3, 7717), (2, 1032)])] {
        let (got, exact) = max_min_run(CoschedMode::Relaxed3x, pcpus, &vms);
        for (i, (g, e)) in got.iter().zip(&exact).enumerate() {
            assert!((g - e).abs() <= 0.03 * e.max(0.25), "{pcpus} pCPUs {vms:?}: vm{i} got {g} pCPU, exact {e}");
        }
    }
}

/// `strict` with wide VMs on a big host: 8-, 4- and 2-vCPU VMs that sleep, 24 of them (112
/// vCPUs) on 32 pCPUs. Gang co-starts of two 8-vCPU VMs once preempted each other's members a
/// nanosecond apart (a preempted member comes back over the threshold at once and co-stops its
/// VM): bench-cpu160's spec in strict took 31 M events for 100 ms. A co-start now leaves alone a
/// co-scheduled vCPU that has run less than the skew threshold. Bound: a dispatch per pCPU every
/// 100 us would be 320 k events a second; the run must stay well under that, and conserve time.
#[test]
fn strict_wide_vms_do_not_preempt_each_other_in_a_storm() {
    let mut vms = Vec::new();
    for (i, &(n, duty)) in [(8u32, 0.6), (8, 0.5), (4, 0.7), (4, 0.4), (2, 0.8), (2, 0.3)].iter().cycle().take(24).enumerate() {
        let w = WorkloadSpec::CpuBound { duty, burst_ns: 2 * MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Closed };
        vms.push(vm(&format!("vm{i}"), n, 1000, 0, None, w));
    }
    let n = vms.len();
    let mut sim = Simulation::new(with_mode(spec(32, S, vms), CoschedMode::Strict, 3 * MS)).unwrap();
    sim.run().unwrap();
    assert!(sim.event_count() < 320_000, "{} events in one simulated second", sim.event_count());
    assert!(sim.sched().stats.costarts > 0, "the gangs co-stop and co-start");
    assert!(conserved(&mut sim, n).is_ok(), "{:?}", conserved(&mut sim, n));
}

/// Census of the max-min draws of session 21's proptest (its strategy, with the mode flag it
/// drew, 12 cases per seed), each case run under both relaxed modes (`CENSUS_MODE` for one):
/// how many miss the 3% bound, and the worst (the VM furthest from its exact allocation,
/// relative to the bound's scale); the cases where no VM has to run in gangs under relaxed-3x
/// (`relaxed_3x_starves_no_vm`) and how many of those miss; the least share of its allocation
/// a VM got. Seeds from `CENSUS_SEEDS` (`a..=b`, default `1..=15`); or the one case
/// `CENSUS_CASE` names (`PCPUS:VCPUS,..:SHARES,..`). One line per miss.
/// `CENSUS_SEEDS=1..=15 cargo test --release -p vmtwin-core --test cosched_gang max_min_census -- --ignored --nocapture`
#[test]
#[ignore]
fn max_min_census() {
    use proptest::test_runner::{Config, TestRunner};
    let seeds = std::env::var("CENSUS_SEEDS").unwrap_or_else(|_| "1..=15".into());
    let (a, b) = seeds.split_once("..=").expect("CENSUS_SEEDS as a..=b");
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    let strategy = (2u32..5, any::<bool>(), proptest::collection::vec((1u32..4, 1u32..8000), 1..6));
    let cases = std::cell::RefCell::new(Vec::new());
    for seed in a..=b {
        let mut runner = TestRunner::new(Config { cases: 12, rng_seed: RngSeed::Fixed(seed), ..Config::default() });
        runner
            .run(&strategy, |(pcpus, _, vms)| {
                cases.borrow_mut().push((seed, pcpus, vms));
                Ok(())
            })
            .unwrap();
    }
    let mut cases = cases.into_inner();
    if let Ok(one) = std::env::var("CENSUS_CASE") {
        // one case instead, as PCPUS:VCPUS,..:SHARES,.. (e.g. 4:3,3:1,2)
        let parse = |t: &str| t.split(',').map(|x| x.parse::<u32>().unwrap()).collect::<Vec<_>>();
        let f: Vec<&str> = one.split(':').collect();
        cases = vec![(0, f[0].parse().unwrap(), parse(f[1]).into_iter().zip(parse(f[2])).collect())];
    }
    let modes = match std::env::var("CENSUS_MODE").as_deref() {
        Ok("relaxed-3x") => vec![CoschedMode::Relaxed3x],
        Ok("relaxed-4x") => vec![CoschedMode::Relaxed4x],
        _ => vec![CoschedMode::Relaxed3x, CoschedMode::Relaxed4x],
    };
    for mode in modes {
        let (mut misses, mut worst) = (0, (0.0f64, String::new()));
        // cases where no VM must run in gangs (C10: a busy relaxed-3x VM's vCPUs keep their skew
        // down only if, while it runs, at least half of them run: a 3-vCPU VM under 1.5 pCPU)
        let (mut free_cases, mut free_misses) = (0, 0);
        // the least share of its exact allocation any VM got, and the most idle pCPU
        let (mut least, mut idle_most) = (f64::INFINITY, 0.0f64);
        for (seed, pcpus, vms) in &cases {
            let specs: Vec<_> =
                vms.iter().enumerate().map(|(i, &(n, s))| vm(&format!("vm{i}"), n.min(*pcpus), s, 0, None, busy())).collect();
            let shares: Vec<f64> = specs.iter().map(|v| v.shares as f64).collect();
            let hi: Vec<f64> = specs.iter().map(|v| v.vcpus as f64).collect();
            let exact = oracle(*pcpus as f64, &shares, &vec![0.0; specs.len()], &hi);
            let sizes: Vec<u32> = specs.iter().map(|v| v.vcpus).collect();
            let duration = 30 * S;
            let mut sim = Simulation::new(with_mode(spec(*pcpus, duration, specs), mode, 3 * MS)).unwrap();
            sim.run().unwrap();
            let got: Vec<f64> = (0..exact.len()).map(|i| sim.vm_counters(i as u32)[5] as f64 / duration as f64).collect();
            let err = exact.iter().zip(&got).map(|(e, g)| (g - e).abs() / e.max(0.25)).fold(0.0, f64::max);
            let gangs = must_gang(&sizes, &exact);
            free_cases += usize::from(!gangs);
            least = exact.iter().zip(&got).map(|(e, g)| g / e).fold(least, f64::min);
            idle_most = idle_most.max(exact.iter().sum::<f64>() - got.iter().sum::<f64>());
            if err > worst.0 || err > 0.03 {
                let line = format!(
                    "seed {seed} pcpus {pcpus} vcpus {sizes:?} shares {:?}: got {:?} exact {:?}",
                    vms.iter().map(|v| v.1).collect::<Vec<_>>(),
                    got.iter().map(|g| format!("{g:.3}")).collect::<Vec<_>>(),
                    exact.iter().map(|e| format!("{e:.3}")).collect::<Vec<_>>()
                );
                if err > 0.03 {
                    misses += 1;
                    free_misses += usize::from(!gangs);
                    println!("{mode:?} miss ({:.1}%): {line}", 100.0 * err);
                }
                if err > worst.0 {
                    worst = (err, line);
                }
            }
        }
        println!("{mode:?}: {misses} of {} miss; worst {:.1}%: {}", cases.len(), 100.0 * worst.0, worst.1);
        println!(
            "{mode:?}: {free_misses} of {free_cases} without a VM that must gang miss; least share of its allocation {least:.3}; most CPU left unused {idle_most:.3} pCPU"
        );
    }
}

