//! The scheduler's side of `cpu/cells.rs`: cells at power-on, placement and pulls kept inside a
//! VM's cell, the cell balancer's whole-VM moves, and the target LLC of vSMP consolidation and
//! inter-VM cache affinity. The mechanism, its tunables and its sources are described in
//! `cpu/cells.rs`.
//!
//! # Tunables
//! `cell_size`, `cell_rebalance_period_ns`, `cell_rebalance_imbalance`, `vsmp_consolidate`,
//! `inter_vm_cache_affinity`, `communicating_vms` (`CpuSchedParams`).
//!
//! # Counters
//! `SchedStats::cell_moves`, `SchedStats::affinity_placements`.
//!
//! # Known gaps
//! See `cpu/cells.rs`. A VM is moved between cells only at a period when none of its vCPUs waits
//! in a run queue (READY): a queue cannot drop an entry from its middle, and an entry left in the
//! old cell would run the vCPU there.

use super::super::cells::{cell_ranges, choose_move, least_loaded, target_llc, CellVm, Cells};
use super::{CpuSched, VcpuState, NONE};
use crate::sim::{EventQueue, Time};

impl CpuSched {
    /// Set up scheduler cells and the LLC preferences of vSMP consolidation and inter-VM cache
    /// affinity from the tunables, before any VM is powered on; `names` are the VMs' names in
    /// order. Refuses, naming the field: a cell size that does not cut the host into whole LLCs,
    /// a VM wider than a cell (in cores), and an unknown VM name.
    pub fn apply_placement(&mut self, names: &[&str]) -> crate::VmtwinResult<()> {
        use crate::invalid;
        let index = |name: &str, path: String| -> crate::VmtwinResult<u32> {
            match names.iter().position(|n| *n == name) {
                Some(i) => Ok(i as u32),
                None => invalid!(path, name, "the name of a VM of the host"),
            }
        };
        let vms = names.len();
        let mut cells = Cells { consolidate: vec![false; vms], partners: vec![Vec::new(); vms], ..Cells::default() };
        for name in &self.params.vsmp_consolidate {
            let vm = index(name, format!("cpu_scheduler.vsmp_consolidate.{name}"))?;
            cells.consolidate[vm as usize] = self.gangs[vm as usize].n > 1;
        }
        if self.params.inter_vm_cache_affinity {
            for (a, b) in &self.params.communicating_vms {
                let x = index(a, format!("cpu_scheduler.communicating_vms.{a}"))?;
                let y = index(b, format!("cpu_scheduler.communicating_vms.{b}"))?;
                if x != y {
                    cells.partners[x as usize].push(y);
                    cells.partners[y as usize].push(x);
                }
            }
        }
        cells.prefer = cells.consolidate.iter().any(|&c| c) || cells.partners.iter().any(|p| !p.is_empty());
        let size = self.params.cell_size;
        if size > 0 {
            // a cell is `size` cores: both threads of each with hyperthreading
            let threads = if self.ht.on { 2 } else { 1 };
            let llc_cores = (self.llc_range[1] - self.llc_range[0]) / threads;
            let Some(range) = cell_ranges(&self.llc_range, size as usize * threads) else {
                invalid!(
                    "cpu_scheduler.cell_size",
                    size,
                    format!(
                        "0 (no cells) or a multiple of the host's {llc_cores} cores per LLC that divides its {} cores",
                        self.pcpus.len() / threads
                    )
                );
            };
            for (vm, g) in self.gangs.iter().enumerate() {
                if g.n > size {
                    invalid!(
                        format!("vms[{vm}].vcpus"),
                        g.n,
                        format!(
                            "at most cpu_scheduler.cell_size = {size} for VM '{}': a VM's vCPUs are scheduled within one cell",
                            names[vm]
                        )
                    );
                }
            }
            cells.on = true;
            cells.of = vec![0; self.pcpus.len()];
            for c in 0..range.len() - 1 {
                cells.of[range[c]..range[c + 1]].fill(c as u32);
            }
            cells.sub = range.windows(2).map(|w| self.queues.subtree(w[0], w[1])).collect();
            cells.load = vec![0; range.len() - 1];
            cells.vm_cell = vec![NONE; vms];
            cells.range = range;
            // pulls must weigh the cell, which only the local path does
            self.local_pull = true;
        }
        self.cells = cells;
        Ok(())
    }

