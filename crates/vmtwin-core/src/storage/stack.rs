//! The host I/O stack: VM disks, per-LUN kernel queues under SFQ(D), queue-depth limits,
//! splitting and merging, path selection, HBA ports, devices and completion.
//!
//! A request a VM issues to its disk is accepted by the VMM (GAVG starts) when the disk's virtual
//! queue (the VM's virtual adapter's per-disk queue depth, `VmDiskSpec::queue_depth`) has a slot;
//! beyond it, requests wait in the guest, first come first served, unseen by esxtop. If it is
//! larger than `split_bytes` it becomes ⌈len / split_bytes⌉ pieces with the parent's arrival time
//! (Kraft eqs. 3-5); the request completes when its last piece does. Each piece gets SFQ tags
//! (`sfq.rs`) and waits in its VM's kernel queue on the LUN (QUED, QAVG). The LUN issues queued
//! pieces, lowest start tag first, while
//!
//! - fewer than DQLEN commands are active at the device (the device queue depth; at most the
//!   device's own on-board depth for directly attached disks),
//! - the piece's VM has fewer than `Disk.SchedNumReqOutstanding` active, if more than one VM has
//!   I/O on the LUN (ESX applies the limit only then),
//! - the LUN's PSP finds a working path.
//!
//! A command issued to a path whose HBA port has all its queue-depth slots taken waits in that
//! port's queue (adapter QUED), first come first served across every LUN behind the port, keeping
//! its DQLEN slot; the LUN goes on issuing to its other paths meanwhile.
//!
//! Issuing may merge (Kraft Algorithm 1): with merge value ω, up to x = ⌊ω⌋ or ⌈ω⌉ (stochastic
//! rounding) pieces of the same VM that are next in start-tag order, in the same direction and
//! contiguous on disk (unless `merge_contiguous_only` is off), no larger together than
//! `split_bytes`, go to the device as one command and take one DQLEN slot. Leaving its port, the
//! command crosses the port's link (FCFS at the link rate), is served by the device and returns
//! after the path's fabric latency; DAVG is that whole time (a wait at the port is in KAVG).
//!
//! When a path fails, every command active on it is aborted (esxtop ABRTS) and its pieces go
//! back to the front of their kernel queues with their original tags; the PSP fails over and
//! they are issued again, so nothing is lost (the failed attempt's time counts in KAVG). With
//! every path down the LUN holds its queue until a path returns (all paths down).
//!
//! # Tunables
//! [`super::StackParams`] (`split_bytes` 512 kB, `sched_num_req_outstanding` 32, `merge_omega` 1,
//! `merge_contiguous_only`); per LUN `dqlen` (32) and `psp`; per adapter `queue_depth` and
//! `link_bits_per_s`; per path `fabric_ns`; per disk `shares` and `queue_depth`.
//!
//! # Counters
//! esxtop disk counters at the VM disk, LUN, path and adapter grains (`counters.rs`); per
//! generator [`super::workload::GenStats`]; PSP Adaptive's state log.
//!
//! # Known gaps
//! - A split request completes with its last piece; Kraft's model averages the pieces'
//!   response times instead (eq. 6), which is a modelling choice of the paper, kept in
//!   `vmtwin.models`.
//! - No adaptive queue depth on QUEUE FULL, no SIOC (datastore-wide latency control) yet.
//! - Link transfer is charged before device service for reads too (the link is full duplex in
//!   reality); fabric latency is not charged for spinning disks (taken as local).
//! - A vCPU issuing synchronous I/O waits in the run loop, not here: wiring comes with the
//!   engine integration.

use super::array::FlashArray;
use super::counters::DiskCounters;
use super::device::{ExpDevice, Ssd};
use super::hdd::{Hdd, HddCmd};
use super::psp::{AdaptiveChange, Nmp, PspChange, WindowStats};
use super::workload::{GenStats, Generator, WorkloadSpec};
use super::{DeviceSpec, IoRecord, IoScheduler, Op, StackParams, StorageEvent, StorageSpec, SECTOR_BYTES};
use crate::sim::{stream_seed, Rng, Time};
use crate::{VmtwinError, VmtwinResult};
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;
const EMPTY_HEAD: (f64, u64) = (f64::INFINITY, 0);

/// A request submitted through [`Storage::submit`] that has completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// the caller's token
    pub token: u64,
    /// the VM disk
    pub disk: u32,
    /// direction
    pub op: Op,
    /// bytes
    pub bytes: u32,
    /// when it was submitted
    pub issued: Time,
    /// when it completed
    pub done: Time,
}

