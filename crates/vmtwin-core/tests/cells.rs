//! Scheduler cells (ESX 3.x), vSMP consolidation and inter-VM cache affinity in the engine
//! (`cpu/cells.rs`).
//!
//! - Property: no vCPU ever runs outside its VM's cell, judged after every instant, whatever the
//!   VMs, co-scheduling mode, limits and cell balancer period; state times still add up.
//! - Fragmentation: three busy 3-vCPU VMs on two 4-pCPU cells use 7 of 8 pCPUs (two share a cell,
//!   the third leaves a pCPU idle, and no whole-VM move can help), against 8 without cells: the
//!   hand-computed allocation below.
//! - The cell balancer moves whole VMs off an overloaded cell, one per period.
//! - Refusals name the field: a VM wider than a cell, a cell that is not whole LLCs (counted in
//!   cores with hyperthreading too), an unknown VM name.
//! - vSMP consolidation and cache affinity put the VMs' running vCPUs in one LLC more often.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::cpu::{CoschedMode, VcpuState, NONE, STATES};
use vmtwin_core::spec::{Arrivals, BurstDist, HostSpec, SimSpec, VmSpec, WorkloadSpec};
use vmtwin_core::Simulation;

/// Host1 of the paper: 2 sockets x 2 LLCs x 2 cores, one node per socket.
fn host1() -> HostSpec {
    HostSpec {
        name: "host1".into(),
        sockets: 2,
        numa_nodes_per_socket: 1,
        llcs_per_node: 2,
        cores_per_llc: 2,
        threads_per_core: 1,
        core_mhz: CORE_MHZ,
        memory_bytes: 1 << 36,
    }
}

fn spec1(duration_ns: u64, vms: Vec<VmSpec>, cell_size: u32) -> SimSpec {
    let mut s = spec(8, duration_ns, vms);
    s.host = host1();
    s.cpu_sched.cell_size = cell_size;
    s
}

fn duty(d: f64, burst_ms: u64) -> WorkloadSpec {
    WorkloadSpec::CpuBound { duty: d, burst_ns: burst_ms * MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Closed }
}

/// Run to the end, checking after every instant that each running vCPU is on a pCPU of its
/// VM's cell; returns the simulation and the number of instants checked.
fn run_confined(s: SimSpec) -> Result<(Simulation, u64), String> {
    let duration = s.duration_ns;
    let mut sim = Simulation::new(s).map_err(|e| e.to_string())?;
    let mut instants = 0;
    loop {
        let more = sim.step();
        if more && sim.now() < duration && sim.next_event_time().is_some_and(|t| t == sim.now()) {
            continue;
        }
        instants += 1;
        let sched = sim.sched();
        for p in 0..sched.pcpu_count() as u32 {
            let v = sched.running_on(p);
            if v == NONE {
                continue;
            }
            let vc = &sched.vcpus[v as usize];
            let cell = sched.cell_of_vm(vc.vm);
            if vc.state != VcpuState::Run || vc.pcpu != p {
                return Err(format!("t={}: pCPU {p} runs vCPU {v} in state {:?} on {}", sim.now(), vc.state, vc.pcpu));
            }
            if cell == NONE || sched.cell_of_pcpu(p) != cell {
                return Err(format!("t={}: vCPU {v} of VM {} (cell {cell}) runs on pCPU {p} of cell {}", sim.now(), vc.vm, sched.cell_of_pcpu(p)));
            }
        }
        if !more || sim.now() >= duration {
            break;
        }
    }
    Ok((sim, instants))
}

/// Every vCPU's state times add up to the run's length (all VMs on from 0).
fn conserved(sim: &mut Simulation, vms: usize) -> Result<(), String> {
    for vm in 0..vms {
        sim.vm_counters(vm as u32);
    }
    for (v, vc) in sim.sched().vcpus.iter().enumerate() {
        let on: u64 = (0..STATES).filter(|&s| s != VcpuState::Off as usize).map(|s| vc.time_ns[s]).sum();
        if on != sim.now() {
            return Err(format!("vCPU {v}: states add to {on} ns over {} ns", sim.now()));
        }
    }
    Ok(())
}