    /// The cell of VM `vm` ([`NONE`] without cells or before power-on).
    pub fn cell_of_vm(&self, vm: u32) -> u32 {
        self.cells.vm_cell.get(vm as usize).copied().unwrap_or(NONE)
    }

    /// The cell of pCPU `p` ([`NONE`] without cells).
    pub fn cell_of_pcpu(&self, p: u32) -> u32 {
        self.cells.of.get(p as usize).copied().unwrap_or(NONE)
    }

    /// The pCPUs that share pCPU `p`'s scheduler lock: its cell with cells (the cell lock), else
    /// `p` alone (ESX 4's per-pCPU lock).
    pub fn lock_domain(&self, p: u32) -> std::ops::Range<usize> {
        if self.cells.on {
            self.cell_pcpus(self.cells.of[p as usize])
        } else {
            p as usize..p as usize + 1
        }
    }

    /// Slices started on pCPU `p` so far: each follows one scheduler invocation that took its lock.
    pub fn pcpu_dispatches(&self, p: u32) -> u64 {
        self.pcpus[p as usize].dispatches
    }

    /// May VM `vm`'s vCPUs run on pCPU `p`? (Always without cells.)
    #[inline]
    pub(super) fn cell_admits(&self, vm: u32, p: u32) -> bool {
        !self.cells.on || self.cells.of[p as usize] == self.cells.vm_cell[vm as usize]
    }

    /// Is pCPU `p` in vCPU `v`'s cell? (Cells on.)
    #[inline]
    pub(super) fn in_cell(&self, v: u32, p: u32) -> bool {
        self.cells.of[p as usize] == self.cells.vm_cell[self.vcpus[v as usize].vm as usize]
    }

    /// The pCPUs of cell `c`.
    fn cell_pcpus(&self, c: u32) -> std::ops::Range<usize> {
        self.cells.range[c as usize]..self.cells.range[c as usize + 1]
    }

    /// The NUMA node cell `c` lies in, if it lies in one and VMs have home nodes.
    fn cell_node(&self, c: u32) -> u32 {
        let r = self.cell_pcpus(c);
        let node = self.node_of[r.start];
        let one = self.node_of[r.clone()].iter().all(|&n| n == node);
        if self.params.numa_home_nodes && self.node_range.len() > 2 && one {
            node
        } else {
            NONE
        }
    }

    /// Power-on with cells: VM `vm` goes to the least loaded cell, its vCPUs' first pCPUs spread
    /// in it by VM number, its home the cell's node when the cell lies in one. Returns no NUMA
    /// clients (`power_on` places nothing else).
    pub(super) fn cell_power_on(&mut self, vm: u32) -> Vec<(u32, u32)> {
        let c = least_loaded(&self.cells.load);
        self.cells.vm_cell[vm as usize] = c;
        self.cells.load[c as usize] += self.gangs[vm as usize].n as usize;
        let r = self.cell_pcpus(c);
        let vcpus = self.vcpus_of(vm);
        for (i, vc) in self.vcpus[vcpus].iter_mut().enumerate() {
            vc.pcpu = (r.start + (vm as usize + i) % r.len()) as u32;
        }
        let node = self.cell_node(c);
        if node != NONE {
            self.set_home(vm, node);
        }
        Vec::new()
    }

