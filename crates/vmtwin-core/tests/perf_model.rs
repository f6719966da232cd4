//! The execution-speed model against closed forms: with no penalties instructions = f t / CPI,
//! every run cycle is accounted for, and each penalty moves the counts by its own formula
//! (computed here from the parameters, not from the model's intermediate values).

use proptest::prelude::*;
use vmtwin_core::perf::{execute, remote_fraction, LayerProfile, PerfParams, PerfProfile, VcpuFacts, WalkParams};

const MHZ: f64 = 2600.0;

fn layer(instr: f64, cpi: f64, walks: f64, refs: f64, base: f64) -> LayerProfile {
    LayerProfile {
        instructions_per_unit: instr,
        cpi_core: cpi,
        walks_per_kinstr: walks,
        llc_refs_per_kinstr: refs,
        llc_base_miss_ratio: base,
        walk: WalkParams { guest_levels: 4, host_levels: 3, guest_ref_cycles: 10.0, ept_ref_cycles: 4.0, ..WalkParams::default() },
    }
}

fn profile(virtualized: bool, ws: u64) -> PerfProfile {
    PerfProfile {
        unit: "tx".into(),
        virtualized,
        user: layer(1_300_000.0, 1.8, 2.7, 6.0, 0.1),
        kernel: layer(130_000.0, 2.9, 9.0, 12.0, 0.2),
        hyp: layer(70_000.0, 3.2, 1.0, 10.0, 0.3),
        working_set_bytes: ws,
    }
}

/// CPI of one layer with the working set fitting its LLC share and local memory, from the
/// parameters: core + walks x walk cost + LLC refs x base miss ratio x stall.
fn cpi(l: &LayerProfile, nested: bool, stall: f64) -> f64 {
    let (n, m) = (l.walk.guest_levels as f64, l.walk.host_levels as f64);
    let walk = n * l.walk.guest_ref_cycles + if nested { (n * m + m) * l.walk.ept_ref_cycles } else { 0.0 };
    l.cpi_core + l.walks_per_kinstr / 1000.0 * walk + l.llc_refs_per_kinstr / 1000.0 * l.llc_base_miss_ratio * stall
}

fn overall_cpi(p: &PerfProfile, stall: f64) -> f64 {
    let mut layers = vec![(&p.user, p.virtualized), (&p.kernel, p.virtualized)];
    if p.virtualized {
        layers.push((&p.hyp, false));
    }
    let cycles: f64 = layers.iter().map(|(l, nested)| l.instructions_per_unit * cpi(l, *nested, stall)).sum();
    let instr: f64 = layers.iter().map(|(l, _)| l.instructions_per_unit).sum();
    cycles / instr
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #[test]
    fn no_penalties_means_instructions_are_f_t_over_cpi(run_ns in 0u64..10_000_000_000, virtualized: bool, ws_kb in 1u64..8192) {
        let p = profile(virtualized, ws_kb << 10);
        let params = PerfParams::default();
        let f = VcpuFacts { run_ns, ..VcpuFacts::default() };
        let e = execute(&p, &params, MHZ, &f, 0.0);
        let cycles = MHZ * run_ns as f64 / 1000.0;
        let expect = cycles / overall_cpi(&p, params.llc_miss_stall_cycles);
        prop_assert!(close(e.total(|l| l.instructions), expect), "{} vs {}", e.total(|l| l.instructions), expect);
        let hyp = if virtualized { p.hyp.instructions_per_unit } else { 0.0 };
        let per_unit = p.guest_instructions_per_unit() + hyp;
        prop_assert!(close(e.work_units, expect / per_unit));
        if !virtualized {
            prop_assert_eq!(e.layers[2].instructions, 0.0);
            prop_assert_eq!(e.total(|l| l.ept_walk_cycles), 0.0);
        }
    }

    #[test]
    fn every_run_cycle_is_accounted_for(
        run_ns in 0u64..5_000_000_000, moves in 0u32..40, cross in 0u32..5, node in 0u32..3,
        sibling in 0.0f64..=1.0, remote in 0.0f64..=1.0, corunners in 0.0f64..8.0, debt in 0.0f64..1e8,
        virtualized: bool, ws_mb in 1u64..64, lock in 0.0f64..2.0, resumed in 0.0f64..1e6, wait in 0.0f64..5.0,
    ) {
        let p = profile(virtualized, ws_mb << 20);
        // the cell lock's wait, from none to more than the run time (it is capped by it)
        let f = VcpuFacts { run_ns, moves_core: moves as f64, moves_llc: cross as f64, moves_node: node as f64,
                            ht_busy_ns: sibling * run_ns as f64, remote_fraction: remote, llc_corunners: corunners,
                            lock_wait_ns: lock * run_ns as f64, resume_l2_lines: resumed / 8.0, resume_llc_lines: resumed,
                            mem_wait: wait };
        let e = execute(&p, &PerfParams::default(), MHZ, &f, debt);
        let cycles = MHZ * run_ns as f64 / 1000.0;
        prop_assert!(close(e.total(|l| l.cycles), cycles), "{} vs {}", e.total(|l| l.cycles), cycles);
        // stalls and productive work add up too, and what is owed is never lost
        prop_assert!(e.refill_cycles + e.ht_stall_cycles + e.lock_wait_cycles <= cycles * (1.0 + 1e-12));
        prop_assert!(e.lock_wait_cycles >= 0.0);
        let (new, _) = vmtwin_core::perf::refill(&PerfParams::default(), p.working_set_bytes, MHZ, &f);
        prop_assert!(close(e.refill_cycles + e.debt_cycles, debt + new));
        // a penalty never buys more work than the same run without it
        let alone = execute(&p, &PerfParams::default(), MHZ, &VcpuFacts { run_ns, ..VcpuFacts::default() }, 0.0);
        prop_assert!(e.work_units <= alone.work_units * (1.0 + 1e-12));
        for l in &e.layers {
            prop_assert!(l.ept_walk_cycles <= l.walk_cycles * (1.0 + 1e-12));
        }
    }
}

