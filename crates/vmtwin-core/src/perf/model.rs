//! The execution-speed model: what a vCPU's run time buys in instructions, and what its hardware
//! counters would read.
//!
//! A vCPU that ran `t` ns on a pCPU clocked at `f` MHz spent `C = f t / 1000` unhalted cycles
//! (every cycle is accounted for: conservation). Some cycles are stalls that retire nothing: the
//! refill of its caches after a move to another pCPU, and the share of the core a busy
//! hyperthread sibling takes. The rest, `P`, retire instructions at the workload's CPI.
//!
//! The workload does units of work (a transaction, a row, a business operation), each made of
//! `I_L` instructions in three layers `L`: guest user, guest kernel and, when virtualized, the
//! hypervisor (VMM + VMkernel). Each layer's cycles per instruction are
//!
//! ```text
//!   CPI_L = cpi_core_L                                    (the pipeline, L1/L2 hits)
//!         + walks_L/1000 x walk_cycles_L                   (TLB misses: 1D walk, or 2D under EPT)
//!         + llc_refs_L/1000 x miss_ratio_L x miss_stall     (LLC misses to memory)
//!   miss_ratio_L = base_L + (1 - base_L) x max(0, 1 - (llc_bytes / (1 + k)) / ws)
//!   miss_stall   = llc_miss_stall_cycles x (1 + r (remote_latency_ratio - 1))
//! ```
//!
//! with `k` the co-runners sharing the vCPU's LLC (each taking an equal part of it; with
//! `resume_refill` not the vCPUs that take turns with it on its own pCPU, charged on returns), `ws` the
//! working set and `r` the share of memory accesses that go to a remote NUMA node. A unit costs
//! `sum_L I_L CPI_L` cycles, so the vCPU did `P / sum_L I_L CPI_L` units, retired `units x I_L`
//! instructions in each layer and spent `C x I_L CPI_L / sum_L I_L CPI_L` cycles there (stall
//! cycles are spread over the layers like the work). With no penalties this is exactly
//! `instructions = f t / CPI` with `CPI = sum I_L CPI_L / sum I_L`.
//!
//! The penalties, each a named mechanism:
//!
//! - **Cold caches after a move** (research/cpu.md A6.0, C18): a move within the LLC refills the
//!   private L2 from the LLC (`min(ws, l2_bytes)/line_bytes` lines at `llc_refill_line_ns`); a move
//!   to another LLC also refetches the working set that was cached (`min(ws, llc_bytes)`) from
//!   memory at `mem_refill_bytes_per_ns`; a move to another node does that at remote speed
//!   (`x remote_latency_ratio`). Refill cycles not paid within an interval carry over.
//! - **Cold caches after a return** (`resume_refill`): a vCPU switched back onto the core or LLC
//!   it last ran on refills the lines other work evicted meanwhile (`cpu/cache.rs`: its footprint
//!   times `1 - exp(-n/C)`, `n` lines inserted since it left, `C` the cache in lines), at the
//!   same costs: an L2 line from the LLC at `llc_refill_line_ns`, an LLC line from memory at
//!   `mem_refill_bytes_per_ns` (slower by the NUMA factor for its remote share).
//! - **LLC sharing** with co-runners: the capacity term of `miss_ratio` above.
//! - **Remote NUMA memory**: the `r` term of `miss_stall`.
//! - **Memory bandwidth** (`mem_bandwidth`, where `mem_node_bytes_per_ns` is given): each
//!   node's memory controller is an M/D/1 queue loaded by the misses of the vCPUs whose memory
//!   it holds; its wait, over `mem_latency_ns`, adds `w` to the latency factor of `miss_stall`
//!   (`1 + r (remote_latency_ratio - 1) + w`). The waits and the miss rates are solved together
//!   at each sample (`membw.rs`).
//! - **A busy hyperthread sibling**: for the run time `h` with the sibling busy, the thread gets
//!   `(1 + ht_core_gain)/2` of the core, the rest of those cycles stall.
//! - **Waiting for the scheduler's lock** (the ESX 3.x cell lock, `cpu/cells.rs`): each of the
//!   vCPU's scheduler invocations waits [`crate::cpu::lock_wait_ns`] behind the other pCPUs of
//!   its lock domain; those cycles retire nothing.
//! - **Nested-paging TLB misses**: a guest layer of a virtualized profile walks in two dimensions
//!   (`walk.rs`), natively in one; the EPT part is counted on its own (`ept_walk_cycles`). The
//!   hypervisor walks its own tables natively.
//!
//! The model observes; one workload reads it back: a barrier program's phases take longer by the
//! vCPU's [`slowdown`] over its last interval (units alone over units under the interval's
//! penalties, the hyperthread's left to the scheduler), so its barriers per second feel the
//! caches, NUMA and the lock (`guest/barrier.rs`).
//!
//! # Tunables
//! [`PerfParams`] (machine) and [`PerfProfile`] (per VM, per unit of work), in `params.rs`, with
//! units, defaults and sources; the walk costs in `walk.rs`.
//!
//! # Counters
//! Per vCPU per sample interval, the `vcpu_perf` table: `run_ns`, `work_units`, and for each of
//! `instructions`, `cycles`, `llc_misses`, `tlb_misses` (DTLB walks), `walk_cycles` (page-walk
//! cycles, EPT part included) and `ept_walk_cycles` the total and its `_user`, `_kernel` and
//! `_hyp` parts; then `refill_cycles`, `ht_stall_cycles`, `lock_wait_cycles` and the facts read from the scheduler
//! (`moves`, `llc_corunners`, `sibling_busy`, `remote_fraction`). Counts are expected values
//! (fractional). Host-system counters see all three layers (the hypervisor in kernel mode), a
//! guest-mode vPMC sees user and kernel only: the Python methodology builds each view.
//!
//! # Known gaps
//! - `read_facts` (the one place the model reads the scheduler) takes each vCPU's moves from the
//!   scheduler's per-vCPU counters (all, across LLCs, across nodes) and its VM's NUMA homes;
//!   remote accesses ([`remote_fraction`]) are judged at the sample from the node the vCPU sits
//!   on, with the VM's memory interleaved evenly over its clients' distinct home nodes (one home:
//!   all there; a wide VM: `1 - 1/clients` remote even at home) or, without a home, over every
//!   node (research/cpu.md A7, C26). Memory follows a moved home at once (ESX migrates it
//!   gradually). Co-runners on the LLC are
//!   estimated from the pCPUs' busy time over the interval (the vCPU's current pCPU's LLC;
//!   co-running assumed independent of the vCPU's own run). The run time beside a busy
//!   hyperthread sibling is the scheduler's own count (`CpuSched::ht_ns`) when it runs on both
//!   threads; otherwise (one vCPU per core) it is estimated the same way, and is 0.
//! - Co-runners are assumed to have the same working set (equal LLC shares). Memory bandwidth
//!   is shared per node only (`membw.rs` lists its gaps). With `resume_refill` the co-runners are the other pCPUs' busy
//!   time (exact when the vCPU stayed on one pCPU over the interval; a move within the LLC counts
//!   its own run on the pCPU it left as a co-runner's).
//! - Returns: the gaps of `cpu/cache.rs` (random replacement, full footprints at departure,
//!   insertion rates fixed at a slice's start, unprofiled VMs insert nothing).
//! - No PMU model: no multiplexing, no counter width, no vPMC save/restore.