    /// [`CpuSched::pick`] with cells: the best of `p`'s own head, its cell's best and its LLC's
    /// best, each charged its move (`move_score`); queues of other cells are not looked at.
    pub(super) fn pick_in_cell<const DECLINE: bool>(&self, p: u32, now: Time) -> Option<(u32, f64)> {
        let c = self.cells.of[p as usize] as usize;
        let (mut bq, mut best) = match self.queues.head_entry(p) {
            Some((_, k)) => (p, k),
            None => (NONE, f64::INFINITY),
        };
        let (lo, hi) = (self.cells.range[c], self.cells.range[c + 1]);
        let mut groups = vec![(self.cells.sub[c], lo, hi)];
        if self.params.llc_aware {
            let l = self.llc_of[p as usize] as usize;
            groups.push((self.llc_sub[l], self.llc_range[l], self.llc_range[l + 1]));
        }
        let t = self.topo[p as usize];
        for (sub, lo, hi) in groups {
            if let Some((q, k)) = self.queues.best_in(sub, lo, hi) {
                if q != p && k < best {
                    if let Some(s) = self.move_score::<DECLINE>(p, &t, q, k, now) {
                        if s < best {
                            (bq, best) = (q, s);
                        }
                    }
                }
            }
        }
        (bq != NONE).then_some((bq, best))
    }

    /// Placement of a waking vCPU when cells or LLC preferences are in force: an idle pCPU in
    /// its target LLC (consolidation, affinity), else with cells an idle pCPU of its cell (its
    /// last pCPU, its LLC, the lowest-numbered) or [`NONE`]; `None` leaves the choice to the
    /// ordinary order.
    pub(super) fn idle_pcpu_hooked(&mut self, v: u32, last: u32) -> Option<u32> {
        let vm = self.vcpus[v as usize].vm;
        if self.cells.prefer {
            if let Some(l) = self.target_llc_of(v) {
                let (lo, hi) = (self.llc_range[l as usize], self.llc_range[l as usize + 1]);
                let home = self.vcpus[v as usize].home;
                let confined = self.params.numa_confine && home != NONE && self.node_of[lo] != home;
                if self.cell_admits(vm, lo as u32) && !confined {
                    let li = last as usize;
                    let ok = |p: usize| self.idle[p] && (!self.ht.on || self.ht_admits(p as u32, v));
                    let p = if (lo..hi).contains(&li) && ok(li) { Some(li) } else { (lo..hi).find(|&p| ok(p)) };
                    if let Some(p) = p {
                        self.stats.affinity_placements += 1;
                        return Some(p as u32);
                    }
                }
            }
        }
        if !self.cells.on {
            return None;
        }
        let r = self.cell_pcpus(self.cells.vm_cell[vm as usize]);
        if self.ht.on {
            // whole idle cores first, threads the VM may share, within the cell
            return Some(self.ht_idle_within(v, last, r));
        }
        let li = last as usize;
        if r.contains(&li) && self.idle[li] {
            return Some(last);
        }
        if self.params.llc_aware && r.contains(&li) {
            let l = self.llc_of[li] as usize;
            if let Some(p) = (self.llc_range[l]..self.llc_range[l + 1]).find(|&p| self.idle[p]) {
                return Some(p as u32);
            }
        }
        Some(r.clone().find(|&p| self.idle[p]).map_or(NONE, |p| p as u32))
    }

    /// The LLC vCPU `v` should be placed in by vSMP consolidation (its siblings) and inter-VM
    /// cache affinity (its VM's partners' vCPUs): where most of those run, or, when none runs,
    /// where most of them last ran (`cells::target_llc`); `None` without such peers.
    fn target_llc_of(&self, v: u32) -> Option<u32> {
        let vm = self.vcpus[v as usize].vm as usize;
        let mut peers: Vec<usize> = Vec::new();
        if self.cells.consolidate[vm] {
            peers.extend(self.vcpus_of(vm as u32).filter(|&u| u != v as usize));
        }
        for &o in &self.cells.partners[vm] {
            peers.extend(self.vcpus_of(o));
        }
        let on: Vec<&super::Vcpu> = peers.iter().map(|&u| &self.vcpus[u]).filter(|c| c.state != VcpuState::Off).collect();
        let running: Vec<u32> = on.iter().filter(|c| c.state == VcpuState::Run).map(|c| self.llc_of[c.pcpu as usize]).collect();
        let llcs = self.llc_range.len() - 1;
        if !running.is_empty() {
            return target_llc(&running, llcs);
        }
        target_llc(&on.iter().map(|c| self.llc_of[c.pcpu as usize]).collect::<Vec<_>>(), llcs)
    }

