//! Scheduler cells (ESX 3.x) and the LLC preferences of vSMP consolidation and inter-VM cache
//! affinity (ESX 4).
//!
//! **Cells.** ESX 3.x partitioned the pCPUs into *cells*, each "a group of physical processors
//! that serves as a local scheduling domain" behind one cell lock [WP §2.3]. A VM's vCPUs are
//! "scheduled only within a cell at any moment", so a cell must be at least as wide as the
//! widest VM ("can be a limiting factor when placing virtual machines", [WP §3.2]), and
//! "intercell migration ... only happens in much coarser granularity" [WP §2.4]. With
//! `cell_size` set (in cores; research/cpu.md C17's default is a socket, 4 cores on the paper's
//! hosts), the engine:
//!
//! - cuts the host into cells of `cell_size` adjacent cores, each a whole number of LLCs ("a cell
//!   usually matches with one or, at most, two LLCs", [WP §3.3]); a host whose cores do not
//!   split so is refused, naming `cpu_scheduler.cell_size`, and so is a VM wider than a cell (in
//!   cores: with hyperthreading a cell holds both threads of each of its cores),
//!   naming `vms[i].vcpus` (exit status 2 from the CLI);
//! - gives each VM a cell at power-on, the one whose pCPUs carry the fewest vCPUs (lowest
//!   numbered on ties), and its NUMA home is that cell's node when the cell lies in one node;
//! - keeps every vCPU inside its VM's cell: a waking vCPU takes an idle pCPU of the cell (its
//!   last pCPU, then its LLC, then the lowest-numbered) or queues in the cell; a pCPU pulls only
//!   from its own cell's queues (load balancing within a cell, at the usual move costs); a gang
//!   co-start, a borrowed pCPU and an extended-fairness swap stay in the cell too;
//! - moves a whole VM between cells only in the cell balancer, every
//!   `cell_rebalance_period_ns` (2 s, C17): when the most loaded cell's demand per pCPU exceeds
//!   the least loaded one's by more than `cell_rebalance_imbalance`, the VM whose move narrows
//!   the gap most (and only if it does) moves there at once: its running vCPUs stop and every
//!   vCPU is re-placed in the new cell, each counted as a migration ([`choose_move`]).
//!
//! Off (`cell_size: 0`, the default) is ESX 4's per-pCPU scheduling: any vCPU on any pCPU.
//!
//! **The cell lock.** "Each cell is protected by a separate cell lock. Scheduler invocations from
//! the processors in the same cell would mostly contend for the cell lock" [WP §2.3]; ESX 4 put a
//! per-pCPU lock in its place ("the lock contention is significantly reduced", [WP §3.2]). The
//! schedule is unchanged by it; its cost is scheduler time taken from the vCPUs' run time, in the
//! execution-speed model (`perf/model.rs`). Each slice start on a pCPU follows one scheduler
//! invocation holding its lock for `sched_lock_hold_ns` (`PerfParams`). A lock domain is a cell
//! (with cells) or one pCPU (without). An invocation on pCPU `p` waits for those of the other
//! `N - 1` pCPUs of its domain, arriving at `lambda` per second (Poisson, so M/D/1 [Kleinrock
//! 1975, Pollaczek-Khinchine]): `W = rho h / (2 (1 - rho))`, `rho = lambda h`, at most
//! `(N - 1) h` (every other pCPU ahead of it, [`lock_wait_ns`]). `p`'s own invocations never
//! overlap, so a one-pCPU domain waits 0: ESX 4's per-pCPU lock costs nothing here, and the
//! cost of cells grows with the cell's size (more pCPUs feed one lock) and with the rate of
//! scheduler invocations (co-stops, preemptions, wake-ups).
//!
//! **vSMP consolidation** (`sched.cpu.vsmpConsolidate`, per VM, research/cpu.md A6.5, C24) and
//! **inter-VM cache affinity** (A6.6, C25): a waking vCPU of such a VM first tries an idle pCPU in
//! its *target LLC*, the LLC holding most of its siblings (consolidation) and of the vCPUs of
//! the VMs it communicates with (affinity), counting running vCPUs, or their last pCPUs when
//! none runs ([`target_llc`]). Best effort: with no idle pCPU there it is placed as any vCPU is
//! ("such preference might not always be honored, depending on the availability of pCPUs").
//!
//! # Tunables
//! `cell_size` (cores, 0 = off), `cell_rebalance_period_ns` (2 s), `cell_rebalance_imbalance`
//! (0.1 of a pCPU per pCPU), `vsmp_consolidate` (VM names; none), `inter_vm_cache_affinity`
//! (on) with `communicating_vms` (pairs of VM names; none), in [`super::CpuSchedParams`].
//!
//! # Counters
//! the `vcpu_perf` table's `lock_wait_cycles` (the cell lock's wait), `SchedStats::cell_moves` (VMs the cell balancer moved), `SchedStats::affinity_placements`
//! (wake-ups placed in their target LLC); the moves also count as migrations.
//!
//! # Known gaps
//! - The cell lock's cost is charged in the execution-speed model only (to VMs with a profile),
//!   not as pCPU time in the schedule, and only slice starts count as invocations: a halt that
//!   leaves its pCPU idle and a wake-up placed from another pCPU take the lock too. ESX 4's
//!   per-VM lock (co-scheduling operations of one VM's vCPUs) is not modelled. The paper gives no
//!   hold time; the default is the direct cost of a whole context switch (`PerfParams`).
//! - A VM with a vCPU co-stopped, or with run-queue entries a co-stop left behind, is not moved
//!   by the cell balancer at that period.
//! - Inter-VM communication is declared (`communicating_vms`), not detected: the paper does not
//!   say how ESX detects it (C25).
//! - Consolidation and affinity steer wake-up placement only: an idle pCPU elsewhere may still
//!   pull such a vCPU away.

