//! The execution-speed model inside a run: its table accounts for every run nanosecond, it does not
//! change what the scheduler does, and co-runners it reads from the pCPUs cost what the closed
//! form says.

mod common;

use common::*;
use vmtwin_core::metrics::{Column, Table};
use vmtwin_core::perf::{LayerProfile, PerfProfile, PerfSpec, WalkParams};
use vmtwin_core::spec::SimSpec;
use vmtwin_core::Simulation;

fn profile(ws: u64) -> PerfProfile {
    let walk = WalkParams { guest_levels: 3, host_levels: 3, ..WalkParams::default() };
    PerfProfile {
        unit: "bop".into(),
        virtualized: true,
        user: LayerProfile { instructions_per_unit: 50_000.0, cpi_core: 0.9, walks_per_kinstr: 1.0, llc_refs_per_kinstr: 8.0, llc_base_miss_ratio: 0.05, walk: walk.clone() },
        kernel: LayerProfile { instructions_per_unit: 5_000.0, cpi_core: 2.0, walks_per_kinstr: 3.0, walk, ..LayerProfile::default() },
        hyp: LayerProfile { instructions_per_unit: 1_000.0, cpi_core: 3.0, ..LayerProfile::default() },
        working_set_bytes: ws,
    }
}

fn with_perf(mut s: SimSpec, ws: u64) -> SimSpec {
    let mut p = PerfSpec::default();
    for v in &s.vms {
        p.vms.insert(v.name.clone(), profile(ws));
    }
    s.perf = Some(p);
    s
}

fn col<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    match t.column(name).unwrap_or_else(|| panic!("no column {name}")) {
        Column::F64(v) => v,
        c => panic!("{name} is {}", c.dtype()),
    }
}

fn run(s: SimSpec) -> Simulation {
    let mut sim = Simulation::new(s).unwrap();
    sim.run().unwrap();
    sim
}

#[test]
fn every_run_nanosecond_becomes_cycles_and_the_cpu_tables_do_not_change() {
    let base = spec(4, 20 * S, vec![vm("a", 2, 2000, 0, None, busy()), vm("b", 3, 3000, 0, None, busy()), vm("c", 1, 1000, 0, Some(500), busy())]);
    let plain = run(base.clone());
    let sim = run(with_perf(base, 1 << 20));
    let names: Vec<&str> = sim.tables().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["host", "vm", "vcpu", "pcpu", "vcpu_perf"]);
    assert_eq!(plain.tables().len(), 4, "no perf section, no table");
    for ((n, a), (_, b)) in plain.tables().iter().zip(sim.tables()) {
        // byte for byte (NaN limits compare unequal as floats)
        let bytes = |t: &Table| t.columns.iter().map(|(c, v)| (*c, v.to_le_bytes())).collect::<Vec<_>>();
        assert_eq!(bytes(a), bytes(b), "table {n} changed with the model on");
    }
    let t = sim.table("vcpu_perf").unwrap();
    assert_eq!(t.rows(), 10 * 6, "one row per vCPU per 2 s sample");
    let Some(Column::U64(run_ns)) = t.column("run_ns") else { panic!() };
    let cycles = col(t, "cycles");
    let mut total_run = 0u64;
    for (r, c) in run_ns.iter().zip(cycles) {
        assert!((c - *r as f64 * CORE_MHZ as f64 / 1000.0).abs() <= 1e-6 * c.max(1.0));
        total_run += r;
    }
    // the run time the model saw is the scheduler's
    let used: u64 = (0..6).map(|v| sim.sched().vcpus[v].time_ns[0]).sum();
    assert_eq!(total_run, used);
    // parts add up to totals
    for name in ["instructions", "cycles", "tlb_misses", "walk_cycles", "ept_walk_cycles", "llc_misses"] {
        let total = col(t, name);
        let parts: Vec<&[f64]> = ["user", "kernel", "hyp"].iter().map(|l| col(t, &format!("{name}_{l}"))).collect();
        for i in 0..t.rows() {
            let s: f64 = parts.iter().map(|p| p[i]).sum();
            assert!((s - total[i]).abs() <= 1e-9 * total[i].max(1.0), "{name} row {i}");
        }
    }
}