use super::membw::{self, Controllers, Demand, MissCurve};
use super::params::{LayerProfile, PerfParams, PerfProfile};
use crate::cpu::{CacheWarmth, CpuSched, WarmthProfile};
use crate::hw::Topology;
use crate::metrics::{Cells, Table, Value};
use crate::sim::{Time, NS_PER_S};

/// The layers, in table order: guest user, guest kernel, hypervisor.
pub const LAYERS: [&str; 3] = ["user", "kernel", "hyp"];

/// What the scheduler knows about one vCPU over one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VcpuFacts {
    /// ns on a pCPU
    pub run_ns: u64,
    /// moves to another core of the same LLC
    pub moves_core: f64,
    /// moves to another LLC of the same NUMA node
    pub moves_llc: f64,
    /// moves to another NUMA node
    pub moves_node: f64,
    /// run ns with the hyperthread sibling busy
    pub ht_busy_ns: f64,
    /// share of memory accesses to a remote node, 0..1
    pub remote_fraction: f64,
    /// other busy hardware threads sharing its LLC while it ran (average)
    pub llc_corunners: f64,
    /// ns its scheduler invocations waited for their lock (the cell lock)
    pub lock_wait_ns: f64,
    /// L2 lines other work evicted while it was away from its core, refilled on its returns
    /// (`cpu/cache.rs`)
    pub resume_l2_lines: f64,
    /// LLC lines other work evicted while it was away from its LLC, refilled from memory on its
    /// returns (`cpu/cache.rs`)
    pub resume_llc_lines: f64,
    /// queueing wait of its misses at the memory controllers, in unloaded local latencies
    /// (`membw.rs`; 0 without bandwidth contention)
    pub mem_wait: f64,
}

/// One layer's counts over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LayerCounts {
    /// instructions retired
    pub instructions: f64,
    /// unhalted core cycles
    pub cycles: f64,
    /// LLC misses
    pub llc_misses: f64,
    /// DTLB misses that walked
    pub tlb_misses: f64,
    /// page-walk cycles, EPT part included
    pub walk_cycles: f64,
    /// cycles in the EPT part of walks
    pub ept_walk_cycles: f64,
}