fn mode(i: u8) -> CoschedMode {
    [CoschedMode::Off, CoschedMode::Strict, CoschedMode::Relaxed3x, CoschedMode::Relaxed4x][i as usize % 4]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: RngSeed::Fixed(2026), ..ProptestConfig::default() })]

    /// No vCPU runs outside its VM's cell at any instant, with VMs of 1 to `cell_size` vCPUs,
    /// any co-scheduling mode, limits, a cell balancer that runs often, with and without
    /// hyperthreading (whole-core moves and compensation swaps stay in the cells too).
    #[test]
    fn no_vcpu_ever_runs_outside_its_cell(
        cell_size in prop_oneof![Just(2u32), Just(4u32)],
        cosched in 0u8..4,
        ht in any::<bool>(),
        vms in proptest::collection::vec((1u32..5, 0.05f64..=1.0, 1u64..30, any::<bool>(), 20u64..150), 1..9),
    ) {
        let specs: Vec<VmSpec> = vms
            .iter()
            .enumerate()
            .map(|(i, &(n, d, burst, limited, pct))| {
                let limit = limited.then(|| pct * CORE_MHZ / 100);
                vm(&format!("vm{i}"), n.min(cell_size), 1000 * n, 0, limit, duty(d, burst))
            })
            .collect();
        let mut s = spec1(3 * S, specs.clone(), cell_size);
        if ht {
            // both threads of each core scheduled: a cell of `cell_size` cores is 2 x that many pCPUs
            s.host.threads_per_core = 2;
        }
        s.cpu_sched.cosched_mode = mode(cosched);
        s.cpu_sched.entitlement_interval_ns = 100 * MS;
        s.cpu_sched.cell_rebalance_period_ns = 200 * MS;
        s.cpu_sched.cell_rebalance_imbalance = 0.0;
        let (mut sim, instants) = run_confined(s).map_err(TestCaseError::fail)?;
        prop_assert!(instants > 10);
        prop_assert!(conserved(&mut sim, specs.len()).is_ok(), "{:?}", conserved(&mut sim, specs.len()));
    }
}

/// The confinement holds while the balancer does move VMs (a case that moves many).
#[test]
fn confinement_holds_across_cell_moves() {
    let vms: Vec<VmSpec> = (0..10).map(|i| vm(&format!("vm{i}"), 1 + i % 3, 1000, 0, None, duty(0.3 + 0.07 * i as f64, 5))).collect();
    let mut s = spec1(5 * S, vms, 4);
    s.cpu_sched.cosched_mode = CoschedMode::Relaxed3x;
    s.cpu_sched.entitlement_interval_ns = 100 * MS;
    s.cpu_sched.cell_rebalance_period_ns = 100 * MS;
    s.cpu_sched.cell_rebalance_imbalance = 0.0;
    let (sim, _) = run_confined(s).unwrap();
    assert!(sim.sched().stats.cell_moves >= 5, "moves: {}", sim.sched().stats.cell_moves);
}

/// pCPUs of demand each VM used over the run, from its charged time.
fn used_pcpus(sim: &mut Simulation, vms: usize) -> Vec<f64> {
    (0..vms).map(|vm| sim.vm_counters(vm as u32)[5] as f64 / sim.now() as f64).collect()
}