#[derive(Debug, Clone, Copy)]
enum Owner {
    External(u64),
    /// generator, customer
    Gen(u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Queued,
    Active,
}

/// One piece of a request, as the kernel queues it.
#[derive(Debug, Clone, Copy)]
struct Cmd {
    disk: u32,
    parent: u32,
    op: Op,
    lba: u64,
    len: u32,
    arrived: Time,
    enq: Time,
    qtime: Time,
    dispatched: Time,
    tag: f64,
    seq: u64,
    /// path of the active attempt (global index)
    path: u32,
    /// nonzero only on the head of an active bundle
    attempt: u64,
    /// next member of the bundle, or of the free list
    next: u32,
    /// bytes of the whole bundle (head only)
    bundle_len: u32,
    /// waiting in its HBA port's queue (head only)
    at_port: bool,
    state: State,
}

#[derive(Debug, Clone, Copy)]
struct Parent {
    owner: Owner,
    op: Op,
    len: u32,
    /// when the guest issued it (before any wait for a virtual queue slot)
    submitted: Time,
    /// when the VMM accepted it (GAVG starts)
    issued: Time,
    remaining: u32,
    last_davg: Time,
    qtime: Time,
}

#[derive(Debug, Clone)]
enum Backend {
    Exp(ExpDevice),
    Ssd(Ssd),
    Hdd(Hdd),
    Array { array: u32, owner: u8 },
}

#[derive(Debug, Clone)]
struct Disk {
    lun: u32,
    class: u32,
    active: u32,
    queued: u32,
    /// the virtual adapter's queue depth for this disk (u32::MAX: none)
    vq_depth: u32,
    /// requests accepted by the VMM and not completed
    vq_inflight: u32,
    /// requests the guest issued beyond `vq_depth`, waiting in the guest for a slot
    vq_wait: VecDeque<Pending>,
    span_bytes: u64,
    offset_sectors: u64,
    counters: DiskCounters,
    /// completed requests go to [`Storage::io_log`]
    log: bool,
}

#[derive(Debug, Clone)]
struct Lun {
    backend: Backend,
    dqlen: u32,
    active: u32,
    queues: Vec<VecDeque<u32>>,
    /// (start tag, seq) of each class's queue head, (∞, 0) when empty: the scan reads this
    /// small array instead of chasing each head into the command slab
    heads: Vec<(f64, u64)>,
    /// commands active per class (mirror of the disks' ACTV, for `Disk.SchedNumReqOutstanding`)
    class_active: Vec<u32>,
    class_disk: Vec<u32>,
    busy_classes: u32,
    sfq: super::sfq::Sfq,
    nmp: Nmp,
    paths: Vec<u32>,
    counters: DiskCounters,
    rng: Rng,
    window: WindowStats,
    /// bumped by every policy change (makes the old policy's window events stale)
    psp_gen: u32,
}

/// A request waiting in the guest for a virtual queue slot.
#[derive(Debug, Clone, Copy)]
struct Pending {
    op: Op,
    offset_bytes: u64,
    len: u32,
    owner: Owner,
    submitted: Time,
}

#[derive(Debug, Clone)]
struct Path {
    lun: u32,
    local: u32,
    adapter: u32,
    controller: u8,
    fabric_ns: Time,
    up: bool,
    counters: DiskCounters,
}

#[derive(Debug, Clone)]
struct Adapter {
    qdepth: u32,
    active: u32,
    link_free: Time,
    ns_per_byte: f64,
    /// bundles (head, attempt) issued to a path of this port while it was full, FIFO; entries
    /// whose command was aborted meanwhile are skipped
    waiting: VecDeque<(u32, u64)>,
    counters: DiskCounters,
}

/// The storage side of one host.
#[derive(Debug, Clone)]
pub struct Storage {
    params: StackParams,
    seed: u64,
    disk_names: Vec<String>,
    lun_names: Vec<String>,
    adapter_names: Vec<String>,
    disks: Vec<Disk>,
    luns: Vec<Lun>,
    paths: Vec<Path>,
    adapters: Vec<Adapter>,
    arrays: Vec<FlashArray>,
    cmds: Vec<Cmd>,
    free_cmd: u32,
    parents: Vec<Parent>,
    free_parents: Vec<u32>,
    next_attempt: u64,
    seq: u64,
    completions: Vec<Completion>,
    gens: Vec<Generator>,
    /// PSP changes registered for later, (LUN, change)
    psp_changes: Vec<(u32, PspChange)>,
    scratch_done: Vec<u32>,
    scratch_req: Vec<(Op, u64, u32)>,
    /// completed requests of the disks that log them, oldest first, since the last drain
    io_log: Vec<IoRecord>,
}

impl Storage {
    /// Build the stack of `spec` (validated first), idle, at time 0.
    pub fn new(spec: &StorageSpec) -> VmtwinResult<Self> {
        spec.validate()?;
        let adapters = spec
            .adapters
            .iter()
            .map(|a| Adapter {
                qdepth: a.queue_depth,
                active: 0,
                link_free: 0,
                ns_per_byte: 8e9 / a.link_bits_per_s as f64,
                waiting: VecDeque::new(),
                counters: DiskCounters { dqlen: a.queue_depth, ..Default::default() },
            })
            .collect();
        let arrays: Vec<FlashArray> = spec.arrays.iter().map(FlashArray::new).collect();
        let mut luns = Vec::new();
        let mut paths = Vec::new();
        for (li, l) in spec.luns.iter().enumerate() {
            let dev_rng = Rng::new(stream_seed(spec.seed, &l.name, 0));
            let (backend, dqlen, owner) = match &l.device {
                DeviceSpec::Exponential { servers, mean_service_ns } => (Backend::Exp(ExpDevice::new(*servers, *mean_service_ns, dev_rng.clone())), l.dqlen, None),
                DeviceSpec::Ssd(p) => (Backend::Ssd(Ssd::new(p)), l.dqlen.min(p.queue_depth), None),
                DeviceSpec::Hdd(p) => (Backend::Hdd(Hdd::new(p)), l.dqlen.min(p.queue_depth), None),
                DeviceSpec::Array { array, owner } => {
                    let a = spec.arrays.iter().position(|x| &x.name == array).unwrap() as u32;
                    (Backend::Array { array: a, owner: *owner }, l.dqlen, Some(*owner))
                }
            };
            let optimized: Vec<bool> = l.paths.iter().map(|p| owner.is_none_or(|o| o == p.controller)).collect();
            let mut ids = Vec::new();
            for (j, p) in l.paths.iter().enumerate() {
                ids.push(paths.len() as u32);
                paths.push(Path {
                    lun: li as u32,
                    local: j as u32,
                    adapter: spec.adapters.iter().position(|a| a.name == p.adapter).unwrap() as u32,
                    controller: p.controller,
                    fabric_ns: if matches!(l.device, DeviceSpec::Hdd(_)) { 0 } else { p.fabric_ns },
                    up: true,
                    counters: DiskCounters::default(),
                });
            }
            let class_disk: Vec<u32> = spec.disks.iter().enumerate().filter(|(_, d)| d.lun == l.name).map(|(i, _)| i as u32).collect();
            let shares: Vec<u32> = class_disk.iter().map(|&d| spec.disks[d as usize].shares).collect();
            luns.push(Lun {
                backend,
                dqlen,
                active: 0,
                queues: vec![VecDeque::new(); class_disk.len()],
                heads: vec![EMPTY_HEAD; class_disk.len()],
                class_active: vec![0; class_disk.len()],
                class_disk,
                busy_classes: 0,
                sfq: super::sfq::Sfq::new(&shares),
                nmp: Nmp::new(&l.psp, optimized),
                paths: ids,
                counters: DiskCounters { dqlen, ..Default::default() },
                rng: Rng::new(stream_seed(spec.seed, &l.name, 1)),
                window: WindowStats::default(),
                psp_gen: 0,
            });
        }
        let disks = spec
            .disks
            .iter()
            .map(|d| {
                let lun = spec.luns.iter().position(|l| l.name == d.lun).unwrap() as u32;
                let class = luns[lun as usize].class_disk.iter().position(|&x| spec.disks[x as usize].name == d.name).unwrap() as u32;
                Disk {
                    lun,
                    class,
                    active: 0,
                    queued: 0,
                    vq_depth: d.queue_depth.unwrap_or(u32::MAX),
                    vq_inflight: 0,
                    vq_wait: VecDeque::new(),
                    span_bytes: d.span_bytes,
                    offset_sectors: d.offset_bytes / SECTOR_BYTES,
                    counters: DiskCounters { dqlen: spec.params.sched_num_req_outstanding, ..Default::default() },
                    log: false,
                }
            })
            .collect();
        Ok(Storage {
            params: spec.params.clone(),
            seed: spec.seed,
            disk_names: spec.disks.iter().map(|d| d.name.clone()).collect(),
            lun_names: spec.luns.iter().map(|l| l.name.clone()).collect(),
            adapter_names: spec.adapters.iter().map(|a| a.name.clone()).collect(),
            disks,
            luns,
            paths,
            adapters,
            arrays,
            cmds: Vec::new(),
            free_cmd: NONE,
            parents: Vec::new(),
            free_parents: Vec::new(),
            next_attempt: 1,
            seq: 0,
            completions: Vec::new(),
            gens: Vec::new(),
            psp_changes: Vec::new(),
            scratch_done: Vec::new(),
            scratch_req: Vec::new(),
            io_log: Vec::new(),
        })
    }