/// What one vCPU did over one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Executed {
    /// per layer, in [`LAYERS`] order
    pub layers: [LayerCounts; 3],
    /// units of work done
    pub work_units: f64,
    /// cycles spent refilling caches after moves (paid in this interval)
    pub refill_cycles: f64,
    /// cycles lost to a busy hyperthread sibling
    pub ht_stall_cycles: f64,
    /// cycles spent waiting for the scheduler's lock (the cell lock)
    pub lock_wait_cycles: f64,
    /// refill cycles still owed at the end of the interval
    pub debt_cycles: f64,
    /// LLC misses of the interval's refills (part of the layers' `llc_misses`)
    pub refill_misses: f64,
}

impl Executed {
    /// Sum of one count over the layers.
    pub fn total(&self, f: impl Fn(&LayerCounts) -> f64) -> f64 {
        self.layers.iter().map(f).sum()
    }
}

/// Per-unit figures of one layer under the interval's conditions.
struct LayerCost<'a> {
    p: &'a LayerProfile,
    cpi: f64,
    walk_cycles: f64,
    ept_cycles: f64,
    miss_ratio: f64,
}

fn layer_cost<'a>(p: &'a LayerProfile, nested: bool, miss_ratio_capacity: f64, miss_stall: f64) -> LayerCost<'a> {
    let walk_cycles = if nested { p.walk.nested_cycles() } else { p.walk.native_cycles() };
    let ept_cycles = if nested { p.walk.ept_cycles() } else { 0.0 };
    let miss_ratio = p.llc_base_miss_ratio + (1.0 - p.llc_base_miss_ratio) * miss_ratio_capacity;
    let cpi = p.cpi_core + p.walks_per_kinstr / 1000.0 * walk_cycles + p.llc_refs_per_kinstr / 1000.0 * miss_ratio * miss_stall;
    LayerCost { p, cpi, walk_cycles, ept_cycles, miss_ratio }
}

/// The share of a vCPU's memory accesses that go to a remote node, under the uniform access
/// pattern research/cpu.md A7 and B11 assume, with the VM's memory interleaved evenly over
/// `mem_nodes` (every one of the host's `nodes` when it is empty) and the vCPU running on `node`:
/// `1 - 1/|mem_nodes|` when `node` holds a part of the memory, 1 when it holds none.
///
/// This covers every placement ESX makes (A7, C26): a VM with one home node has all its memory
/// there (0 remote at home, 1 away); a wide VM split into NUMA clients has it interleaved over the
/// clients' distinct home nodes (two clients: 1/2 remote even at home); a VM that is not
/// NUMA-managed (ESX 4.0's wide VM, or homes switched off) has it over every node (`1 - 1/nodes`).
pub fn remote_fraction(node: u32, mem_nodes: &[u32], nodes: usize) -> f64 {
    let (over, holds) = if mem_nodes.is_empty() { (nodes, true) } else { (mem_nodes.len(), mem_nodes.contains(&node)) };
    if holds {
        1.0 - 1.0 / over.max(1) as f64
    } else {
        1.0
    }
}

/// Fill `out` with the distinct home nodes of the VM whose first vCPU is `first` (vCPUs of a VM
/// are contiguous), or leave it empty when the VM has no home node.
fn memory_nodes(sched: &CpuSched, first: usize, out: &mut Vec<u32>) {
    out.clear();
    let vm = sched.vcpus[first].vm;
    for vc in sched.vcpus[first..].iter().take_while(|vc| vc.vm == vm) {
        if vc.home == crate::cpu::NONE {
            out.clear();
            return;
        }
        if !out.contains(&vc.home) {
            out.push(vc.home);
        }
    }
}

/// Cycles to refill the caches after the interval's moves and returns, and the LLC misses that
/// refill takes. A return refills the lines other work evicted (`cpu/cache.rs`) at the same
/// costs as a move: an L2 line from the LLC at `llc_refill_line_ns`, an LLC line from memory at
/// `mem_refill_bytes_per_ns` (the vCPU's memory being where it is, local or remote, as for the
/// run: `remote_fraction`).
pub fn refill(params: &PerfParams, ws_bytes: u64, mhz: f64, f: &VcpuFacts) -> (f64, f64) {
    let line = params.line_bytes as f64;
    let private = ws_bytes.min(params.l2_bytes) as f64 / line * params.llc_refill_line_ns;
    let cached = ws_bytes.min(params.llc_bytes) as f64;
    let from_mem = cached / params.mem_refill_bytes_per_ns;
    let mut ns = (f.moves_core + f.moves_llc + f.moves_node) * private
        + f.moves_llc * from_mem
        + f.moves_node * from_mem * params.remote_latency_ratio;
    let mut misses = (f.moves_llc + f.moves_node) * cached / line;
    if f.resume_l2_lines > 0.0 || f.resume_llc_lines > 0.0 {
        ns += f.resume_l2_lines * params.llc_refill_line_ns + f.resume_llc_lines * line / params.mem_refill_bytes_per_ns * memory_latency(params, f);
        misses += f.resume_llc_lines;
    }
    (ns * mhz / 1000.0, misses)
}