#[test]
fn a_busy_sibling_leaves_the_thread_its_share_of_the_core() {
    let p = profile(true, 1 << 20);
    let params = PerfParams::default();
    let run_ns = 1_000_000_000;
    let alone = execute(&p, &params, MHZ, &VcpuFacts { run_ns, ..Default::default() }, 0.0);
    let shared = execute(&p, &params, MHZ, &VcpuFacts { run_ns, ht_busy_ns: run_ns as f64, ..Default::default() }, 0.0);
    let ratio = shared.total(|l| l.instructions) / alone.total(|l| l.instructions);
    assert!(close(ratio, (1.0 + params.ht_core_gain) / 2.0), "{ratio}");
    assert!(close(shared.total(|l| l.cycles), alone.total(|l| l.cycles)), "cycles count run time either way");
}

#[test]
fn a_move_to_another_llc_refills_the_working_set_from_memory() {
    // 8 MiB working set, default machine: the private 256 KiB is 4096 lines at 10 ns from the
    // LLC; the LLC's 8 MiB come back from memory at 10 bytes/ns.
    let p = profile(true, 8 << 20);
    let params = PerfParams::default();
    let private_ns = 4096.0 * 10.0;
    let mem_ns = (8u64 << 20) as f64 / 10.0;
    let f = VcpuFacts { run_ns: 1_000_000_000, moves_llc: 1.0, ..Default::default() };
    let e = execute(&p, &params, MHZ, &f, 0.0);
    assert!(close(e.refill_cycles, (private_ns + mem_ns) * MHZ / 1000.0), "{}", e.refill_cycles);
    let node = execute(&p, &params, MHZ, &VcpuFacts { moves_llc: 0.0, moves_node: 1.0, ..f }, 0.0);
    assert!(close(node.refill_cycles, (private_ns + 1.5 * mem_ns) * MHZ / 1000.0));
    // the refill's misses are counted: 8 MiB / 64 B lines on top of the steady-state misses
    let steady = execute(&p, &params, MHZ, &VcpuFacts { moves_llc: 0.0, ..f }, 0.0);
    let extra = e.total(|l| l.llc_misses) - steady.total(|l| l.llc_misses) * e.work_units / steady.work_units;
    assert!(close(extra, (8u64 << 20) as f64 / 64.0), "{extra}");
    // a refill longer than the run carries over
    let short = VcpuFacts { run_ns: 100_000, moves_llc: 1.0, ..Default::default() };
    let e = execute(&p, &params, MHZ, &short, 0.0);
    assert_eq!(e.work_units, 0.0);
    assert!(close(e.debt_cycles, (private_ns + mem_ns - 100_000.0) * MHZ / 1000.0));
}