    // ---- lookups ----

    /// Index of the VM disk called `name`.
    pub fn disk(&self, name: &str) -> VmtwinResult<u32> {
        self.disk_names.iter().position(|n| n == name).map(|i| i as u32).ok_or_else(|| VmtwinError::Simulation(format!("no VM disk '{name}'")))
    }

    /// Index of the LUN called `name`.
    pub fn lun(&self, name: &str) -> VmtwinResult<u32> {
        self.lun_names.iter().position(|n| n == name).map(|i| i as u32).ok_or_else(|| VmtwinError::Simulation(format!("no LUN '{name}'")))
    }

    /// Global index of path `j` of LUN `lun`.
    pub fn path(&self, lun: u32, j: u32) -> u32 {
        self.luns[lun as usize].paths[j as usize]
    }

    /// Names of the VM disks, LUNs and adapters, by index.
    pub fn names(&self) -> (&[String], &[String], &[String]) {
        (&self.disk_names, &self.lun_names, &self.adapter_names)
    }

    /// Whether path `p` (global index) is up.
    pub fn path_up(&self, p: u32) -> bool {
        self.paths[p as usize].up
    }

    /// Number of paths over all LUNs.
    pub fn path_count(&self) -> usize {
        self.paths.len()
    }

    /// Counters of VM disk `d`, LUN `l`, path `p`, adapter `a`, brought up to `now`.
    pub fn disk_counters(&self, d: u32, now: Time) -> DiskCounters {
        self.disks[d as usize].counters.at(now)
    }
    /// See [`Storage::disk_counters`].
    pub fn lun_counters(&self, l: u32, now: Time) -> DiskCounters {
        self.luns[l as usize].counters.at(now)
    }
    /// See [`Storage::disk_counters`].
    pub fn path_counters(&self, p: u32, now: Time) -> DiskCounters {
        self.paths[p as usize].counters.at(now)
    }
    /// See [`Storage::disk_counters`].
    pub fn adapter_counters(&self, a: u32, now: Time) -> DiskCounters {
        self.adapters[a as usize].counters.at(now)
    }