/// A memory access's latency relative to a local one, for a vCPU whose accesses are
/// `remote_fraction` remote: `1 + remote (remote_latency_ratio - 1)`.
#[inline]
fn memory_latency(params: &PerfParams, f: &VcpuFacts) -> f64 {
    1.0 + f.remote_fraction.clamp(0.0, 1.0) * (params.remote_latency_ratio - 1.0)
}

/// Lines a vCPU of `profile` inserts per ns of run into its core's L2 (its LLC references) and
/// into its LLC (its LLC misses) with `corunners` others on the LLC, on a warm cache: what its
/// work evicts from the others' footprints (`cpu/cache.rs`).
pub fn insert_rates(profile: &PerfProfile, params: &PerfParams, mhz: f64, corunners: f64) -> (f64, f64) {
    const RUN_NS: u64 = 1_000_000;
    let f = VcpuFacts { run_ns: RUN_NS, llc_corunners: corunners, ..Default::default() };
    let e = execute(profile, params, mhz, &f, 0.0);
    let layers = [&profile.user, &profile.kernel, &profile.hyp];
    let refs: f64 = e.layers.iter().zip(layers).map(|(c, p)| c.instructions * p.llc_refs_per_kinstr / 1000.0).sum();
    let misses = e.total(|l| l.llc_misses);
    (refs / RUN_NS as f64, misses / RUN_NS as f64)
}

/// One vCPU's interval: the model above, with `debt_cycles` of refill still owed from before.
pub fn execute(profile: &PerfProfile, params: &PerfParams, mhz: f64, f: &VcpuFacts, debt_cycles: f64) -> Executed {
    let cycles = f.run_ns as f64 * mhz / 1000.0;
    let ws = profile.working_set_bytes.max(1) as f64;
    let share = params.llc_bytes as f64 / (1.0 + f.llc_corunners.max(0.0));
    let capacity_miss = (1.0 - share / ws).max(0.0);
    let miss_stall = params.llc_miss_stall_cycles * (memory_latency(params, f) + f.mem_wait.max(0.0));
    let nested = profile.virtualized;
    let costs = [
        layer_cost(&profile.user, nested, capacity_miss, miss_stall),
        layer_cost(&profile.kernel, nested, capacity_miss, miss_stall),
        layer_cost(&profile.hyp, false, capacity_miss, miss_stall),
    ];
    let hyp_runs = if nested { 1.0 } else { 0.0 };
    let weight = |i: usize| if i == 2 { hyp_runs } else { 1.0 };
    let per_unit: f64 = costs.iter().enumerate().map(|(i, c)| weight(i) * c.p.instructions_per_unit * c.cpi).sum();

    let sibling = if f.run_ns > 0 { (f.ht_busy_ns / f.run_ns as f64).clamp(0.0, 1.0) } else { 0.0 };
    let ht_stall = cycles * sibling * (1.0 - (1.0 + params.ht_core_gain) / 2.0);
    let lock_wait = (f.lock_wait_ns * mhz / 1000.0).clamp(0.0, cycles - ht_stall);
    let (new_refill, refill_misses) = refill(params, profile.working_set_bytes, mhz, f);
    let owed = debt_cycles + new_refill;
    let paid = owed.min(cycles - ht_stall - lock_wait);
    let productive = cycles - ht_stall - lock_wait - paid;
    let units = if per_unit > 0.0 { productive / per_unit } else { 0.0 };

    let mut out = Executed {
        work_units: units,
        refill_cycles: paid,
        ht_stall_cycles: ht_stall,
        lock_wait_cycles: lock_wait,
        debt_cycles: owed - paid,
        refill_misses,
        ..Default::default()
    };
    for (i, c) in costs.iter().enumerate() {
        let instr = units * weight(i) * c.p.instructions_per_unit;
        let part = if per_unit > 0.0 { weight(i) * c.p.instructions_per_unit * c.cpi / per_unit } else if i == 0 { 1.0 } else { 0.0 };
        let walks = instr * c.p.walks_per_kinstr / 1000.0;
        out.layers[i] = LayerCounts {
            instructions: instr,
            cycles: cycles * part,
            llc_misses: instr * c.p.llc_refs_per_kinstr / 1000.0 * c.miss_ratio + refill_misses * part,
            tlb_misses: walks,
            walk_cycles: walks * c.walk_cycles,
            ept_walk_cycles: walks * c.ept_cycles,
        };
    }
    out
}