#[test]
fn a_return_refills_the_lines_other_work_evicted_at_the_move_costs() {
    // 1000 L2 lines lost while away (refilled from the LLC at 10 ns each) and 2000 LLC lines
    // (refetched from local memory at 10 bytes/ns: 64 B / 10 = 6.4 ns each):
    // 1000 x 10 + 2000 x 6.4 = 22_800 ns, and the 2000 lines are LLC misses
    let p = profile(true, 1 << 20);
    let params = PerfParams::default();
    let f = VcpuFacts { run_ns: 1_000_000_000, resume_l2_lines: 1000.0, resume_llc_lines: 2000.0, ..Default::default() };
    let e = execute(&p, &params, MHZ, &f, 0.0);
    assert!(close(e.refill_cycles, 22_800.0 * MHZ / 1000.0), "{}", e.refill_cycles);
    let steady = execute(&p, &params, MHZ, &VcpuFacts { resume_l2_lines: 0.0, resume_llc_lines: 0.0, ..f }, 0.0);
    let extra = e.total(|l| l.llc_misses) - steady.total(|l| l.llc_misses) * e.work_units / steady.work_units;
    assert!(close(extra, 2000.0), "{extra}");
    // with all of its memory remote the memory part is 1.5x slower
    let remote = execute(&p, &params, MHZ, &VcpuFacts { remote_fraction: 1.0, ..f }, 0.0);
    assert!(close(remote.refill_cycles, (10_000.0 + 1.5 * 12_800.0) * MHZ / 1000.0));
    // nothing evicted, nothing paid
    assert_eq!(steady.refill_cycles, 0.0);
}

#[test]
fn co_runners_on_the_llc_turn_capacity_into_misses() {
    // the working set is the whole LLC: alone it fits; with k co-runners it gets 1/(1+k) of it,
    // so a fraction k/(1+k) of the references that would have hit now miss
    let params = PerfParams::default();
    let p = profile(false, params.llc_bytes);
    let run_ns = 1_000_000_000;
    for k in [0.0, 1.0, 3.0] {
        let e = execute(&p, &params, MHZ, &VcpuFacts { run_ns, llc_corunners: k, ..Default::default() }, 0.0);
        for (l, c) in [&p.user, &p.kernel].iter().zip(&e.layers) {
            let ratio = l.llc_base_miss_ratio + (1.0 - l.llc_base_miss_ratio) * (k / (1.0 + k));
            assert!(close(c.llc_misses, c.instructions * l.llc_refs_per_kinstr / 1000.0 * ratio), "k={k}");
        }
    }
}

#[test]
fn remote_memory_lengthens_every_miss_by_the_numa_factor() {
    let params = PerfParams::default();
    let p = profile(false, 1 << 20);
    let run_ns = 1_000_000_000;
    let cycles = MHZ * run_ns as f64 / 1000.0;
    for r in [0.0, 0.5, 1.0] {
        let e = execute(&p, &params, MHZ, &VcpuFacts { run_ns, remote_fraction: r, ..Default::default() }, 0.0);
        let stall = params.llc_miss_stall_cycles * (1.0 + r * (params.remote_latency_ratio - 1.0));
        assert!(close(e.total(|l| l.instructions), cycles / overall_cpi(&p, stall)), "r={r}");
    }
}