#[test]
fn a_vm_alone_retires_f_t_over_its_cpi() {
    // one busy 1-vCPU VM on a 1-core host: no co-runner, no move, working set fits
    let sim = run(with_perf(spec(1, 10 * S, vec![vm("a", 1, 1000, 0, None, busy())]), 1 << 20));
    let t = sim.table("vcpu_perf").unwrap();
    let p = profile(1 << 20);
    let stall = 100.0; // default llc_miss_stall_cycles
    let nested = |n: f64, m: f64| n * 12.5 + (n * m + m) * 3.0; // default reference costs
    let per_unit = 50_000.0 * (0.9 + 1.0 / 1000.0 * nested(3.0, 3.0) + 8.0 / 1000.0 * 0.05 * stall)
        + 5_000.0 * (2.0 + 3.0 / 1000.0 * nested(3.0, 3.0))
        + 1_000.0 * 3.0;
    let cpi = per_unit / 56_000.0;
    for (c, i) in col(t, "cycles").iter().zip(col(t, "instructions")) {
        assert!((i - c / cpi).abs() <= 1e-9 * i, "{i} vs {}", c / cpi);
    }
    assert!(col(t, "llc_corunners").iter().all(|&k| k == 0.0));
    assert_eq!(p.unit, "bop");
}

#[test]
fn a_co_runner_on_the_llc_costs_what_the_capacity_model_says() {
    // working set = the whole LLC: alone on a 1-core LLC it fits, two busy VMs on a 2-core LLC
    // each get half of it
    let ws = 8 << 20;
    let alone = run(with_perf(spec(1, 10 * S, vec![vm("a", 1, 1000, 0, None, busy())]), ws));
    let pair = run(with_perf(spec(2, 10 * S, vec![vm("a", 1, 1000, 0, None, busy()), vm("b", 1, 1000, 0, None, busy())]), ws));
    let per_cycle = |sim: &Simulation| {
        let t = sim.table("vcpu_perf").unwrap();
        col(t, "work_units").iter().sum::<f64>() / col(t, "cycles").iter().sum::<f64>()
    };
    let k: Vec<f64> = col(pair.table("vcpu_perf").unwrap(), "llc_corunners").to_vec();
    assert!(k.iter().all(|&x| (x - 1.0).abs() < 1e-3), "{k:?}");
    // user-mode misses per reference go from 0.05 to 0.05 + 0.95 / 2; nothing else changes
    let extra = 50_000.0 * 8.0 / 1000.0 * (0.95 / 2.0) * 100.0;
    let nested = 3.0 * 12.5 + 12.0 * 3.0;
    let base = 50_000.0 * (0.9 + nested / 1000.0 + 8.0 / 1000.0 * 0.05 * 100.0) + 5_000.0 * (2.0 + 3.0 * nested / 1000.0) + 3_000.0;
    let expect = base / (base + extra);
    let got = per_cycle(&pair) / per_cycle(&alone);
    assert!((got - expect).abs() < 2e-3, "{got} vs {expect}");
}

#[test]
fn two_vcpus_missing_to_one_node_wait_the_md1_queue_their_misses_make() {
    // the pair above, each with its 8 MB working set on half of the 8 MB LLC (about 10 M misses a
    // second, 0.6 GB/s), on a node of 2 GB/s: utilisation ~0.6, well into the queue
    let ws = 8 << 20;
    let base = spec(2, 10 * S, vec![vm("a", 1, 1000, 0, None, busy()), vm("b", 1, 1000, 0, None, busy())]);
    let free = run(with_perf(base.clone(), ws));
    let mut s = with_perf(base, ws);
    s.perf.as_mut().unwrap().params.mem_node_bytes_per_ns = 2.0;
    let queued = run(s.clone());
    let (tf, tq) = (free.table("vcpu_perf").unwrap(), queued.table("vcpu_perf").unwrap());
    assert!(col(tf, "mem_wait").iter().all(|&w| w == 0.0), "no bandwidth given: no wait");
    let (misses, waits, units, cycles) = (col(tq, "llc_misses"), col(tq, "mem_wait"), col(tq, "work_units"), col(tq, "cycles"));
    let (m0, u0) = (col(tf, "llc_misses"), col(tf, "work_units"));
    // rows come in pairs (a, b) per 2 s sample; from the second sample on, nothing moves
    for i in (2..tq.rows()).step_by(2) {
        // by hand: rho = both vCPUs' misses x 64 B over 2 s at 2 GB/s; the wait is M/D/1's with a
        // 32 ns transfer, over the 80 ns unloaded latency
        let rho = (misses[i] + misses[i + 1]) * 64.0 / 2e9 / 2.0;
        let w = 32.0 * rho / (2.0 * (1.0 - rho)) / 80.0;
        assert!(rho > 0.3 && rho < 0.9, "row {i}: rho {rho}");
        assert!((waits[i] - w).abs() < 1e-6 && (waits[i + 1] - w).abs() < 1e-6, "row {i}: {} vs {w}", waits[i]);
        // each miss stalls 100 (1 + w) cycles: cycles per unit rise by w x 100 x misses per unit
        let per_unit_free = cycles[i] / u0[i];
        let per_miss = m0[i] / u0[i];
        let expect = cycles[i] / (per_unit_free + w * 100.0 * per_miss);
        assert!((units[i] - expect).abs() < 1e-6 * expect, "row {i}: {} vs {expect}", units[i]);
        assert!((misses[i] / units[i] - per_miss).abs() < 1e-9 * per_miss, "misses per unit unchanged");
    }
    // the switch off gives the model without it, bit for bit
    s.perf.as_mut().unwrap().params.mem_bandwidth = false;
    let off = run(s);
    assert_eq!(col(off.table("vcpu_perf").unwrap(), "work_units"), col(tf, "work_units"));
}