/// How `e`'s LLC misses would change with a queueing wait at memory (`membw.rs`), from the
/// interval executed without one.
pub fn miss_curve(params: &PerfParams, e: &Executed) -> MissCurve {
    let productive = e.total(|l| l.cycles) - e.ht_stall_cycles - e.lock_wait_cycles - e.refill_cycles;
    let mut c = MissCurve { refill_misses: e.refill_misses, ..Default::default() };
    if e.work_units > 0.0 {
        c.productive_cycles = productive;
        c.cycles_per_unit = productive / e.work_units;
        c.misses_per_unit = ((e.total(|l| l.llc_misses) - e.refill_misses) / e.work_units).max(0.0);
        c.stall_per_unit = c.misses_per_unit * params.llc_miss_stall_cycles;
    }
    c
}

/// The units of work `f.run_ns` would have done alone (no co-runners, no moves, local memory, no
/// lock) over those done under the interval's facts, `debt_cycles` of refill owed from before:
/// the slowdown of the cache, NUMA, memory-bandwidth and lock penalties. A busy hyperthread sibling is left out:
/// the scheduler already runs such a vCPU's work slower (`hw::thread_speed`). `None` when the
/// vCPU did no work in the interval (it did not run, or refilled all along).
pub fn slowdown(profile: &PerfProfile, params: &PerfParams, mhz: f64, f: &VcpuFacts, debt_cycles: f64) -> Option<f64> {
    let alone = execute(profile, params, mhz, &VcpuFacts { run_ns: f.run_ns, ..Default::default() }, 0.0).work_units;
    let here = execute(profile, params, mhz, &VcpuFacts { ht_busy_ns: 0.0, ..*f }, debt_cycles).work_units;
    (here > 0.0 && alone > 0.0).then(|| alone / here)
}

/// Reads the scheduler's per-vCPU facts at each sample and writes the `vcpu_perf` table.
#[derive(Debug, Clone)]
pub struct PerfModel {
    params: PerfParams,
    /// per VM, its profile (VMs without one get no rows)
    profiles: Vec<Option<PerfProfile>>,
    mhz: f64,
    /// per pCPU: its LLC, its NUMA node and its hyperthread sibling (or itself)
    llc_of: Vec<u32>,
    node_of: Vec<u32>,
    /// per pCPU: its core, numbered densely from 0 (the L2 `cpu/cache.rs` counts for)
    core_of: Vec<u32>,
    nodes: usize,
    sibling: Vec<u32>,
    /// per LLC: its pCPUs
    llc_pcpus: Vec<Vec<u32>>,
    prev_run: Vec<u64>,
    /// per vCPU: its run ns beside a busy hyperthread sibling at the previous sample
    prev_ht: Vec<u64>,
    /// per vCPU: its cumulative moves (all, across LLCs, across nodes) at the previous sample
    prev_moves: Vec<[u64; 3]>,
    /// per vCPU: its cumulative L2 and LLC lines refilled on returns at the previous sample
    prev_resume: Vec<[f64; 2]>,
    prev_busy: Vec<u64>,
    /// per pCPU: slices started on it at the previous sample
    prev_disp: Vec<u64>,
    debt: Vec<f64>,
    /// per vCPU: how many times longer its work took over the last interval it ran than alone
    /// on a warm cache with local memory (1 until then, and for VMs without a profile)
    slowdown: Vec<f64>,
    /// per vCPU: its slowdown is read back (a barrier program's), so each sample works it out
    slowdown_read: Vec<bool>,
    last: Time,
    /// scratch: per pCPU, busy ns over the interval
    busy: Vec<u64>,
    /// scratch: per pCPU, slices started over the interval
    disp: Vec<u64>,
    /// scratch: the nodes the current VM's memory is interleaved over (its clients' distinct home
    /// nodes; empty for a VM without a home: every node)
    mem_nodes: Vec<u32>,
    /// scratch: the sample's profiled, powered-on vCPUs (vCPU, VM, index in the VM, facts)
    rows: Vec<(usize, u32, u32, VcpuFacts)>,
    /// scratch: their memory demand (`membw.rs`), in `rows` order, and the solve's outputs
    demands: Vec<Demand>,
    waits: Vec<f64>,
    node_rho: Vec<f64>,
    /// the per-vCPU counters, one row per vCPU of a profiled VM per sample
    pub table: Table,
}

const RUN: usize = crate::cpu::VcpuState::Run as usize;
const COUNTS: [&str; 6] = ["instructions", "cycles", "llc_misses", "tlb_misses", "walk_cycles", "ept_walk_cycles"];
const SPLIT: [[&str; 3]; 6] = [
    ["instructions_user", "instructions_kernel", "instructions_hyp"],
    ["cycles_user", "cycles_kernel", "cycles_hyp"],
    ["llc_misses_user", "llc_misses_kernel", "llc_misses_hyp"],
    ["tlb_misses_user", "tlb_misses_kernel", "tlb_misses_hyp"],
    ["walk_cycles_user", "walk_cycles_kernel", "walk_cycles_hyp"],
    ["ept_walk_cycles_user", "ept_walk_cycles_kernel", "ept_walk_cycles_hyp"],
];