    /// Whether LUN `l`'s PSP Adaptive is spreading writes now.
    pub fn spreading(&self, l: u32) -> bool {
        self.luns[l as usize].nmp.spreading()
    }

    /// PSP Adaptive's state changes on LUN `l`.
    pub fn adaptive_log(&self, l: u32) -> &[AdaptiveChange] {
        self.luns[l as usize].nmp.adaptive_log()
    }

    /// Turn PSP Adaptive on LUN `l` on or off (the esxcli knob).
    pub fn set_adaptive_enabled(&mut self, l: u32, on: bool) {
        self.luns[l as usize].nmp.set_adaptive_enabled(on);
    }

    /// Change LUN `l`'s path selection at `now` (esxcli): a new policy, RR's switch count or
    /// Adaptive's knob. Refused (with the reason, nothing changed) where esxcli refuses it.
    pub fn change_psp(&mut self, now: Time, l: u32, change: &PspChange, sched: &mut impl IoScheduler) -> VmtwinResult<()> {
        let lun = self.luns.get_mut(l as usize).ok_or_else(|| VmtwinError::Simulation(format!("no LUN {l}")))?;
        lun.nmp.change(change).map_err(|e| VmtwinError::Simulation(format!("LUN '{}': {e}", self.lun_names[l as usize])))?;
        if matches!(change, PspChange::Policy(_)) {
            lun.psp_gen += 1;
            lun.window = WindowStats::default();
            if let Some(w) = lun.nmp.window_ns() {
                sched.at(now + w, StorageEvent::PspWindow { lun: l, gen: lun.psp_gen });
            }
        }
        self.dispatch(now, l, sched);
        Ok(())
    }

    /// Register `change` of LUN `l` to take effect at `at` (a scenario event); a change refused
    /// then is skipped.
    pub fn schedule_psp_change(&mut self, at: Time, l: u32, change: PspChange, sched: &mut impl IoScheduler) {
        self.psp_changes.push((l, change));
        sched.at(at, StorageEvent::PspChange { change: (self.psp_changes.len() - 1) as u32 });
    }

    /// Read-cache (hits, misses) of controller `c` of array `a`.
    pub fn array_cache_stats(&self, a: u32, c: u8) -> (u64, u64) {
        self.arrays[a as usize].cache_stats(c)
    }

    /// What generator `g` has done.
    pub fn gen_stats(&self, g: u32) -> GenStats {
        self.gens[g as usize].stats
    }

    /// Requests accepted and not yet completed (for conservation checks).
    pub fn in_flight(&self) -> usize {
        self.parents.len() - self.free_parents.len() + self.disks.iter().map(|d| d.vq_wait.len()).sum::<usize>()
    }

    /// Requests of VM disk `d` waiting in the guest for a virtual queue slot.
    pub fn guest_queued(&self, d: u32) -> usize {
        self.disks[d as usize].vq_wait.len()
    }

    /// Whether a request submitted through [`Storage::submit`] has completed since the last
    /// [`Storage::take_completions`].
    #[inline]
    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty()
    }

    /// Completions of requests submitted through [`Storage::submit`], oldest first, since the last call.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// Log every request of VM disk `d` when it completes ([`IoRecord`]; off by default).
    pub fn log_requests(&mut self, d: u32) {
        self.disks[d as usize].log = true;
    }