/// `profile(ws)` without LLC misses: its working set fits the LLC and none of its references
/// miss there, so it inserts no LLC lines, only L2 lines (its 8 LLC references per 1000
/// instructions).
fn l2_only(ws: u64) -> PerfProfile {
    let mut p = profile(ws);
    p.user.llc_base_miss_ratio = 0.0;
    p
}

fn sum(sim: &Simulation, name: &str) -> f64 {
    col(sim.table("vcpu_perf").unwrap(), name).iter().sum()
}

#[test]
fn a_vcpu_alone_on_its_pcpu_resumes_on_a_warm_cache() {
    // one busy VM on one pCPU: every slice starts where the last ended with nothing between
    let sim = run(with_perf(spec(1, 10 * S, vec![vm("a", 1, 1000, 0, None, busy())]), 1 << 20));
    assert_eq!(sum(&sim, "refill_cycles"), 0.0);
    let w = sim.sched().warmth().expect("counted with the model on");
    assert!(w.resumes[0] > 100, "{}", w.resumes[0]);
    assert_eq!((w.evicted_l2_lines[0], w.evicted_llc_lines[0]), (0.0, 0.0));
}

#[test]
fn vcpus_taking_turns_on_a_pcpu_refill_the_l2_the_other_evicted() {
    // two busy VMs on one pCPU, no LLC insertions (`l2_only`): each turn of one inserts about
    // 8 lines per 1000 instructions (~16 M lines/s at 2 GHz), so a turn of a millisecond or more
    // evicts the other's 256 KiB L2 footprint (4096 lines) all but entirely (exp(-n/4096) with
    // n >= 16_000), and its return costs 4096 x 10 ns = 40.96 us. The LLC loses nothing.
    let mut s = spec(1, 10 * S, vec![vm("a", 1, 1000, 0, None, busy()), vm("b", 1, 1000, 0, None, busy())]);
    let mut p = PerfSpec::default();
    for v in &s.vms {
        p.vms.insert(v.name.clone(), l2_only(1 << 20));
    }
    s.perf = Some(p);
    // step the run and count, independently of the model, the returns: starts of a vCPU that
    // ran before, after the other ran on the pCPU (and the shortest turn between)
    let mut sim = Simulation::new(s.clone()).unwrap();
    let (mut last, mut started, mut returns, mut since, mut shortest) = (u32::MAX, [false; 2], 0u64, 0u64, u64::MAX);
    while sim.next_event_time().is_some_and(|t| t < 10 * S) {
        sim.step();
        let cur = sim.sched().running_on(0);
        if cur != u32::MAX && cur != last {
            if last != u32::MAX {
                shortest = shortest.min(sim.now() - since);
            }
            returns += started[cur as usize] as u64;
            started[cur as usize] = true;
            (last, since) = (cur, sim.now());
        }
    }
    sim.run().unwrap();
    assert!(returns > 100 && shortest >= 1_000_000, "{returns} returns, shortest turn {shortest} ns");
    let w = sim.sched().warmth().unwrap();
    assert_eq!(w.evicted_llc_lines, vec![0.0, 0.0]);
    let per_return = 4096.0 * 10.0 * CORE_MHZ as f64 / 1000.0;
    let paid = sum(&sim, "refill_cycles");
    assert!((paid - returns as f64 * per_return).abs() < 1e-6 * paid, "{paid} cycles for {returns} returns");
    // the switch off: the model as before, no return costs anything
    s.perf.as_mut().unwrap().params.resume_refill = false;
    let off = run(s);
    assert!(off.sched().warmth().is_none());
    assert_eq!(sum(&off, "refill_cycles"), 0.0);
}

#[test]
fn profiles_are_checked_naming_the_vm() {
    let mut s = with_perf(spec(2, S, vec![vm("a", 1, 1000, 0, None, busy()), vm("b", 1, 1000, 0, None, busy())]), 1);
    s.perf.as_mut().unwrap().vms.get_mut("b").unwrap().kernel.cpi_core = -1.0;
    let err = Simulation::new(s.clone()).unwrap_err().to_string();
    assert!(err.contains("vms[1].perf.kernel.cpi_core: got -1"), "{err}");
    let p = s.perf.as_mut().unwrap();
    let b = p.vms.remove("b").unwrap();
    p.vms.insert("nope".into(), b);
    let err = Simulation::new(s).unwrap_err().to_string();
    assert!(err.contains("perf.vms.nope"), "{err}");
}