fn count(c: &LayerCounts, k: usize) -> f64 {
    [c.instructions, c.cycles, c.llc_misses, c.tlb_misses, c.walk_cycles, c.ept_walk_cycles][k]
}

/// One row of `vcpu_perf` (also its schema).
fn perf_row(c: &mut impl Cells, t: f64, vm: u32, idx: u32, f: &VcpuFacts, e: &Executed) {
    c.f64("time_s", t);
    c.u32("vm_id", vm);
    c.u32("vcpu", idx);
    c.u64("run_ns", f.run_ns);
    c.f64("work_units", e.work_units);
    for (k, name) in COUNTS.iter().enumerate() {
        c.f64(name, e.total(|l| count(l, k)));
    }
    for (k, names) in SPLIT.iter().enumerate() {
        for (i, name) in names.iter().enumerate() {
            c.f64(name, count(&e.layers[i], k));
        }
    }
    c.f64("refill_cycles", e.refill_cycles);
    c.f64("ht_stall_cycles", e.ht_stall_cycles);
    c.f64("lock_wait_cycles", e.lock_wait_cycles);
    c.f64("moves", f.moves_core + f.moves_llc + f.moves_node);
    c.f64("llc_corunners", f.llc_corunners);
    c.f64("sibling_busy", if f.run_ns > 0 { f.ht_busy_ns / f.run_ns as f64 } else { 0.0 });
    c.f64("remote_fraction", f.remote_fraction);
    c.f64("mem_wait", f.mem_wait);
}

impl PerfModel {
    /// A model for these VMs' profiles (index = VM) on `topo`, with `vcpus` vCPUs in all, for a
    /// scheduler with `sched_pcpus` pCPUs: every logical processor, or (while the scheduler runs
    /// one vCPU per core) the first thread of each core, in topology order.
    pub fn new(params: PerfParams, profiles: Vec<Option<PerfProfile>>, topo: &Topology, vcpus: usize, sched_pcpus: usize) -> Self {
        let seen: Vec<_> = if sched_pcpus == topo.len() {
            topo.pcpus.clone()
        } else {
            topo.pcpus.iter().filter(|p| p.thread == 0).copied().collect()
        };
        assert_eq!(seen.len(), sched_pcpus, "the scheduler's pCPUs are the topology's threads or its cores");
        let n = seen.len();
        let llcs = seen.iter().map(|p| p.llc + 1).max().unwrap_or(0) as usize;
        let mut llc_pcpus = vec![Vec::new(); llcs];
        for (i, p) in seen.iter().enumerate() {
            llc_pcpus[p.llc as usize].push(i as u32);
        }
        let sibling = (0..n)
            .map(|i| (0..n).find(|&j| j != i && seen[j].core == seen[i].core).unwrap_or(i) as u32)
            .collect();
        let mut schema = Vec::new();
        perf_row(&mut schema, 0.0, 0, 0, &VcpuFacts::default(), &Executed::default());
        let mut core_of = vec![0u32; n];
        for i in 0..n {
            core_of[i] = (0..i).find(|&j| seen[j].core == seen[i].core).map_or_else(|| core_of[..i].iter().map(|&c| c + 1).max().unwrap_or(0), |j| core_of[j]);
        }
        PerfModel {
            core_of,
            params,
            profiles,
            mhz: topo.core_mhz as f64,
            llc_of: seen.iter().map(|p| p.llc).collect(),
            node_of: seen.iter().map(|p| p.node).collect(),
            nodes: topo.pcpus.iter().map(|p| p.node + 1).max().unwrap_or(1) as usize,
            sibling,
            llc_pcpus,
            prev_run: vec![0; vcpus],
            prev_ht: vec![0; vcpus],
            prev_moves: vec![[0; 3]; vcpus],
            prev_resume: vec![[0.0; 2]; vcpus],
            prev_busy: vec![0; n],
            prev_disp: vec![0; n],
            debt: vec![0.0; vcpus],
            slowdown: vec![1.0; vcpus],
            slowdown_read: vec![false; vcpus],
            last: 0,
            busy: vec![0; n],
            disp: vec![0; n],
            mem_nodes: Vec::new(),
            rows: Vec::new(),
            demands: Vec::new(),
            waits: Vec::new(),
            node_rho: Vec::new(),
            table: Table::with_schema(&schema),
        }
    }