#[test]
fn nested_paging_costs_exactly_the_ept_cycles_of_its_walks() {
    let params = PerfParams::default();
    let mut native = profile(false, 1 << 20);
    native.hyp.instructions_per_unit = 0.0;
    let mut virt = native.clone();
    virt.virtualized = true;
    let run_ns = 2_000_000_000;
    let n = execute(&native, &params, MHZ, &VcpuFacts { run_ns, ..Default::default() }, 0.0);
    let v = execute(&virt, &params, MHZ, &VcpuFacts { run_ns, ..Default::default() }, 0.0);
    // per unit of work the virtual run spends the native cycles plus its EPT walk cycles
    let per_unit = |e: &vmtwin_core::perf::Executed| e.total(|l| l.cycles) / e.work_units;
    let ept_per_unit = v.total(|l| l.ept_walk_cycles) / v.work_units;
    assert!(close(per_unit(&v), per_unit(&n) + ept_per_unit));
    // walks per unit unchanged; EPT cycles per walk = (n + 1) x m refs x 4 cycles = 5 x 3 x 4
    let walks = |e: &vmtwin_core::perf::Executed| e.layers[0].tlb_misses / e.work_units;
    assert!(close(walks(&v), walks(&n)));
    assert!(close(v.layers[0].ept_walk_cycles / v.layers[0].tlb_misses, 60.0));
}

#[test]
fn bad_profiles_name_the_field() {
    let mut p = profile(true, 1);
    p.kernel.cpi_core = 0.0;
    assert!(p.validate("vms[1].perf").unwrap_err().to_string().contains("vms[1].perf.kernel.cpi_core: got 0"));
    let mut p = profile(true, 1);
    p.user.instructions_per_unit = 0.0;
    p.kernel.instructions_per_unit = 0.0;
    assert!(p.validate("p").unwrap_err().to_string().contains("p.user.instructions_per_unit"));
    let params = PerfParams { remote_latency_ratio: 0.5, ..PerfParams::default() };
    assert!(params.validate("perf").unwrap_err().to_string().contains("perf.remote_latency_ratio"));
}

/// research/cpu.md A7/B11/C26 by hand: memory interleaved evenly over the VM's clients' home
/// nodes, accesses uniform over it.
#[test]
fn remote_accesses_are_the_memory_off_the_vcpus_node() {
    // one home node (a VM narrower than a node): all local at home, all remote away
    assert_eq!(remote_fraction(2, &[2], 4), 0.0);
    assert_eq!(remote_fraction(1, &[2], 4), 1.0);
    // a 2-client wide VM with memory split evenly: a vCPU on its home node has 1/2 remote
    assert_eq!(remote_fraction(0, &[0, 1], 4), 0.5);
    assert_eq!(remote_fraction(1, &[0, 1], 4), 0.5);
    // ... and one on a node holding none of it has all remote
    assert_eq!(remote_fraction(3, &[0, 1], 4), 1.0);
    // maxPerMachineNode = 2 on 4 x quad-core: 4 clients, 1/4 local (B11)
    assert_eq!(remote_fraction(3, &[0, 1, 2, 3], 4), 0.75);
    // not NUMA-managed: interleaved over every node, 1/2 local on 2 nodes, 1/4 on 4 (B11)
    assert_eq!(remote_fraction(0, &[], 2), 0.5);
    assert_eq!(remote_fraction(3, &[], 4), 0.75);
}

proptest! {
    /// Against pages dealt round-robin over the memory's nodes and accesses uniform over the
    /// pages: the remote fraction is the share of pages not on the vCPU's node.
    #[test]
    fn remote_fraction_is_the_share_of_interleaved_pages_elsewhere(
        nodes in 1usize..9, picks in prop::collection::vec(0u32..8, 0..8), node in 0u32..8,
    ) {
        let node = node % nodes as u32;
        let mut mem: Vec<u32> = Vec::new();
        for p in picks.iter().map(|p| p % nodes as u32) {
            if !mem.contains(&p) {
                mem.push(p);
            }
        }
        let over: Vec<u32> = if mem.is_empty() { (0..nodes as u32).collect() } else { mem.clone() };
        const PAGES: usize = 840; // divisible by 1..=8, so every node gets the same count
        let remote = (0..PAGES).filter(|i| over[i % over.len()] != node).count();
        prop_assert!(close(remote_fraction(node, &mem, nodes), remote as f64 / PAGES as f64));
    }
}