use crate::sim::Time;

/// The cells of a host: pCPUs of cell `c` are `range[c]..range[c + 1]`, or `None` when
/// `cell_pcpus` does not cut the host into whole LLCs (`llc_range` as the scheduler keeps it).
pub fn cell_ranges(llc_range: &[usize], cell_pcpus: usize) -> Option<Vec<usize>> {
    let n = *llc_range.last()?;
    if cell_pcpus == 0 || n % cell_pcpus != 0 {
        return None;
    }
    let range: Vec<usize> = (0..=n / cell_pcpus).map(|c| c * cell_pcpus).collect();
    // every cell boundary must be an LLC boundary
    range.iter().all(|b| llc_range.contains(b)).then_some(range)
}

/// The cell for a VM being powered on: the one whose pCPUs carry the fewest vCPUs (`load`,
/// per cell), lowest-numbered on ties (cells are of equal size).
pub fn least_loaded(load: &[usize]) -> u32 {
    (0..load.len()).min_by_key(|&c| (load[c], c)).expect("a cell") as u32
}

/// One VM as the cell balancer sees it.
#[derive(Debug, Clone, Copy)]
pub struct CellVm {
    /// its cell
    pub cell: u32,
    /// its demand estimate, pCPUs
    pub demand: f64,
    /// it may be moved now (powered on, not co-stopped)
    pub movable: bool,
}