    /// The facts of vCPU `v` over the interval ending `now` (`busy` holds every pCPU's busy ns
    /// over it). The one place the model reads the scheduler.
    fn read_facts(&self, sched: &CpuSched, v: usize, now: Time) -> VcpuFacts {
        let vc = &sched.vcpus[v];
        let run_ns = vc.time_ns[RUN] - self.prev_run[v];
        let span = (now - self.last).max(1) as f64;
        let p = vc.pcpu as usize;
        // the scheduler counts every move, of those the ones to another LLC, of those the ones to
        // another node
        let [all, llc, node] = [vc.migrations, vc.llc_migrations, vc.node_migrations];
        let [p_all, p_llc, p_node] = self.prev_moves[v];
        let mut facts = VcpuFacts {
            run_ns,
            moves_core: (all - p_all - (llc - p_llc)) as f64,
            moves_llc: (llc - p_llc - (node - p_node)) as f64,
            moves_node: (node - p_node) as f64,
            ..Default::default()
        };
        if let Some(w) = sched.warmth() {
            facts.resume_l2_lines = w.evicted_l2_lines[v] - self.prev_resume[v][0];
            facts.resume_llc_lines = w.evicted_llc_lines[v] - self.prev_resume[v][1];
        }
        // a vCPU not yet placed on a pCPU is judged on its own home node
        let node = if p < self.node_of.len() { self.node_of[p] } else { vc.home };
        facts.remote_fraction = remote_fraction(node, &self.mem_nodes, self.nodes);
        if p < self.llc_of.len() {
            let llc = self.llc_of[p] as usize;
            let llc_busy: u64 = self.llc_pcpus[llc].iter().map(|&q| self.busy[q as usize]).sum();
            // with returns charged (`resume_refill`), the vCPUs that took turns with it on its own
            // pCPU are not co-runners: they never ran beside it, and what they evicted is charged
            // on its returns (`cpu/cache.rs`); counting them too would charge time-sharing twice.
            // Without it, every other busy ns of the LLC counts, as before
            let own = if self.params.resume_refill { self.busy[p].max(run_ns) } else { run_ns };
            facts.llc_corunners = (llc_busy.saturating_sub(own)) as f64 / span;
            let s = self.sibling[p] as usize;
            if sched.hyperthreading() {
                // the scheduler keeps each vCPU's run time beside a busy sibling exactly
                facts.ht_busy_ns = (sched.ht_ns(v as u32) - self.prev_ht[v]) as f64;
            } else if s != p {
                facts.ht_busy_ns = run_ns as f64 * (self.busy[s] as f64 / span).min(1.0);
            }
            facts.lock_wait_ns = self.lock_wait(sched, p, run_ns, span);
        }
        facts
    }

    /// ns vCPU's scheduler invocations on pCPU `p` waited for its lock over the interval (`span`
    /// ns, `run_ns` of it run): the interval's slice starts on `p`, the vCPU's part of them in
    /// proportion to its run time there, each waiting `lock_wait_ns` behind the other pCPUs of
    /// the lock domain (`cpu/cells.rs`). 0 with a one-pCPU domain (no cells).
    fn lock_wait(&self, sched: &CpuSched, p: usize, run_ns: u64, span: f64) -> f64 {
        let domain = sched.lock_domain(p as u32);
        if domain.len() < 2 || self.params.sched_lock_hold_ns <= 0.0 || self.busy[p] == 0 {
            return 0.0;
        }
        let others: u64 = domain.clone().filter(|&q| q != p).map(|q| self.disp[q]).sum();
        let wait = crate::cpu::lock_wait_ns(others as f64 * NS_PER_S as f64 / span, self.params.sched_lock_hold_ns, domain.len() - 1);
        let mine = self.disp[p] as f64 * (run_ns as f64 / self.busy[p] as f64).min(1.0);
        mine * wait
    }