/// Fragmentation. Three busy 3-vCPU VMs, equal shares, on Host1 (8 pCPUs). Without cells the
/// host is one pool of 8 pCPUs: each VM gets 8/3 pCPUs and all 8 are used. With cells of 4:
/// power-on puts vm0 in cell 0, vm1 in cell 1, vm2 in cell 0 (tie, lowest); cell 0's 6 vCPUs
/// share 4 pCPUs (2 each) while vm1 can use only 3 of cell 1's 4. The balancer cannot help:
/// per pCPU the cells carry 6/4 and 3/4, and moving a 3-vCPU VM gives 3/4 and 6/4, no narrower.
/// So 2 + 3 + 2 = 7 of 8 pCPUs: cells cost 12.5% of the host.
#[test]
fn cells_fragment_three_3_vcpu_vms_by_hand() {
    let vms = || (0..3).map(|i| vm(&format!("vm{i}"), 3, 3000, 0, None, busy())).collect::<Vec<_>>();
    let mut cells = Simulation::new(spec1(20 * S, vms(), 4)).unwrap();
    cells.run().unwrap();
    let with = used_pcpus(&mut cells, 3);
    assert_eq!((0..3).map(|vm| cells.sched().cell_of_vm(vm)).collect::<Vec<_>>(), vec![0, 1, 0]);
    assert_eq!(cells.sched().stats.cell_moves, 0);
    for (got, want) in with.iter().zip([2.0, 3.0, 2.0]) {
        assert!((got - want).abs() < 0.03, "with cells {with:?}, expected [2, 3, 2]");
    }
    let total: f64 = with.iter().sum();
    eprintln!("fragmentation: with cells {with:?} (total {total:.3})");
    assert!((total / 8.0 - 0.875).abs() < 0.005, "host used {total} of 8");

    let mut none = Simulation::new(spec1(20 * S, vms(), 0)).unwrap();
    none.run().unwrap();
    let without = used_pcpus(&mut none, 3);
    eprintln!("fragmentation: without cells {without:?}");
    for got in &without {
        assert!((got - 8.0 / 3.0).abs() < 0.05, "without cells {without:?}, expected 8/3 each");
    }
    assert!((without.iter().sum::<f64>() - 8.0).abs() < 0.02);
}

/// The cell balancer moves whole VMs off an overloaded cell. Twelve 1-vCPU VMs: power-on
/// alternates cells, so the six busy ones (even numbers) all land in cell 0 (6 on 4 pCPUs) and
/// the six nearly idle ones in cell 1. Moving busy VMs evens the cells (three moves take the
/// gap from 1.5 - 0.03 to about 0.03 pCPUs per pCPU), after which every busy VM runs alone.
#[test]
fn the_balancer_moves_whole_vms_to_the_idle_cell() {
    let vms = || {
        (0..12).map(|i| vm(&format!("vm{i}"), 1, 1000, 0, None, if i % 2 == 0 { busy() } else { duty(0.02, 2) })).collect::<Vec<_>>()
    };
    let mut sim = Simulation::new(spec1(30 * S, vms(), 4)).unwrap();
    sim.run().unwrap();
    let moves = sim.sched().stats.cell_moves;
    assert!((2..=6).contains(&moves), "moves {moves}");
    let busy_in: Vec<u32> = (0..12).step_by(2).map(|vm| sim.sched().cell_of_vm(vm)).collect();
    assert_eq!(busy_in.iter().filter(|&&c| c == 0).count(), 3, "busy VMs' cells {busy_in:?}");
    // without the balancer (a period longer than the run) cell 0 stays overcommitted
    let mut s = spec1(30 * S, vms(), 4);
    s.cpu_sched.cell_rebalance_period_ns = 100 * S;
    let mut still = Simulation::new(s).unwrap();
    still.run().unwrap();
    let (moved, kept) = (used_pcpus(&mut sim, 12), used_pcpus(&mut still, 12));
    let busy_total = |u: &[f64]| u.iter().step_by(2).sum::<f64>();
    eprintln!("balancer: {moves} moves, busy VMs use {:.3} pCPUs (kept in place: {:.3})", busy_total(&moved), busy_total(&kept));
    assert!(busy_total(&kept) < 4.1, "kept: {kept:?}");
    assert!(busy_total(&moved) > 5.0, "moved: {moved:?}");
}

fn err_of(s: SimSpec) -> String {
    Simulation::new(s).err().expect("refused").to_string()
}

#[test]
fn refusals_name_the_field() {
    let wide = vec![vm("small", 2, 2000, 0, None, busy()), vm("wide", 8, 8000, 0, None, busy())];
    let e = err_of(spec1(S, wide, 4));
    assert!(e.contains("vms[1].vcpus") && e.contains("cell_size = 4") && e.contains("'wide'"), "{e}");
    let e = err_of(spec1(S, vec![vm("a", 1, 1000, 0, None, busy())], 3));
    assert!(e.contains("cpu_scheduler.cell_size") && e.contains("2 cores per LLC"), "{e}");
    // with hyperthreading a cell is still counted in cores (both threads of each)
    let mut s = spec1(S, vec![vm("a", 1, 1000, 0, None, busy())], 3);
    s.host.threads_per_core = 2;
    let e = err_of(s);
    assert!(e.contains("cpu_scheduler.cell_size") && e.contains("2 cores per LLC") && e.contains("its 8 cores"), "{e}");
    let mut s = spec1(S, vec![vm("a", 2, 1000, 0, None, busy())], 0);
    s.cpu_sched.vsmp_consolidate.insert("nobody".into());
    let e = err_of(s);
    assert!(e.contains("cpu_scheduler.vsmp_consolidate.nobody"), "{e}");
    let mut s = spec1(S, vec![vm("a", 1, 1000, 0, None, busy())], 0);
    s.cpu_sched.cell_rebalance_period_ns = 0;
    assert!(err_of(s).contains("cpu_scheduler.cell_rebalance_period"));
}