    /// The cell balancer (`cells.rs`), called at each entitlement update: every
    /// `cell_rebalance_period_ns`, move the VM [`choose_move`] picks to its new cell.
    pub fn rebalance_cells(&mut self, now: Time, q: &mut EventQueue) {
        if !self.cells.on || now - self.cells.last_balance < self.params.cell_rebalance_period_ns {
            return;
        }
        self.cells.last_balance = now;
        let vms: Vec<CellVm> = (0..self.gangs.len() as u32)
            .map(|vm| {
                let sibs = &self.vcpus[self.vcpus_of(vm)];
                let on = sibs.iter().all(|c| c.state != VcpuState::Off);
                let movable = on
                    && !self.gangs[vm as usize].costopped
                    && sibs.iter().all(|c| c.state != VcpuState::Ready && c.stale == 0);
                let demand = if on { sibs.iter().map(|c| c.demand).sum() } else { 0.0 };
                CellVm { cell: self.cells.vm_cell[vm as usize], demand, movable }
            })
            .collect();
        let cells = self.cells.range.len() - 1;
        let size = (self.cells.range[1] - self.cells.range[0]) as f64;
        if let Some((vm, to)) = choose_move(&vms, cells, size, self.params.cell_rebalance_imbalance) {
            self.move_to_cell(vm, to, now, q);
        }
    }

    /// Move VM `vm` (none of its vCPUs READY) whole to cell `to` at `now`: its running vCPUs stop
    /// and are placed again there, every vCPU's last pCPU moves into the new cell (counted as a
    /// migration: its caches are cold there), and its home node follows the cell.
    fn move_to_cell(&mut self, vm: u32, to: u32, now: Time, q: &mut EventQueue) {
        let from = self.cells.vm_cell[vm as usize];
        let n = self.gangs[vm as usize].n as usize;
        self.cells.load[from as usize] -= n;
        self.cells.load[to as usize] += n;
        self.cells.vm_cell[vm as usize] = to;
        self.stats.cell_moves += 1;
        let node = self.cell_node(to);
        if node != NONE {
            self.set_home(vm, node);
        }
        let r = self.cell_pcpus(to);
        let mut freed = Vec::new();
        let mut moved = Vec::new();
        for (i, v) in self.vcpus_of(vm).enumerate() {
            let v = v as u32;
            if self.vcpus[v as usize].state == VcpuState::Run {
                let p = self.vcpus[v as usize].pcpu;
                self.stop(p, now);
                self.set_state(v, now, VcpuState::Ready);
                if !self.idle[p as usize] {
                    self.set_idle(p);
                    q.cancel_timer(p);
                }
                freed.push(p);
                moved.push(v);
            }
            let np = (r.start + (vm as usize + i) % r.len()) as u32;
            self.count_cell_move(v, np);
        }
        for v in moved {
            self.place(v, now, q);
        }
        for p in freed {
            if self.idle[p as usize] {
                self.dispatch(p, now, q);
            }
        }
        self.settle_cosched(now, q);
    }

    /// Count vCPU `v`'s move into its new cell, onto `p`, at every level it crosses, as `start`
    /// counts a slice on another pCPU. Written out here rather than calling `count_move`: a
    /// second call site made the compiler stop inlining that hot function (+1% on bench-64vm).
    fn count_cell_move(&mut self, v: u32, p: u32) {
        let from = self.vcpus[v as usize].pcpu as usize;
        let llc = u64::from(self.llc_of[from] != self.llc_of[p as usize]);
        let node = u64::from(self.node_of[from] != self.node_of[p as usize]);
        self.stats.core_migrations += u64::from(self.ht.on && from ^ 1 == p as usize);
        let vc = &mut self.vcpus[v as usize];
        vc.pcpu = p;
        vc.migrations += 1;
        vc.llc_migrations += llc;
        vc.node_migrations += node;
        self.stats.migrations += 1;
        self.stats.llc_migrations += llc;
        self.stats.node_migrations += node;
    }
}