#[test]
fn hyperthreaded_and_multi_llc_hosts_map_the_schedulers_pcpus() {
    // 2 LLCs x 2 cores x 2 threads: two busy 1-vCPU VMs. Whatever the scheduler's pCPUs are (cores
    // while it runs one vCPU per core, or threads), each vCPU sees co-runners only on its own LLC.
    let mut s = with_perf(spec(2, 10 * S, vec![vm("a", 1, 1000, 0, None, busy()), vm("b", 1, 1000, 0, None, busy())]), 1 << 20);
    s.host.llcs_per_node = 2;
    s.host.cores_per_llc = 2;
    s.host.threads_per_core = 2;
    let sim = run(s);
    let t = sim.table("vcpu_perf").unwrap();
    assert_eq!(t.rows(), 2 * 5);
    let k = col(t, "llc_corunners");
    let sib = col(t, "sibling_busy");
    assert!(k.iter().chain(sib).all(|&x| (0.0..=1.0 + 1e-9).contains(&x)), "{k:?} {sib:?}");
    let cycles: f64 = col(t, "cycles").iter().sum();
    assert!((cycles - 2.0 * 10.0 * CORE_MHZ as f64 * 1e6).abs() < 1e-6 * cycles, "both vCPUs ran the whole run");
}

#[test]
fn moves_and_numa_homes_come_from_the_schedulers_counters() {
    // 2 nodes x 2 cores, five busy 1-vCPU VMs: more vCPUs than pCPUs, so vCPUs move
    let vms = (0..5).map(|i| vm(&format!("v{i}"), 1, 1000, 0, None, busy())).collect();
    let mut s = with_perf(spec(2, 20 * S, vms), 2 << 20);
    s.host.sockets = 2;
    let sim = run(s.clone());
    let t = sim.table("vcpu_perf").unwrap();
    let moves: f64 = col(t, "moves").iter().sum();
    let counted: u64 = sim.sched().vcpus.iter().map(|v| v.migrations).sum();
    assert_eq!(moves, counted as f64, "every move the scheduler counted reaches the model once");
    // a vCPU that moved paid a refill; one that did not move and owed nothing paid none
    let refill = col(t, "refill_cycles");
    for (m, r) in col(t, "moves").iter().zip(refill) {
        if *m > 0.0 {
            assert!(*r > 0.0);
        }
    }
    // remote accesses: 0 or 1 for a vCPU with a home node (judged at the sample)
    assert!(col(t, "remote_fraction").iter().all(|&r| r == 0.0 || r == 1.0));
    // without NUMA homes, memory is interleaved over the two nodes: half remote
    s.cpu_sched.numa_home_nodes = false;
    let sim = run(s);
    let t = sim.table("vcpu_perf").unwrap();
    assert!(col(t, "remote_fraction").iter().all(|&r| r == 0.5));
}

/// A wide VM (research/cpu.md A7) in a run: 4 nodes x 2 cores (Host3's shape), one busy 4-vCPU VM.
/// ESX 4.1 splits it into two 2-vCPU clients with memory interleaved over their two homes, so each
/// vCPU, confined to its client's home, has 1/2 of its accesses remote; ESX 4.0 does not manage
/// it and interleaves over all four nodes: 3/4 remote wherever it runs.
#[test]
fn a_wide_vms_vcpus_are_half_remote_on_two_clients() {
    let mut s = with_perf(spec(8, 10 * S, vec![vm("wide", 4, 1000, 0, None, busy())]), 2 << 20);
    s.host = vmtwin_core::spec::HostSpec { sockets: 4, cores_per_llc: 2, ..s.host };
    s.cpu_sched.numa_home_nodes = true;
    s.cpu_sched.numa_confine = true;
    s.cpu_sched.numa_wide_vms = true;
    let sim = run(s.clone());
    let mut homes = sim.sched().homes_of(0);
    homes.sort_unstable();
    homes.dedup();
    assert_eq!(homes.len(), 2, "two NUMA clients");
    let t = sim.table("vcpu_perf").unwrap();
    assert!(col(t, "remote_fraction").iter().all(|&r| r == 0.5), "{:?}", col(t, "remote_fraction"));
    s.cpu_sched.numa_wide_vms = false;
    let sim = run(s);
    let t = sim.table("vcpu_perf").unwrap();
    assert!(col(t, "remote_fraction").iter().all(|&r| r == 0.75));
}