/// The cell balancer's choice: compare the cells' demand per pCPU (`cell_pcpus` each); when the
/// most loaded exceeds the least loaded by more than `imbalance`, the VM of the most loaded cell
/// whose move to the least loaded narrows the gap most, if one narrows it at all, as (VM, cell).
pub fn choose_move(vms: &[CellVm], cells: usize, cell_pcpus: f64, imbalance: f64) -> Option<(u32, u32)> {
    if cells < 2 {
        return None;
    }
    let mut load = vec![0.0; cells];
    for v in vms {
        load[v.cell as usize] += v.demand / cell_pcpus;
    }
    let hi = (0..cells).max_by(|&a, &b| load[a].total_cmp(&load[b]).then(b.cmp(&a)))?;
    let lo = (0..cells).min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))?;
    let gap = load[hi] - load[lo];
    if gap <= imbalance {
        return None;
    }
    let mut best: Option<(f64, u32)> = None;
    for (i, v) in vms.iter().enumerate() {
        if v.cell as usize != hi || !v.movable || v.demand <= 0.0 {
            continue;
        }
        let d = v.demand / cell_pcpus;
        let after = ((load[hi] - d) - (load[lo] + d)).abs();
        if after < gap - 1e-12 && best.is_none_or(|(b, _)| after < b) {
            best = Some((after, i as u32));
        }
    }
    best.map(|(_, vm)| (vm, lo as u32))
}

/// Mean wait, in ns, of one scheduler invocation for its lock (the cell lock): the other
/// `others` pCPUs of its lock domain invoke the scheduler `others_per_s` times a second between
/// them, each holding the lock `hold_ns`. Poisson arrivals and a fixed hold give M/D/1's
/// `rho h / (2 (1 - rho))` with `rho = others_per_s x hold`; a spinning pCPU can find at most the
/// `others` ahead of it, so the wait is at most `others x hold_ns` (also when `rho >= 1`). 0 for a
/// one-pCPU domain (ESX 4's per-pCPU lock) or a zero hold.
pub fn lock_wait_ns(others_per_s: f64, hold_ns: f64, others: usize) -> f64 {
    if others == 0 || !(hold_ns > 0.0) || !(others_per_s > 0.0) {
        return 0.0;
    }
    let bound = others as f64 * hold_ns;
    let rho = others_per_s * hold_ns * 1e-9;
    if rho >= 1.0 {
        return bound;
    }
    (rho * hold_ns / (2.0 * (1.0 - rho))).min(bound)
}

/// The LLC a vCPU of a consolidated or cache-affine VM should be placed in: the LLC holding most
/// of `peers` (the LLCs of its siblings' and partner VMs' running vCPUs, or of their last pCPUs
/// when none runs), lowest-numbered on ties; `None` without peers.
pub fn target_llc(peers: &[u32], llcs: usize) -> Option<u32> {
    if peers.is_empty() {
        return None;
    }
    let mut count = vec![0u32; llcs];
    for &l in peers {
        count[l as usize] += 1;
    }
    (0..llcs).max_by(|&a, &b| count[a].cmp(&count[b]).then(b.cmp(&a))).map(|l| l as u32)
}

/// Scheduler-side state of cells and LLC preferences (empty when neither is in use).
#[derive(Debug, Clone, Default)]
pub struct Cells {
    /// cells are in force
    pub on: bool,
    /// pCPUs of cell `c` are `range[c]..range[c + 1]`
    pub range: Vec<usize>,
    /// cell of each pCPU
    pub of: Vec<u32>,
    /// per cell, the run-queue tree node holding exactly its queues (0: scan them)
    pub sub: Vec<usize>,
    /// per VM, its cell
    pub vm_cell: Vec<u32>,
    /// per cell, vCPUs of powered-on VMs in it
    pub load: Vec<usize>,
    /// when the cell balancer last ran
    pub last_balance: Time,
    /// some VM has an LLC preference (consolidation or affinity): placement asks `target_llc`
    pub prefer: bool,
    /// per VM, `sched.cpu.vsmpConsolidate`
    pub consolidate: Vec<bool>,
    /// per VM, the VMs it communicates with (inter-VM cache affinity)
    pub partners: Vec<Vec<u32>>,
}