/// Share of the time two vCPUs (`a`, `b`) both run during which they run in one LLC (Host1's
/// LLCs are pCPUs 0-1, 2-3, 4-5, 6-7).
fn same_llc_share(s: SimSpec, a: usize, b: usize) -> (f64, u64) {
    let duration = s.duration_ns;
    let mut sim = Simulation::new(s).unwrap();
    let (mut both, mut same, mut last) = (0u64, 0u64, 0u64);
    let mut prev: Option<(bool, bool)> = None;
    loop {
        let more = sim.step();
        let now = sim.now().min(duration);
        if let Some((b_on, s_on)) = prev {
            if b_on {
                both += now - last;
                if s_on {
                    same += now - last;
                }
            }
        }
        last = now;
        let (va, vb) = (&sim.sched().vcpus[a], &sim.sched().vcpus[b]);
        let on = va.state == VcpuState::Run && vb.state == VcpuState::Run;
        prev = Some((on, on && va.pcpu / 2 == vb.pcpu / 2));
        if !more || sim.now() >= duration {
            break;
        }
    }
    (same as f64 / both.max(1) as f64, sim.sched().stats.affinity_placements)
}

/// vSMP consolidation: a 2-vCPU VM waking often, on Host1 with ESX 4's per-LLC balancing
/// (which spreads it over two LLCs), shares an LLC far more often with
/// `sched.cpu.vsmpConsolidate` on; one other 1-vCPU VM keeps an LLC partly busy.
#[test]
fn vsmp_consolidation_keeps_siblings_in_one_llc() {
    let build = |consolidate: bool| {
        let vms = vec![vm("smp", 2, 2000, 0, None, duty(0.5, 3)), vm("other", 1, 1000, 0, None, duty(0.5, 3))];
        let mut s = spec1(10 * S, vms, 0);
        s.cpu_sched.llc_balance = true;
        if consolidate {
            s.cpu_sched.vsmp_consolidate.insert("smp".into());
        }
        s
    };
    let (off, placed_off) = same_llc_share(build(false), 0, 1);
    let (on, placed_on) = same_llc_share(build(true), 0, 1);
    eprintln!("vsmp consolidation: same-LLC share off {off:.3}, on {on:.3}; placements {placed_on}");
    assert_eq!(placed_off, 0);
    assert!(placed_on > 100, "placements {placed_on}");
    assert!(off < 0.2 && on > 0.8, "same-LLC share of co-running time: off {off:.3}, on {on:.3}");
}

/// Inter-VM cache affinity: two communicating 1-vCPU VMs share an LLC more often with the
/// switch on than off (ESX 4's per-LLC balancing spreads them otherwise).
#[test]
fn cache_affinity_brings_communicating_vms_into_one_llc() {
    let build = |affinity: bool| {
        let vms = vec![vm("web", 1, 1000, 0, None, duty(0.5, 3)), vm("db", 1, 1000, 0, None, duty(0.5, 3))];
        let mut s = spec1(10 * S, vms, 0);
        s.cpu_sched.llc_balance = true;
        s.cpu_sched.communicating_vms.push(("web".into(), "db".into()));
        s.cpu_sched.inter_vm_cache_affinity = affinity;
        s
    };
    let (off, _) = same_llc_share(build(false), 0, 1);
    let (on, placed) = same_llc_share(build(true), 0, 1);
    eprintln!("cache affinity: same-LLC share off {off:.3}, on {on:.3}; placements {placed}");
    assert!(placed > 100, "placements {placed}");
    assert!(off < 0.2 && on > 0.8, "same-LLC share of co-running time: off {off:.3}, on {on:.3}");
}