    /// The logged requests completed since the last call, oldest first.
    pub fn drain_io_log(&mut self) -> std::vec::Drain<'_, IoRecord> {
        self.io_log.drain(..)
    }

    // ---- driving ----

    /// Attach a workload generator to VM disk `disk`; it starts with [`Storage::start`].
    pub fn add_workload(&mut self, disk: u32, spec: WorkloadSpec) -> VmtwinResult<u32> {
        if disk as usize >= self.disks.len() {
            return Err(VmtwinError::Simulation(format!("no VM disk {disk}")));
        }
        let g = self.gens.len() as u32;
        let rng = Rng::new(stream_seed(self.seed, &self.disk_names[disk as usize], 2 + g));
        self.gens.push(Generator::new(spec, disk, rng)?);
        Ok(g)
    }

    /// Schedule the generators' first issues and PSP Adaptive's first windows.
    pub fn start(&mut self, now: Time, sched: &mut impl IoScheduler) {
        for g in 0..self.gens.len() {
            let span = self.disks[self.gens[g].disk as usize].span_bytes;
            let mut none = Vec::new();
            for user in 0..self.gens[g].users() {
                if let Some(t) = self.gens[g].wake(now, true, user, span, &mut none) {
                    sched.at(t.max(now), StorageEvent::Issue { gen: g as u32, user });
                }
            }
        }
        for (l, lun) in self.luns.iter().enumerate() {
            if let Some(w) = lun.nmp.window_ns() {
                sched.at(now + w, StorageEvent::PspWindow { lun: l as u32, gen: lun.psp_gen });
            }
        }
    }

    /// Run one of this subsystem's events.
    pub fn handle(&mut self, now: Time, ev: StorageEvent, sched: &mut impl IoScheduler) {
        match ev {
            StorageEvent::DeviceDone { lun, cmd, attempt } => self.device_done(now, lun, cmd, attempt, sched),
            StorageEvent::Issue { gen, user } => self.gen_wake(now, gen, user, true, sched),
            StorageEvent::PspWindow { lun, gen } => {
                let l = &mut self.luns[lun as usize];
                if gen != l.psp_gen {
                    return; // the policy changed since
                }
                let w = std::mem::take(&mut l.window);
                l.nmp.window(now, &w);
                if let Some(win) = l.nmp.window_ns() {
                    sched.at(now + win, StorageEvent::PspWindow { lun, gen });
                }
            }
            StorageEvent::PspChange { change } => {
                let (l, c) = self.psp_changes[change as usize].clone();
                let _ = self.change_psp(now, l, &c, sched); // refused changes are skipped (scenarios check them first)
            }
            StorageEvent::PathDown { path } => self.fail_path(now, path, sched),
            StorageEvent::PathUp { path } => self.restore_path(now, path, sched),
        }
    }

    /// A request from outside (guest page cache, hypervisor swap): VM disk `disk`, direction,
    /// offset and length in bytes; it completes into [`Storage::take_completions`] with `token`.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(&mut self, now: Time, disk: u32, op: Op, offset_bytes: u64, len: u32, token: u64, sched: &mut impl IoScheduler) -> VmtwinResult<()> {
        if disk as usize >= self.disks.len() {
            return Err(VmtwinError::Simulation(format!("I/O to VM disk {disk}: there are {} disks", self.disks.len())));
        }
        if len == 0 {
            return Err(VmtwinError::Simulation(format!("I/O of 0 bytes to VM disk '{}'", self.disk_names[disk as usize])));
        }
        if self.admit(now, disk, op, offset_bytes, len, Owner::External(token)) {
            self.dispatch(now, self.disks[disk as usize].lun, sched);
        }
        Ok(())
    }

    /// Generator `g` issues; the LUN dispatches unless the caller will (a completion does).
    #[inline(always)]
    fn gen_wake(&mut self, now: Time, g: u32, user: u32, dispatch: bool, sched: &mut impl IoScheduler) {
        let gen = &mut self.gens[g as usize];
        let disk = gen.disk;
        let mut reqs = std::mem::take(&mut self.scratch_req);
        let next = gen.wake(now, false, user, self.disks[disk as usize].span_bytes, &mut reqs);
        gen.in_flight += reqs.len() as u32;
        gen.stats.issued += reqs.len() as u64;
        for &(op, off, len) in &reqs {
            self.admit(now, disk, op, off, len, Owner::Gen(g, user));
        }
        reqs.clear();
        self.scratch_req = reqs;
        if let Some(t) = next {
            sched.at(t, StorageEvent::Issue { gen: g, user });
        }
        if dispatch {
            self.dispatch(now, self.disks[disk as usize].lun, sched);
        }
    }

    fn alloc_cmd(&mut self) -> u32 {
        if self.free_cmd != NONE {
            let c = self.free_cmd;
            self.free_cmd = self.cmds[c as usize].next;
            c
        } else {
            self.cmds.push(Cmd {
                disk: 0,
                parent: 0,
                op: Op::Read,
                lba: 0,
                len: 0,
                arrived: 0,
                enq: 0,
                qtime: 0,
                dispatched: 0,
                tag: 0.0,
                seq: 0,
                path: 0,
                attempt: 0,
                next: NONE,
                bundle_len: 0,
                at_port: false,
                state: State::Free,
            });
            (self.cmds.len() - 1) as u32
        }
    }

    /// Expected service time of a command at LUN `l`'s device, ns: the SFQ cost.
    fn cost(&self, l: usize, op: Op, len: u32) -> f64 {
        match &self.luns[l].backend {
            Backend::Exp(d) => d.mean_ns(),
            Backend::Ssd(s) => s.service_ns(op, len) as f64,
            Backend::Hdd(h) => h.expected_ns(len),
            Backend::Array { array, .. } => self.arrays[*array as usize].expected_ns(op, len),
        }
    }

    /// The guest issues a request to its virtual disk: the VMM accepts it if the disk's virtual
    /// queue has a slot (and no earlier request waits for one), else it waits in the guest.
    /// Returns whether it was accepted.
    #[inline(always)]
    fn admit(&mut self, now: Time, disk: u32, op: Op, offset_bytes: u64, len: u32, owner: Owner) -> bool {
        let d = &mut self.disks[disk as usize];
        if d.vq_inflight >= d.vq_depth || !d.vq_wait.is_empty() {
            d.vq_wait.push_back(Pending { op, offset_bytes, len, owner, submitted: now });
            return false;
        }
        d.vq_inflight += 1;
        self.accept(now, now, disk, op, offset_bytes, len, owner);
        true
    }

    /// Slots freed on VM disk `disk`'s virtual queue go to the requests waiting in the guest.
    fn admit_waiting(&mut self, now: Time, disk: u32) {
        loop {
            let d = &mut self.disks[disk as usize];
            if d.vq_inflight >= d.vq_depth {
                return;
            }
            let Some(w) = d.vq_wait.pop_front() else { return };
            d.vq_inflight += 1;
            self.accept(now, w.submitted, disk, w.op, w.offset_bytes, w.len, w.owner);
        }
    }

    /// The VMM accepts a request: split it and queue the pieces.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn accept(&mut self, now: Time, submitted: Time, disk: u32, op: Op, offset_bytes: u64, len: u32, owner: Owner) {
        let split = self.params.split_bytes;
        let pieces = len.div_ceil(split).max(1);
        let parent = Parent { owner, op, len, submitted, issued: now, remaining: pieces, last_davg: 0, qtime: 0 };
        let p = match self.free_parents.pop() {
            Some(p) => {
                self.parents[p as usize] = parent;
                p
            }
            None => {
                self.parents.push(parent);
                (self.parents.len() - 1) as u32
            }
        };
        let (l, class, base) = {
            let d = &self.disks[disk as usize];
            (d.lun as usize, d.class as usize, d.offset_sectors + offset_bytes / SECTOR_BYTES)
        };
        let d = &mut self.disks[disk as usize];
        if d.active + d.queued == 0 {
            self.luns[l].busy_classes += 1;
        }
        d.queued += pieces;
        d.counters.level(now, 0, pieces as i32);
        self.luns[l].counters.level(now, 0, pieces as i32);
        for k in 0..pieces {
            let plen = if k + 1 < pieces { split } else { len - split * (pieces - 1) };
            let cost = self.cost(l, op, plen);
            let tag = self.luns[l].sfq.tag(class, cost);
            let c = self.alloc_cmd();
            self.seq += 1;
            self.cmds[c as usize] = Cmd {
                disk,
                parent: p,
                op,
                lba: base + u64::from(k) * u64::from(split) / SECTOR_BYTES,
                len: plen,
                arrived: now,
                enq: now,
                qtime: 0,
                dispatched: 0,
                tag,
                seq: self.seq,
                path: NONE,
                attempt: 0,
                next: NONE,
                bundle_len: plen,
                at_port: false,
                state: State::Queued,
            };
            let lun = &mut self.luns[l];
            if lun.queues[class].is_empty() {
                lun.heads[class] = (tag, self.seq);
            }
            lun.queues[class].push_back(c);
        }
    }

    /// Issue what LUN `l` may issue now.
    fn dispatch(&mut self, now: Time, l: u32, sched: &mut impl IoScheduler) {
        let li = l as usize;
        loop {
            let lun = &self.luns[li];
            if lun.active >= lun.dqlen {
                return;
            }
            let limit = if lun.busy_classes > 1 { self.params.sched_num_req_outstanding } else { u32::MAX };
            // lowest (start tag, seq) among the heads of classes under their limit; empty
            // queues have tag ∞ and never win
            let (mut class, mut tag, mut best_seq) = (usize::MAX, f64::INFINITY, u64::MAX);
            for (c, &(t, seq)) in lun.heads.iter().enumerate() {
                if (t < tag || (t == tag && seq < best_seq && t != f64::INFINITY)) && lun.class_active[c] < limit {
                    (class, tag, best_seq) = (c, t, seq);
                }
            }
            if class == usize::MAX {
                return;
            }
            let head = *self.luns[li].queues[class].front().unwrap();
            let op = self.cmds[head as usize].op;
            let Some(local) = self.luns[li].nmp.select(op) else { return };
            let path = self.luns[li].paths[local] as usize;
            self.luns[li].queues[class].pop_front();
            self.luns[li].sfq.issued(tag);
            let members = self.bundle(li, class, head, limit);
            self.refresh_head(li, class);
            self.issue(now, li, head, members, path, sched);
        }
    }

    #[inline(always)]
    fn refresh_head(&mut self, l: usize, class: usize) {
        let lun = &mut self.luns[l];
        lun.heads[class] = match lun.queues[class].front() {
            Some(&c) => (self.cmds[c as usize].tag, self.cmds[c as usize].seq),
            None => EMPTY_HEAD,
        };
    }

    /// Grow a bundle from `head` by merging (Kraft Algorithm 1); returns its member count.
    fn bundle(&mut self, l: usize, class: usize, head: u32, limit: u32) -> u32 {
        let omega = self.params.merge_omega;
        self.cmds[head as usize].next = NONE;
        self.cmds[head as usize].bundle_len = self.cmds[head as usize].len;
        if omega <= 1.0 {
            return 1;
        }
        let lun = &mut self.luns[l];
        let x = omega.floor() as u32 + u32::from(lun.rng.uniform() < omega - omega.floor());
        let disk = self.cmds[head as usize].disk as usize;
        let mut tail = head;
        let mut n = 1;
        while n < x && self.disks[disk].active + n < limit {
            let Some(&c) = lun.queues[class].front() else { break };
            let (ct, cs) = (self.cmds[c as usize].tag, self.cmds[c as usize].seq);
            // the next in global tag order must be this class's (the bundle never spans classes)
            let other_first = lun.heads.iter().enumerate().any(|(k, &h)| k != class && h < (ct, cs));
            let t = &self.cmds[tail as usize];
            let nc = &self.cmds[c as usize];
            let total = self.cmds[head as usize].bundle_len + nc.len;
            // one device command has one direction; adjacency is required unless merging is Kraft's calibration
            let adjacent = nc.lba == t.lba + u64::from(t.len).div_ceil(SECTOR_BYTES);
            if other_first || nc.op != t.op || total > self.params.split_bytes || (self.params.merge_contiguous_only && !adjacent) {
                break;
            }
            lun.queues[class].pop_front();
            self.cmds[tail as usize].next = c;
            self.cmds[c as usize].next = NONE;
            self.cmds[head as usize].bundle_len = total;
            tail = c;
            n += 1;
        }
        n
    }

    /// Send a bundle down `path`.
    fn issue(&mut self, now: Time, l: usize, head: u32, members: u32, path: usize, sched: &mut impl IoScheduler) {
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        let mut m = head;
        while m != NONE {
            let c = &mut self.cmds[m as usize];
            c.state = State::Active;
            c.dispatched = now;
            c.qtime += now - c.enq;
            c.attempt = 0;
            c.path = path as u32;
            let d = &mut self.disks[c.disk as usize];
            d.active += 1;
            d.queued -= 1;
            d.counters.level(now, 1, -1);
            self.luns[l].class_active[d.class as usize] += 1;
            m = c.next;
        }
        let h = &mut self.cmds[head as usize];
        h.attempt = attempt;
        let lun = &mut self.luns[l];
        lun.active += 1;
        lun.counters.level(now, 1, -(members as i32));
        let ad = &mut self.adapters[self.paths[path].adapter as usize];
        if ad.active >= ad.qdepth {
            // the port is full: the command waits in its queue (adapter QUED), FIFO across LUNs,
            // holding its DQLEN slot; the LUN goes on issuing to other paths
            ad.waiting.push_back((head, attempt));
            ad.counters.level(now, 0, 1);
            self.cmds[head as usize].at_port = true;
        } else {
            self.send(now, l, head, sched);
        }
    }

    /// The bundle headed by `head` leaves its HBA port: the link, the device, completion.
    #[inline(always)]
    fn send(&mut self, now: Time, l: usize, head: u32, sched: &mut impl IoScheduler) {
        let h = &mut self.cmds[head as usize];
        h.at_port = false;
        h.dispatched = now; // DAVG from here; a wait at the port counts in KAVG
        let (op, lba, len, attempt, path) = (h.op, h.lba, h.bundle_len, h.attempt, h.path as usize);
        let p = &mut self.paths[path];
        p.counters.level(now, 1, 0);
        let (controller, fabric) = (p.controller, p.fabric_ns);
        let ad = &mut self.adapters[p.adapter as usize];
        ad.active += 1;
        ad.counters.level(now, 1, 0);
        let xfer = crate::sim::ns(f64::from(len) * ad.ns_per_byte);
        ad.link_free = ad.link_free.max(now) + xfer;
        let ready = ad.link_free;
        let done = match &mut self.luns[l].backend {
            Backend::Exp(d) => Some(d.serve(ready)),
            Backend::Ssd(s) => Some(s.serve(ready, op, len)),
            Backend::Array { array, owner } => Some(self.arrays[*array as usize].serve(ready, l as u32, *owner, controller, op, lba, len)),
            Backend::Hdd(hdd) => hdd.submit(now, HddCmd { cmd: head, attempt, op, lba, len, ready }).map(|(c, t)| {
                debug_assert_eq!(c.cmd, head);
                t
            }),
        };
        if let Some(t) = done {
            sched.at(t + fabric, StorageEvent::DeviceDone { lun: l as u32, cmd: head, attempt });
        }
    }

    /// Send what waits at adapter `a` while it has free slots.
    fn port_next(&mut self, now: Time, a: usize, sched: &mut impl IoScheduler) {
        while self.adapters[a].active < self.adapters[a].qdepth {
            let Some((head, attempt)) = self.adapters[a].waiting.pop_front() else { return };
            let c = &self.cmds[head as usize];
            if !(c.at_port && c.state == State::Active && c.attempt == attempt) {
                continue; // aborted meanwhile (its QUED was taken back then)
            }
            self.adapters[a].counters.level(now, 0, -1);
            let l = self.paths[c.path as usize].lun as usize;
            self.send(now, l, head, sched);
        }
    }

    fn head_free(&mut self, now: Time, l: u32, sched: &mut impl IoScheduler) {
        if let Backend::Hdd(hdd) = &mut self.luns[l as usize].backend {
            if let Some((c, t)) = hdd.next(now) {
                sched.at(t, StorageEvent::DeviceDone { lun: l, cmd: c.cmd, attempt: c.attempt });
            }
        }
    }

    fn device_done(&mut self, now: Time, l: u32, head: u32, attempt: u64, sched: &mut impl IoScheduler) {
        // a spinning disk's head is free whether or not anyone still waits for this command
        self.head_free(now, l, sched);
        let h = self.cmds[head as usize];
        if h.state != State::Active || h.attempt != attempt {
            return; // its path failed meanwhile; the command was retried elsewhere
        }
        let li = l as usize;
        let davg = now - h.dispatched;
        let gavg = now - h.arrived;
        let read = h.op == Op::Read;
        let bytes = u64::from(h.bundle_len);
        let lun = &mut self.luns[li];
        lun.active -= 1;
        lun.counters.level(now, -1, 0);
        lun.counters.complete(read, bytes, davg, gavg, h.qtime);
        if lun.nmp.optimized(self.paths[h.path as usize].local as usize) {
            lun.window.ao_sum_ns += davg;
            lun.window.ao_n += 1;
        } else {
            lun.window.auo_sum_ns += davg;
            lun.window.auo_n += 1;
        }
        lun.window.bytes += bytes;
        let p = &mut self.paths[h.path as usize];
        p.counters.level(now, -1, 0);
        p.counters.complete(read, bytes, davg, gavg, h.qtime);
        let a = p.adapter as usize;
        let ad = &mut self.adapters[a];
        ad.active -= 1;
        ad.counters.level(now, -1, 0);
        ad.counters.complete(read, bytes, davg, gavg, h.qtime);

        let mut finished = std::mem::take(&mut self.scratch_done);
        let mut m = head;
        while m != NONE {
            let c = self.cmds[m as usize];
            let d = &mut self.disks[c.disk as usize];
            d.active -= 1;
            d.counters.level(now, -1, 0);
            self.luns[li].class_active[d.class as usize] -= 1;
            if d.active + d.queued == 0 {
                self.luns[li].busy_classes -= 1;
            }
            let p = &mut self.parents[c.parent as usize];
            p.remaining -= 1;
            p.last_davg = davg;
            p.qtime = p.qtime.max(c.qtime);
            if p.remaining == 0 {
                finished.push(c.parent);
                d.vq_inflight -= 1;
                let (op, len, issued, qtime) = (p.op, p.len, p.issued, p.qtime);
                d.counters.complete(op == Op::Read, u64::from(len), davg, now - issued, qtime);
                if d.log {
                    self.io_log.push(IoRecord { disk: c.disk, op, bytes: len, submitted: p.submitted, accepted: issued, done: now });
                }
            }
            let cm = &mut self.cmds[m as usize];
            cm.state = State::Free;
            cm.attempt = 0;
            let next = cm.next;
            cm.next = self.free_cmd;
            self.free_cmd = m;
            m = next;
        }
        for &p in &finished {
            self.free_parents.push(p);
            let par = self.parents[p as usize];
            match par.owner {
                Owner::External(token) => {
                    let disk = h.disk; // all pieces of a request are on one disk
                    self.completions.push(Completion { token, disk, op: par.op, bytes: par.len, issued: par.submitted, done: now });
                }
                Owner::Gen(g, user) => {
                    if let Some(t) = self.gens[g as usize].completed(now, user, par.op, par.len, now - par.submitted) {
                        if t == now {
                            let other_lun = self.disks[self.gens[g as usize].disk as usize].lun != l;
                            self.gen_wake(now, g, user, other_lun, sched);
                        } else {
                            sched.at(t, StorageEvent::Issue { gen: g, user });
                        }
                    }
                }
            }
        }
        if !finished.is_empty() && !self.disks[h.disk as usize].vq_wait.is_empty() {
            self.admit_waiting(now, h.disk);
        }
        finished.clear();
        self.scratch_done = finished;
        if !self.adapters[a].waiting.is_empty() {
            self.port_next(now, a, sched);
        }
        self.dispatch(now, l, sched);
    }

    /// Path `path` fails at `now`: abort what is active on it, fail over, retry.
    pub fn fail_path(&mut self, now: Time, path: u32, sched: &mut impl IoScheduler) {
        let pi = path as usize;
        if !self.paths[pi].up {
            return;
        }
        self.paths[pi].up = false;
        let l = self.paths[pi].lun as usize;
        let local = self.paths[pi].local as usize;
        self.luns[l].nmp.set_up(local, false);
        for i in 0..self.cmds.len() {
            let c = self.cmds[i];
            if c.state == State::Active && c.attempt != 0 && c.path == path {
                self.abort(now, l, i as u32);
            }
        }
        // the port's freed slots go to what waits there for other paths
        self.port_next(now, self.paths[pi].adapter as usize, sched);
        self.dispatch(now, l as u32, sched);
    }

    /// Path `path` comes back at `now`.
    pub fn restore_path(&mut self, now: Time, path: u32, sched: &mut impl IoScheduler) {
        let pi = path as usize;
        if self.paths[pi].up {
            return;
        }
        self.paths[pi].up = true;
        let l = self.paths[pi].lun;
        self.luns[l as usize].nmp.set_up(self.paths[pi].local as usize, true);
        self.dispatch(now, l, sched);
    }

    /// Abort the active bundle headed by `head` and requeue its members with their tags.
    fn abort(&mut self, now: Time, l: usize, head: u32) {
        let h = self.cmds[head as usize];
        let lun = &mut self.luns[l];
        lun.active -= 1;
        lun.counters.level(now, -1, 0);
        lun.counters.aborts += 1;
        let p = &mut self.paths[h.path as usize];
        p.counters.aborts += 1;
        let ad = &mut self.adapters[p.adapter as usize];
        ad.counters.aborts += 1;
        if h.at_port {
            // never left the port: out of its queue (the entry is skipped when reached)
            ad.counters.level(now, 0, -1);
            self.cmds[head as usize].at_port = false;
        } else {
            p.counters.level(now, -1, 0);
            ad.active -= 1;
            ad.counters.level(now, -1, 0);
        }
        let mut m = head;
        while m != NONE {
            let c = &mut self.cmds[m as usize];
            let next = c.next;
            c.state = State::Queued;
            c.attempt = 0;
            c.enq = now;
            c.next = NONE;
            let (disk, key) = (c.disk as usize, (c.tag, c.seq));
            let d = &mut self.disks[disk];
            d.active -= 1;
            d.queued += 1;
            d.counters.level(now, -1, 1);
            d.counters.aborts += 1;
            self.luns[l].counters.level(now, 0, 1);
            let class = d.class as usize;
            self.luns[l].class_active[class] -= 1;
            let q = &mut self.luns[l].queues[class];
            let pos = q.iter().position(|&o| (self.cmds[o as usize].tag, self.cmds[o as usize].seq) > key).unwrap_or(q.len());
            q.insert(pos, m);
            self.refresh_head(l, class);
            m = next;
        }
    }
}