impl Cells {
    /// Cells or LLC preferences change placement.
    #[inline]
    pub fn hooked(&self) -> bool {
        self.on || self.prefer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_whole_llcs_that_split_the_host() {
        // 2 sockets x 2 LLCs x 2 cores
        let llcs = [0, 2, 4, 6, 8];
        assert_eq!(cell_ranges(&llcs, 4), Some(vec![0, 4, 8]));
        assert_eq!(cell_ranges(&llcs, 8), Some(vec![0, 8]));
        assert_eq!(cell_ranges(&llcs, 2), Some(vec![0, 2, 4, 6, 8]));
        assert_eq!(cell_ranges(&llcs, 3), None, "3 does not divide 8");
        assert_eq!(cell_ranges(&[0, 4, 8], 2), None, "half an LLC");
        assert_eq!(cell_ranges(&llcs, 0), None);
    }

    #[test]
    fn the_balancer_moves_the_vm_that_evens_the_cells_most() {
        let vm = |cell, demand| CellVm { cell, demand, movable: true };
        // cell 0 carries 3 + 1 pCPUs of demand, cell 1 one (per pCPU: 1.0 vs 0.25): moving the
        // 1-pCPU VM gives 0.75 vs 0.5, the 3-pCPU one 0.25 vs 1.0 (a gap as wide as before)
        let vms = [vm(0, 3.0), vm(0, 1.0), vm(1, 1.0)];
        assert_eq!(choose_move(&vms, 2, 4.0, 0.1), Some((1, 1)));
        // balanced within the imbalance: no move
        assert_eq!(choose_move(&[vm(0, 2.0), vm(1, 1.7)], 2, 4.0, 0.1), None);
        // a VM that may not move is passed over
        let vms = [vm(0, 3.0), CellVm { movable: false, ..vm(0, 1.0) }, vm(1, 1.0)];
        assert_eq!(choose_move(&vms, 2, 4.0, 0.1), None);
        // one busy VM alone in its cell: moving it only swaps the imbalance, no move
        assert_eq!(choose_move(&[vm(0, 4.0)], 2, 4.0, 0.1), None);
    }

    #[test]
    fn the_lock_wait_is_md1_up_to_every_other_pcpu_ahead() {
        // one pCPU per lock (ESX 4) or no hold: no wait
        assert_eq!(lock_wait_ns(1e6, 3800.0, 0), 0.0);
        assert_eq!(lock_wait_ns(1e3, 0.0, 3), 0.0);
        // rho = 1e5/s x 2 us = 0.2: W = 0.2 x 2000 / (2 x 0.8) = 250 ns (M/D/1, by hand)
        assert!((lock_wait_ns(1e5, 2000.0, 3) - 250.0).abs() < 1e-9);
        // rho = 0.8: 0.8 x 2000 / 0.4 = 4000 ns, under the 3 x 2000 bound
        assert!((lock_wait_ns(4e5, 2000.0, 3) - 4000.0).abs() < 1e-9);
        // rho = 0.9 would give 9000 ns: capped at the 3 others ahead, 6000 ns; saturated likewise
        assert_eq!(lock_wait_ns(4.5e5, 2000.0, 3), 6000.0);
        assert_eq!(lock_wait_ns(1e7, 2000.0, 3), 6000.0);
        // the wait grows with the rate and with the domain's size at a rate per pCPU
        let per_pcpu = 2e4;
        let w4 = lock_wait_ns(3.0 * per_pcpu, 3800.0, 3);
        let w8 = lock_wait_ns(7.0 * per_pcpu, 3800.0, 7);
        assert!(w8 > 2.0 * w4, "{w4} {w8}");
    }

    #[test]
    fn the_target_llc_holds_most_peers() {
        assert_eq!(target_llc(&[], 4), None);
        assert_eq!(target_llc(&[2, 1, 2], 4), Some(2));
        assert_eq!(target_llc(&[3, 1], 4), Some(1), "ties go to the lowest");
        assert_eq!(least_loaded(&[4, 2, 2]), 1);
    }
}