    /// Append one row per vCPU of every powered-on profiled VM for the interval ending `now`.
    /// `sched` must be accounted up to `now`; `powered_on(vm)` says whether a VM runs.
    #[inline(never)]
    pub fn sample(&mut self, now: Time, sched: &CpuSched, powered_on: impl Fn(u32) -> bool) {
        for (q, b) in self.busy.iter_mut().enumerate() {
            let total = sched.pcpu_busy_ns(q as u32, now);
            *b = total - self.prev_busy[q];
            self.prev_busy[q] = total;
        }
        for (q, d) in self.disp.iter_mut().enumerate() {
            let total = sched.pcpu_dispatches(q as u32);
            *d = total - self.prev_disp[q];
            self.prev_disp[q] = total;
        }
        let t = now as f64 / NS_PER_S as f64;
        let contention = self.params.mem_bandwidth && self.params.mem_node_bytes_per_ns > 0.0;
        let mut idx = 0u32;
        let mut prev_vm = u32::MAX;
        self.rows.clear();
        for v in 0..sched.vcpus.len() {
            let vm = sched.vcpus[v].vm;
            idx = if vm == prev_vm { idx + 1 } else { 0 };
            if vm != prev_vm {
                memory_nodes(sched, v, &mut self.mem_nodes);
            }
            prev_vm = vm;
            let facts = self.read_facts(sched, v, now);
            let vc = &sched.vcpus[v];
            self.prev_run[v] = vc.time_ns[RUN];
            self.prev_ht[v] = sched.ht_ns(v as u32);
            self.prev_moves[v] = [vc.migrations, vc.llc_migrations, vc.node_migrations];
            if let Some(w) = sched.warmth() {
                self.prev_resume[v] = [w.evicted_l2_lines[v], w.evicted_llc_lines[v]];
            }
            let Some(profile) = self.profiles.get(vm as usize).and_then(|p| p.as_ref()) else { continue };
            if !powered_on(vm) {
                continue;
            }
            if contention {
                let k = self.rows.len();
                if self.demands.len() == k {
                    self.demands.push(Demand::default());
                }
                let e = execute(profile, &self.params, self.mhz, &facts, self.debt[v]);
                let d = &mut self.demands[k];
                d.curve = miss_curve(&self.params, &e);
                d.nodes.clone_from(&self.mem_nodes);
            }
            self.rows.push((v, vm, idx, facts));
        }
        if contention && !self.rows.is_empty() {
            self.solve_bandwidth(now);
        }
        for &(v, vm, idx, facts) in &self.rows {
            let profile = self.profiles[vm as usize].as_ref().expect("rows are profiled VMs");
            let e = execute(profile, &self.params, self.mhz, &facts, self.debt[v]);
            if self.slowdown_read[v] {
                self.slowdown[v] = slowdown(profile, &self.params, self.mhz, &facts, self.debt[v]).unwrap_or(self.slowdown[v]);
            }
            self.debt[v] = e.debt_cycles;
            perf_row(&mut self.table.row(), t, vm, idx, &facts, &e);
        }
        self.last = now;
    }

    /// Share the nodes' memory bandwidth among the sample's rows (`membw.rs`): each row's
    /// `mem_wait` at the fixed point of the nodes' queues.
    fn solve_bandwidth(&mut self, now: Time) {
        let c = Controllers {
            nodes: self.nodes,
            bytes_per_ns: self.params.mem_node_bytes_per_ns,
            line_bytes: self.params.line_bytes as f64,
            latency_ns: self.params.mem_latency_ns,
            span_ns: (now - self.last).max(1) as f64,
        };
        membw::solve(&c, &self.demands[..self.rows.len()], &mut self.waits, &mut self.node_rho);
        for (row, &w) in self.rows.iter_mut().zip(&self.waits) {
            row.3.mem_wait = w;
        }
    }

    /// The scheduler's cache-warmth counting for this model (`cpu/cache.rs`), for vCPUs of the
    /// VMs `vm_of` gives, or `None` when `resume_refill` is off. Each profiled VM's insertion
    /// rates are its profile's on a warm cache, by the number of LLC co-runners.
    pub fn warmth(&self, vm_of: Vec<u32>) -> Option<CacheWarmth> {
        if !self.params.resume_refill {
            return None;
        }
        let per_llc = self.llc_pcpus.iter().map(Vec::len).max().unwrap_or(1);
        let profiles = self
            .profiles
            .iter()
            .map(|p| {
                p.as_ref().map(|p| WarmthProfile {
                    ws_bytes: p.working_set_bytes,
                    l2_lines_per_ns: insert_rates(p, &self.params, self.mhz, 0.0).0,
                    llc_lines_per_ns: (0..per_llc).map(|k| insert_rates(p, &self.params, self.mhz, k as f64).1).collect(),
                })
            })
            .collect();
        let caches = (self.params.l2_bytes, self.params.llc_bytes, self.params.line_bytes);
        Some(CacheWarmth::new(self.core_of.clone(), self.llc_of.clone(), caches, profiles, vm_of))
    }

    /// Work out vCPU `v`'s [`Self::slowdown`] at every sample (it is read back).
    pub fn track_slowdown(&mut self, v: usize) {
        self.slowdown_read[v] = true;
    }

    /// How many times longer vCPU `v`'s work took over the last sample interval in which it ran
    /// than it would alone on a warm cache with local memory: what a barrier program's phases
    /// are stretched by (`guest/barrier.rs`). 1 before that, and for a VM without a profile.
    pub fn slowdown(&self, v: usize) -> f64 {
        self.slowdown[v]
    }

    /// The table's schema as (name, sample value) pairs.
    pub fn schema() -> Vec<(&'static str, Value)> {
        let mut schema = Vec::new();
        perf_row(&mut schema, 0.0, 0, 0, &VcpuFacts::default(), &Executed::default());
        schema
    }
}
