//! The run loop's side of the memory subsystem: building it from the spec, routing its events,
//! turning guest accesses into vCPU stalls and waits, and sampling the `mem` tables.
//!
//! **Boot.** At power-on the guest has loaded its OS image and application: those pages (the
//! first `os_fraction + app_fraction` of its memory, then the `os_copy_fraction` of copies, as
//! the content model lays them out) are mapped, so page sharing finds them before the workload
//! runs.
//!
//! **Touches.** A running vCPU touches guest memory: every burst of `w` ns of CPU work touches
//! `w * pages_per_cpu_s / 1e9` pages of its VM's working set (a fractional remainder carries to
//! the next burst), at random or round-robin, a `write_fraction` of them writing new private
//! content. The touches are made when the burst starts, through [`MemHost::read`] /
//! [`MemHost::write`]:
//!
//! - a hit costs nothing; an in-memory fault (first touch, balloon pop, decompression,
//!   copy-on-write break) adds its stall to the burst's CPU work (hypervisor time on that vCPU);
//! - a swapped page stops the touches: the vCPU is not runnable until the synchronous swap-in
//!   completes (it halts until then and resumes the rest of its touches, then the burst), which
//!   the `mem` table shows as %SWPWT;
//! - a blocked allocation (low state, or no free page) halts the vCPU until the retry time.
//!
//! **CPU costs.** The CPU the host spends for a VM on sharing scans and compression during a
//! policy tick is owed by that VM and added to the next burst of one of its vCPUs, as [S1 §4.3]
//! and [S2 Table 4] charge them to the VM.
//!
//! **Swap device.** Without storage in the scenario, swap goes to
//! [`FixedLatencySwapStandIn`] (fixed latencies from the spec, no queueing).
//!
//! # Counters
//! `mem` (one row per powered-on VM per sample, MB as esxtop shows them): MEMSZ, GRANT (backed by
//! machine memory now), MAPPED ([S2 §3.2]'s ever-touched pages, no esxtop column), CNSM, SZTGT, TCHD, TCHD_W (working set), MCTLSZ, MCTLTGT, SWCUR, SWTGT, SWR/s, SWW/s, ZIP/s,
//! UNZIP/s, ZIP (compressed MB), CACHEUSD, SHRD, ZERO, SHRDSVD, %SWPWT, COWH/s (copy-on-write
//! breaks), MEMCPU_ms (CPU charged for scans and compression in the interval); `mem_host`:
//! PMEM, FREE, the state (0 high, 1 soft, 2 hard, 3 low); `mem_guest` (VMs with a guest OS
//! model): the guest's KERNEL, CACHED, FREE, ANON, BALLOON and SWAPPED MB, its SWPIN/s and
//! SWPOUT/s (pages), %SWPWT (its threads' wait on its own swap-ins, not ESX's), the MB the
//! balloon took from the free list, page cache and anonymous memory (BLN_*, cumulative), and
//! double-paged pages (DBLPG, cumulative).
//!
//! **Guest OS model.** A VM whose memory section has `guest_os` touches anonymous pages of its
//! guest ([`crate::mem::guest`]): the guest maps them to guest pages, its balloon driver gives
//! free, then page-cache, then cold anonymous pages, and it swaps to its own virtual disk (the
//! VM's disk through the storage queues, else the stand-in device).
//!
//! # Known gaps
//! - A swap wait spanning a sample boundary counts in the interval it started in.
//! - An idle VM's scan cost is owed until its next burst.

use super::Simulation;
use crate::guest::Next;
use crate::mem::app::Apps;
use crate::mem::content::ZERO_CONTENT;
use crate::mem::spec::{pages_of, TouchPattern};
use crate::mem::{Access, MemScheduler, FixedLatencySwapStandIn, MemEvent, MemHost, MemoryImage, MemorySpec, SwapRequest, VmMemCounters, VmMemSpec, PAGE_BYTES};
use crate::storage::Op;
use crate::wiring::IoToken;
use crate::metrics::{Table, Value};
use crate::sim::{stream_seed, Rng, Time, NS_PER_S};
use crate::wiring::Post;
use crate::VmtwinResult;

/// Pages per MB (esxtop's unit).
const PAGES_PER_MB: f64 = 256.0;
/// A swap I/O token's batch with this bit set is a swap-in, the rest of it the waiting vCPU;
/// without it, a swap-out batch of the memory subsystem's numbering.
const SWAP_IN: u32 = 1 << 31;
/// A swap I/O token's batch with this bit set is the guest OS's own paging to its virtual disk.
const GUEST: u32 = 1 << 30;
/// With `SWAP_IN | GUEST`: the read is an application's page-cache miss, not a guest swap-in.
const FILE: u32 = 1 << 29;

/// Random touches whose pmap slots are prefetched before they are made.
const PREFETCH_AHEAD: u64 = 8;

/// How one VM touches its memory.
#[derive(Debug, Clone)]
struct Touch {
    start: u32,
    pages: u32,
    per_ns: f64,
    write_fraction: f64,
    pattern: TouchPattern,
    cursor: u32,
    /// through the guest OS model: `start` is 0 and pages are anonymous (guest-virtual) pages
    guest: bool,
    /// sequential only: (hot block pages, passes over the working set before it)
    hot: Option<(u32, u32)>,
    /// completed round-robin passes over the current span
    passes: u32,
    /// working-set phases still to come, last first: (start, pages)
    phases: Vec<(Time, u32)>,
}

/// A vCPU's memory side: its stream, the fractional touch carried over, and a burst waiting on
/// a swap-in or a blocked allocation.
#[derive(Debug, Clone)]
struct VcpuMem {
    rng: Rng,
    credit: f64,
    pending: Option<(Time, u64)>,
    /// when its swap-in went to the storage queues
    swap_issued: Time,
}

/// Where a VM's swap file is, when swap goes through the storage queues.
#[derive(Debug, Clone)]
struct SwapFile {
    disk: u32,
    span_bytes: u64,
    write_cursor: u64,
}

impl SwapFile {
    /// Where the next `len` bytes written go: appended at the cursor, wrapping to the file's
    /// start when they would pass its end (swapped-out batches are written sequentially).
    fn claim(&mut self, len: u64) -> u64 {
        if self.write_cursor + len > self.span_bytes {
            self.write_cursor = 0;
        }
        let off = self.write_cursor;
        self.write_cursor += len;
        off
    }
}

/// The memory subsystem as the run loop holds it.
pub(super) struct Memory {
    host: MemHost,
    spec: MemorySpec,
    /// the memory subsystem's index of each VM, once powered on
    index: Vec<Option<u32>>,
    touch: Vec<Touch>,
    vcpus: Vec<VcpuMem>,
    owed_ns: Vec<u64>,
    /// per VM, its swap file on a datastore (empty: swap goes to the stand-in device)
    swap_files: Vec<Option<SwapFile>>,
    /// per VM with a guest OS model and storage, the virtual disk its guest swaps to
    guest_disks: Vec<Option<SwapFile>>,
    /// the VM of each memory index
    vm_of: Vec<u32>,
    prev: Vec<VmMemCounters>,
    last_sample: Time,
    vm_table: Table,
    host_table: Table,
    guest_table: Table,
    /// the VMs' applications (`mem_app`), when any VM runs one
    apps: Option<Apps>,
    /// per datastore with limited swap space, the bytes its powered-on VMs' swap files take
    swap_taken: std::collections::BTreeMap<String, u64>,
}

fn vm_schema() -> Table {
    let f = Value::F64(0.0);
    Table::with_schema(&[
        ("time_s", f),
        ("vm_id", Value::U32(0)),
        ("MEMSZ", f),
        ("GRANT", f),
        ("MAPPED", f),
        ("CNSM", f),
        ("SZTGT", f),
        ("TCHD", f),
        ("TCHD_W", f),
        ("%ACTVS", f),
        ("%ACTVF", f),
        ("MCTLSZ", f),
        ("MCTLTGT", f),
        ("SWCUR", f),
        ("SWTGT", f),
        ("SWR/s", f),
        ("SWW/s", f),
        ("ZIP/s", f),
        ("UNZIP/s", f),
        ("ZIP", f),
        ("CACHEUSD", f),
        ("SHRD", f),
        ("ZERO", f),
        ("SHRDSVD", f),
        ("%SWPWT", f),
        ("COWH/s", f),
        ("MEMCPU_ms", f),
    ])
}

/// The guest OS model's view, per VM with one (MB as the guest's `free` shows them; rates in
/// pages per second as its `vmstat` does).
fn guest_schema() -> Table {
    let f = Value::F64(0.0);
    Table::with_schema(&[
        ("time_s", f),
        ("vm_id", Value::U32(0)),
        ("KERNEL", f),
        ("CACHED", f),
        ("FREE", f),
        ("ANON", f),
        ("BALLOON", f),
        ("SWAPPED", f),
        ("SWPIN/s", f),
        ("SWPOUT/s", f),
        ("%SWPWT", f),
        ("BLN_FREE", f),
        ("BLN_CACHE", f),
        ("BLN_ANON", f),
        ("DBLPG", f),
    ])
}

fn host_schema() -> Table {
    let f = Value::F64(0.0);
    Table::with_schema(&[("time_s", f), ("PMEM", f), ("FREE", f), ("state", Value::U32(0))])
}

impl Memory {
    /// Pages of each VM and how they are touched, checked against the spec.
    fn new(sim: &Simulation, spec: &MemorySpec) -> VmtwinResult<Self> {
        let bytes: Vec<u64> = sim.spec.vms.iter().map(|v| v.memory_bytes).collect();
        spec.validate(&bytes)?;
        let nodes = sim.topo.pcpus.iter().map(|p| p.node).max().map_or(1, |n| n + 1);
        let host_pages = pages_of(sim.spec.host.memory_bytes);
        let params = spec.params(host_pages)?;
        let per_node = host_pages / u64::from(nodes);
        if per_node == 0 || per_node > u64::from(u32::MAX) {
            crate::invalid!("host.memory", format!("{} bytes", sim.spec.host.memory_bytes), "at least one 4 KiB page per NUMA node, at most 1 TiB");
        }
        let swap = FixedLatencySwapStandIn { read_ns: spec.standin_read_ns, write_ns: spec.standin_write_ns, ..Default::default() };
        let host = MemHost::new(params, nodes, per_node as u32, Box::new(swap), stream_seed(sim.spec.seed, "mem", 0))?;
        let touch = spec
            .vms
            .iter()
            .zip(&bytes)
            .map(|(v, &b)| {
                let t = &v.touch;
                let guest = v.guest_os.is_some();
                Touch {
                    start: if guest { 0 } else { pages_of(t.working_set_offset_bytes) as u32 },
                    pages: if guest { v.anon_pages(b).max(1) } else { pages_of(t.working_set_bytes.unwrap_or(b)).max(1) as u32 },
                    guest,
                    hot: t.hot_block_bytes.map(|b| ((pages_of(b) as u32).max(1), t.hot_block_after_passes)),
                    passes: 0,
                    per_ns: t.pages_per_cpu_s / NS_PER_S as f64,
                    write_fraction: t.write_fraction,
                    pattern: t.pattern,
                    cursor: 0,
                    phases: t.phases.iter().rev().map(|p| (p.at_ns, (pages_of(p.working_set_bytes) as u32).max(1))).collect(),
                }
            })
            .collect();
        let mut vcpus = Vec::with_capacity(sim.guests.len());
        for v in &sim.vms {
            for k in 0..v.vcpus {
                vcpus.push(VcpuMem { rng: Rng::new(stream_seed(sim.spec.seed, &format!("{}/mem", v.name), k)), credit: 0.0, pending: None, swap_issued: 0 });
            }
        }
        let n = sim.vms.len();
        // with storage, every VM swaps to its swap file (`<vm>.vswp`) on a datastore, through
        // the storage queues; without, to the stand-in
        let mut swap_files = vec![None; n];
        let mut guest_disks = vec![None; n];
        if let Some(storage) = &sim.storage {
            for (i, v) in spec.vms.iter().enumerate() {
                let name = &sim.vms[i].name;
                let path = format!("vms[{i}].guest_memory.swap_datastore");
                let Some(ds) = &v.swap_datastore else {
                    crate::invalid!(path, "none", "a datastore of the storage section (with storage, hypervisor swap goes to a swap file on a datastore)");
                };
                let file = format!("{name}.vswp");
                let disk = storage.disk(&file).map_err(|_| crate::VmtwinError::InvalidScenario {
                    path: path.clone(),
                    value: ds.clone(),
                    allowed: format!("a datastore with the VM's swap file '{file}' among the storage section's disks"),
                })?;
                swap_files[i] = Some(SwapFile { disk, span_bytes: bytes[i], write_cursor: 0 });
                if v.guest_os.is_some() {
                    let path = format!("vms[{i}].guest_memory.guest_os");
                    let Some(d) = &v.guest_swap_disk else {
                        crate::invalid!(path, "no virtual disk", "a VM with a disk in the storage section (with storage, the guest swaps to its own virtual disk)");
                    };
                    let disk = storage.disk(d).map_err(|_| crate::VmtwinError::InvalidScenario { path, value: d.clone(), allowed: "one of the storage section's disks".into() })?;
                    guest_disks[i] = Some(SwapFile { disk, span_bytes: bytes[i], write_cursor: 0 });
                }
            }
        } else if let Some(i) = spec.vms.iter().position(|v| v.swap_datastore.is_some()) {
            crate::invalid!(
                format!("vms[{i}].guest_memory.swap_datastore"),
                spec.vms[i].swap_datastore.clone().unwrap_or_default(),
                "a datastore of the storage section (the scenario has none: swap goes to the stand-in device)"
            );
        }
        Ok(Memory {
            host,
            spec: spec.clone(),
            index: vec![None; n],
            touch,
            vcpus,
            owed_ns: vec![0; n],
            swap_files,
            guest_disks,
            vm_of: Vec::new(),
            prev: vec![VmMemCounters::default(); n],
            last_sample: 0,
            vm_table: vm_schema(),
            host_table: host_schema(),
            guest_table: guest_schema(),
            apps: Apps::new(spec.vms.iter().map(|v| v.app.clone()).collect(), sim.guests.len()),
            swap_taken: Default::default(),
        })
    }

    /// The host's memory, for reading counters.
    pub(super) fn host(&self) -> &MemHost {
        &self.host
    }

    /// Make `n` touches for vCPU `vc` of VM `vm` (memory index `mi`) at `now`. Returns the
    /// stall to add to the burst, or, when a touch must wait, `Err((until, touches left))`.
    /// `until` is `None` for a swap-in through the storage queues (its completion wakes the vCPU).
    fn touches(&mut self, vm: usize, mi: u32, vc: usize, n: u64, now: Time) -> Result<Time, (Option<Time>, Time, u64)> {
        let mut stall = 0;
        let t = &mut self.touch[vm];
        while let Some(&(at, pages)) = t.phases.last() {
            if now < at {
                break;
            }
            (t.pages, t.cursor) = (pages, 0);
            t.phases.pop();
        }
        // random touches miss the cache: a copy of the vCPU's stream runs PREFETCH_AHEAD touches
        // ahead, drawing the same numbers, and prefetches those pages' pmap slots
        let mut ahead = (self.touch[vm].pattern == TouchPattern::Random && !self.touch[vm].guest).then(|| self.vcpus[vc].rng.clone());
        let mut ahead_n = 0u64;
        for done in 0..n {
            if let Some(a) = ahead.as_mut() {
                let t = &self.touch[vm];
                while ahead_n < n.min(done + PREFETCH_AHEAD) {
                    let ppn = t.start + ((a.uniform() * f64::from(t.pages)) as u32).min(t.pages - 1);
                    if t.write_fraction > 0.0 {
                        a.uniform();
                    }
                    self.host.prefetch(mi, ppn);
                    ahead_n += 1;
                }
            }
            // an application's operation makes its file reads first
            if let Some(f) = self.apps.as_mut().and_then(|a| a.take_file_read(vc, vm, &mut self.vcpus[vc].rng)) {
                let cached = self.host.guest(mi).and_then(|g| g.cached_file(f)).is_some();
                let access = self.host.guest_file_read(mi, f, now);
                let apps = self.apps.as_mut().expect("a file read comes from an application");
                apps.file_read_done(vc, vm, cached, matches!(access, Access::Blocked { .. }));
                match access {
                    Access::Hit => {}
                    Access::Fault { stall_ns } => stall += stall_ns,
                    Access::SwapWait { until } => return Err((Some(until), stall, n - done - 1)),
                    Access::SwapIo => return Err((None, stall, n - done - 1)),
                    Access::Blocked { retry_at } => return Err((Some(retry_at), stall, n - done)),
                }
                continue;
            }
            let t = &mut self.touch[vm];
            let g = &mut self.vcpus[vc];
            let ppn = t.start
                + match t.pattern {
                    TouchPattern::Random => ((g.rng.uniform() * f64::from(t.pages)) as u32).min(t.pages - 1),
                    TouchPattern::Sequential => {
                        // round-robin over the working set, or over the hot block once its
                        // passes are done
                        let span = match t.hot {
                            Some((hot, after)) if t.passes >= after => hot,
                            _ => t.pages,
                        };
                        let c = t.cursor % span;
                        t.cursor = c + 1;
                        if t.cursor == span {
                            t.cursor = 0;
                            t.passes += 1;
                        }
                        c
                    }
                };
            let write = t.write_fraction > 0.0 && g.rng.uniform() < t.write_fraction;
            let access = if t.guest {
                // an application's first touch of a page fills it with its data (a buffer pool
                // page read from its files), not the page the guest zeroed
                let fill = self.apps.as_ref().is_some_and(|a| a.runs(vm)) && self.host.guest(mi).is_some_and(|g| g.resident(ppn).is_none() && g.swapped_content(ppn).is_none());
                let cid = (write || fill).then(|| self.host.private_content(mi));
                self.host.guest_access(mi, ppn, cid, now)
            } else if write {
                let cid = self.host.private_content(mi);
                self.host.write(mi, ppn, cid, now)
            } else {
                self.host.read(mi, ppn, now)
            };
            match access {
                Access::Hit => {}
                Access::Fault { stall_ns } => stall += stall_ns,
                // the touch was served by the swap-in: the rest follow it
                Access::SwapWait { until } => return Err((Some(until), stall, n - done - 1)),
                Access::SwapIo => return Err((None, stall, n - done - 1)),
                // nothing happened: this touch is made again
                Access::Blocked { retry_at } => return Err((Some(retry_at), stall, n - done)),
            }
        }
        Ok(stall)
    }
}

impl Simulation {
    /// Build the memory subsystem when the spec has a memory section, and start its ticks.
    pub(super) fn build_memory(&mut self) -> VmtwinResult<()> {
        let Some(spec) = self.spec.memory.clone() else { return Ok(()) };
        let mut mem = Memory::new(self, &spec)?;
        if mem.swap_files.iter().any(Option::is_some) {
            mem.host.queue_swap_io();
        }
        mem.host.start(0, &mut Post { queue: &mut self.queue, slab: &mut self.mem_events });
        self.mem = Some(Box::new(mem));
        Ok(())
    }

    /// Power VM `vm` on in memory (admission control of its reservation and overhead).
    pub(super) fn mem_power_on(&mut self, vm: u32) -> VmtwinResult<()> {
        let home = self.sched.home_of(vm);
        let Some(mem) = self.mem.as_mut() else { return Ok(()) };
        let v = &mem.spec.vms[vm as usize];
        let pages = pages_of(self.spec.vms[vm as usize].memory_bytes) as u32;
        let mut s = VmMemSpec::new(&self.spec.vms[vm as usize].name, pages);
        s.min_pages = pages_of(v.reservation_bytes) as u32;
        s.limit_pages = v.limit_bytes.map(|b| pages_of(b).min(u64::from(pages)) as u32);
        s.shares = v.shares;
        s.overhead_pages = pages_of(v.overhead_bytes) as u32;
        s.balloon_driver = v.balloon_driver;
        s.content = (&v.content).into();
        s.guest = v.guest_os;
        s.anon_pages = v.anon_pages(self.spec.vms[vm as usize].memory_bytes);
        let s_anon = s.anon_pages;
        s.home_node = if home == crate::cpu::NONE { 0 } else { home };
        if let Some(path) = &v.image {
            s.image = Some(MemoryImage::read(std::path::Path::new(path))?);
        }
        // with a guest OS model, what it booted: its kernel and boot page cache
        let boot = match &v.guest_os {
            Some(g) => (g.kernel_pages(pages) + pages_of(g.boot_cache_bytes) as u32).min(pages),
            None => {
                let images = ((v.content.os_fraction + v.content.app_fraction).min(1.0) * f64::from(pages)) as u32;
                images + ((v.content.os_copy_fraction * f64::from(pages)) as u32).min(pages - images)
            }
        };
        // admission control of the swap file [research/memory.md C.22]: configured memory minus
        // reservation must fit on its datastore beside the swap files of the VMs already on
        let swap = match v.swap_datastore.as_ref().and_then(|ds| Some((ds, *mem.spec.swap_space_bytes.get(ds)?))) {
            Some((ds, space)) => {
                let need = self.spec.vms[vm as usize].memory_bytes.saturating_sub(v.reservation_bytes);
                let taken = mem.swap_taken.get(ds).copied().unwrap_or(0);
                if taken + need > space {
                    return Err(crate::VmtwinError::AdmissionControl {
                        entity: self.spec.vms[vm as usize].name.clone(),
                        reason: format!(
                            "its swap file needs {need} bytes (configured memory {} - reservation {}) on datastore '{ds}', which has {} bytes free \
                             ({space} left by its virtual disks, {taken} taken by the swap files of VMs already on)",
                            self.spec.vms[vm as usize].memory_bytes,
                            v.reservation_bytes,
                            space - taken
                        ),
                    });
                }
                Some((ds.clone(), need))
            }
            None => None,
        };
        let mi = mem.host.power_on(s)?;
        if let Some((ds, need)) = swap {
            *mem.swap_taken.entry(ds).or_default() += need;
        }
        if let Some(a) = v.app.as_ref().filter(|a| a.file_pages() > 0) {
            mem.host.set_guest_file_pages(mi, a.file_pages());
        }
        mem.index[vm as usize] = Some(mi);
        mem.vm_of.push(vm);
        // the guest has loaded its OS image and application at boot: those pages are mapped
        // (and can be shared) before its workload's first burst
        for ppn in 0..boot {
            if let Access::Blocked { .. } = mem.host.read(mi, ppn, self.now) {
                break;
            }
        }
        // a guest that zeroes its memory at boot (Windows [S2 §3.2]) has written the zero page
        // over every page it did not load: all its memory is mapped once boot finishes
        if v.guest_os.is_some_and(|g| g.zero_at_boot) {
            for ppn in boot..pages {
                if let Access::Blocked { .. } = mem.host.write(mi, ppn, ZERO_CONTENT, self.now) {
                    break;
                }
            }
        }
        // an application starts warm: its working set holds its data (a database's buffer pool
        // after warm-up, desktops after login), so its anonymous pages are mapped with private
        // contents before its first operation
        if v.app.is_some() {
            for vpn in 0..s_anon {
                let cid = mem.host.private_content(mi);
                if !matches!(mem.host.guest_access(mi, vpn, Some(cid), self.now), Access::Hit | Access::Fault { .. }) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// A memory event came due (out of line, as storage's). The CPU a policy tick spends for
    /// each VM (scans, compression) is owed by that VM.
    #[inline(never)]
    pub(super) fn route_mem(&mut self, slot: u32, t: Time) {
        let ev = self.mem_events.take(slot);
        if let MemEvent::Resume { vcpu } = ev {
            self.mem_resume(vcpu, t);
            return;
        }
        let mem = self.mem.as_mut().expect("memory events come from the memory subsystem");
        let tick = ev == MemEvent::Tick;
        let before: Vec<u64> = if tick { (0..mem.host.vm_count()).map(|i| mem.host.counters(i).cpu_ns).collect() } else { Vec::new() };
        mem.host.handle(ev, t, &mut Post { queue: &mut self.queue, slab: &mut self.mem_events });
        if tick {
            for (vm, idx) in mem.index.iter().enumerate() {
                if let Some(i) = *idx {
                    mem.owed_ns[vm] += mem.host.counters(i).cpu_ns - before[i as usize];
                }
            }
        }
        self.submit_swap(None, t);
    }

    /// Submit the memory subsystem's swap requests to the storage queues: swap-outs as writes
    /// to the VM's swap file, a swap-in (made by vCPU `vcpu`) as a one-page read.
    fn submit_swap(&mut self, vcpu: Option<u32>, t: Time) {
        let Some(mem) = self.mem.as_mut() else { return };
        if !mem.host.has_swap_requests() {
            return;
        }
        let storage = self.storage.as_mut().expect("swap requests are queued only with storage");
        let post = &mut Post { queue: &mut self.queue, slab: &mut self.storage_events };
        for r in mem.host.take_swap_requests() {
            let (mi, op, offset, len, batch) = match r {
                SwapRequest::Write { vm, batch, pages } => {
                    let len = u64::from(pages) * PAGE_BYTES as u64;
                    let off = mem.swap_files[mem.vm_of[vm as usize] as usize].as_mut().expect("every VM has a swap file with storage").claim(len);
                    (vm, Op::Write, off, len, batch)
                }
                SwapRequest::Read { vm, ppn } => {
                    let v = vcpu.expect("a swap-in comes from a vCPU's touch");
                    mem.vcpus[v as usize].swap_issued = t;
                    (vm, Op::Read, u64::from(ppn) * PAGE_BYTES as u64, PAGE_BYTES as u64, SWAP_IN | v)
                }
                SwapRequest::GuestWrite { vm, pages } => {
                    let len = u64::from(pages) * PAGE_BYTES as u64;
                    let off = mem.guest_disks[mem.vm_of[vm as usize] as usize].as_mut().expect("a guest OS model has its disk with storage").claim(len);
                    (vm, Op::Write, off, len, GUEST)
                }
                SwapRequest::GuestRead { vm, vpn } => {
                    let v = vcpu.expect("a guest swap-in comes from a vCPU's touch");
                    mem.vcpus[v as usize].swap_issued = t;
                    (vm, Op::Read, u64::from(vpn) * PAGE_BYTES as u64, PAGE_BYTES as u64, SWAP_IN | GUEST | v)
                }
                SwapRequest::FileRead { vm, page } => {
                    let v = vcpu.expect("a file read comes from a vCPU's operation");
                    mem.vcpus[v as usize].swap_issued = t;
                    // the file set follows the guest's swap space on its virtual disk
                    let span = mem.guest_disks[mem.vm_of[vm as usize] as usize].as_ref().expect("a guest OS model has its disk with storage").span_bytes;
                    (vm, Op::Read, span + u64::from(page) * PAGE_BYTES as u64, PAGE_BYTES as u64, SWAP_IN | GUEST | FILE | v)
                }
            };
            let vm = mem.vm_of[mi as usize];
            let files = if batch & GUEST != 0 { &mem.guest_disks } else { &mem.swap_files };
            let disk = files[vm as usize].as_ref().expect("every VM has a swap file with storage").disk;
            let token = IoToken::Swap { vm, batch }.encode();
            storage.submit(t, disk, op, offset, len as u32, token, post).expect("the swap file is a disk of the stack");
        }
    }

    /// A swap I/O of VM `vm` completed at `t` (routed by `simulation/storage.rs`): a swap-in
    /// wakes its vCPU, which resumes its touches; a swap-out frees its machine pages.
    pub(super) fn swap_io_done(&mut self, vm: u32, batch: u32, t: Time) {
        let mem = self.mem.as_mut().expect("swap I/O comes from the memory subsystem");
        let mi = mem.index[vm as usize].expect("a powered-on VM swaps");
        if batch & SWAP_IN != 0 {
            let v = batch & !(SWAP_IN | GUEST | FILE);
            let waited = t - mem.vcpus[v as usize].swap_issued;
            if batch & FILE != 0 {
                // an application's page-cache miss: its operation's latency holds the wait
            } else if batch & GUEST != 0 {
                mem.host.guest_read_done(mi, waited);
            } else {
                mem.host.swap_read_done(mi, waited);
            }
            self.mem_resume(v, t);
        } else if batch & GUEST != 0 {
            // the guest's swap-out reached its virtual disk: nothing waits for it
        } else {
            mem.host.swap_write_done(batch);
        }
    }

    /// What vCPU `v` does next ([`Simulation::workload_next`]), with its memory touches.
    /// Inlined, one check of `mem` per call: a run without memory keeps its CPU path (a vCPU
    /// that waited on memory resumes through a memory event, not here).
    #[inline(always)]
    pub(super) fn next_with_mem(&mut self, v: u32, after_burst: bool) -> Next {
        let next = self.workload_next(v, after_burst);
        if self.mem.is_some() {
            self.mem_touch(v, next, after_burst)
        } else {
            next
        }
    }

    /// vCPU `v` waited for a swap-in or a blocked allocation: it goes on with the rest of its
    /// touches, then runs the burst it was holding.
    fn mem_resume(&mut self, v: u32, t: Time) {
        let mem = self.mem.as_mut().expect("called with memory only");
        let (work, n) = mem.vcpus[v as usize].pending.take().expect("a resumed vCPU holds a burst");
        // blocked (WAIT) since the access that missed; still blocked if another one misses
        if let Next::Work(w) = self.mem_burst(v, work, n) {
            self.sched.wait_to_idle(v, t);
            self.sched.wake(v, w, t, &mut self.queue);
        }
    }

    /// The touches of a new burst (`next` from the workload), with the CPU its VM owes.
    #[inline(never)]
    fn mem_touch(&mut self, v: u32, next: Next, after_burst: bool) -> Next {
        let mem = self.mem.as_mut().expect("called with memory only");
        let vm = self.sched.vcpus[v as usize].vm as usize;
        // an application's operation ends with its burst and the next begins with the next one,
        // with its own count of touches and file reads
        let app = mem.apps.as_mut().and_then(|a| a.next_op(v as usize, vm, after_burst, matches!(next, Next::Work(_)), self.now));
        let Next::Work(w) = next else { return next };
        let n = match app {
            Some(n) => n,
            None => {
                let g = &mut mem.vcpus[v as usize];
                g.credit += w as f64 * mem.touch[vm].per_ns;
                let n = g.credit.floor();
                g.credit -= n;
                n as u64
            }
        };
        let work = w + std::mem::take(&mut mem.owed_ns[vm]);
        self.mem_burst(v, work, n)
    }

    /// Make `n` touches for vCPU `v` before a burst of `work` ns: the burst with the stalls
    /// added, or a wait (blocked: WAIT, so %VMWAIT, where esxtop counts %SWPWT) that a `Resume` event ends: when the stand-in's
    /// swap-in completes or a blocked allocation may retry, or when the storage queues complete
    /// the swap-in ([`Simulation::swap_io_done`]).
    fn mem_burst(&mut self, v: u32, work: Time, n: u64) -> Next {
        let mem = self.mem.as_mut().expect("called with memory only");
        let vm = self.sched.vcpus[v as usize].vm as usize;
        let Some(mi) = mem.index[vm] else { return Next::Work(work) };
        match mem.touches(vm, mi, v as usize, n, self.now) {
            Ok(stall) => Next::Work(work + stall),
            Err((until, stall, left)) => {
                mem.vcpus[v as usize].pending = Some((work + stall, left));
                match until {
                    Some(until) => {
                        let post = &mut Post { queue: &mut self.queue, slab: &mut self.mem_events };
                        MemScheduler::at(post, until.max(self.now + 1), MemEvent::Resume { vcpu: v });
                    }
                    // the swap-in's completion resumes it (swap_io_done)
                    None => self.submit_swap(Some(v), self.now),
                }
                Next::Wait
            }
        }
    }

    /// Append the memory tables' rows for the interval ending at `now`.
    #[inline(never)]
    pub(super) fn mem_sample(&mut self, now: Time) {
        let Some(mem) = self.mem.as_mut() else { return };
        let t = now as f64 / NS_PER_S as f64;
        let interval_s = (now - mem.last_sample) as f64 / NS_PER_S as f64;
        mem.last_sample = now;
        let mb = |p: f64| p / PAGES_PER_MB;
        for (vm, idx) in mem.index.iter().enumerate() {
            let Some(i) = *idx else { continue };
            let s = mem.host.vm_stats(i);
            let c = s.counters;
            let p = std::mem::replace(&mut mem.prev[vm], c);
            let rate = |a: u64, b: u64| if interval_s > 0.0 { mb((a - b) as f64) / interval_s } else { 0.0 };
            let per_s = |a: u64, b: u64| if interval_s > 0.0 { (a - b) as f64 / interval_s } else { 0.0 };
            let wait_pct = if interval_s > 0.0 { 100.0 * (c.swap_wait_ns - p.swap_wait_ns) as f64 / (interval_s * NS_PER_S as f64) } else { 0.0 };
            mem.vm_table.push_row(&[
                ("time_s", Value::F64(t)),
                ("vm_id", Value::U32(vm as u32)),
                ("MEMSZ", Value::F64(mb(s.memsz as f64))),
                ("GRANT", Value::F64(mb(s.granted as f64))),
                ("MAPPED", Value::F64(mb(s.mapped as f64))),
                ("CNSM", Value::F64(mb(s.consumed))),
                ("SZTGT", Value::F64(mb(s.target))),
                ("TCHD", Value::F64(mb(s.active))),
                ("TCHD_W", Value::F64(mb(s.working_set as f64))),
                ("%ACTVS", Value::F64(100.0 * s.active_slow / s.memsz as f64)),
                ("%ACTVF", Value::F64(100.0 * s.active_fast / s.memsz as f64)),
                ("MCTLSZ", Value::F64(mb(s.mctlsz as f64))),
                ("MCTLTGT", Value::F64(mb(s.mctltgt as f64))),
                ("SWCUR", Value::F64(mb(s.swcur as f64))),
                ("SWTGT", Value::F64(mb(s.swtgt as f64))),
                ("SWR/s", Value::F64(rate(c.swap_in_pages, p.swap_in_pages))),
                ("SWW/s", Value::F64(rate(c.swap_out_pages, p.swap_out_pages))),
                ("ZIP/s", Value::F64(rate(c.zipped, p.zipped))),
                ("UNZIP/s", Value::F64(rate(c.unzipped, p.unzipped))),
                ("ZIP", Value::F64(mb(s.zipped as f64))),
                ("CACHEUSD", Value::F64(mb(s.cacheusd))),
                ("SHRD", Value::F64(mb(s.shrd as f64))),
                ("ZERO", Value::F64(mb(s.zero as f64))),
                ("SHRDSVD", Value::F64(mb(s.shrdsvd))),
                ("%SWPWT", Value::F64(wait_pct)),
                ("COWH/s", Value::F64(per_s(c.cow_breaks, p.cow_breaks))),
                ("MEMCPU_ms", Value::F64((c.cpu_ns - p.cpu_ns) as f64 / 1e6)),
            ]);
            if mem.spec.vms[vm].guest_os.is_some() {
                let (g, q) = (c.guest, p.guest);
                let gwait = if interval_s > 0.0 { 100.0 * (g.swap_wait_ns - q.swap_wait_ns) as f64 / (interval_s * NS_PER_S as f64) } else { 0.0 };
                mem.guest_table.push_row(&[
                    ("time_s", Value::F64(t)),
                    ("vm_id", Value::U32(vm as u32)),
                    ("KERNEL", Value::F64(mb(s.guest_kernel as f64))),
                    ("CACHED", Value::F64(mb(s.guest_cache as f64))),
                    ("FREE", Value::F64(mb(s.guest_free as f64))),
                    ("ANON", Value::F64(mb(s.guest_anon as f64))),
                    ("BALLOON", Value::F64(mb(s.mctlsz as f64))),
                    ("SWAPPED", Value::F64(mb(s.guest_swapped as f64))),
                    ("SWPIN/s", Value::F64(per_s(g.swap_in, q.swap_in))),
                    ("SWPOUT/s", Value::F64(per_s(g.swap_out, q.swap_out))),
                    ("%SWPWT", Value::F64(gwait)),
                    ("BLN_FREE", Value::F64(mb(g.balloon_free as f64))),
                    ("BLN_CACHE", Value::F64(mb(g.balloon_cache as f64))),
                    ("BLN_ANON", Value::F64(mb(g.balloon_anon as f64))),
                    ("DBLPG", Value::F64(g.double_paging as f64)),
                ]);
            }
        }
        if let Some(a) = mem.apps.as_mut() {
            a.sample(t, (interval_s * NS_PER_S as f64).round() as Time, &mem.index);
        }
        mem.host_table.push_row(&[
            ("time_s", Value::F64(t)),
            ("PMEM", Value::F64(mb(mem.host.total_pages() as f64))),
            ("FREE", Value::F64(mb(mem.host.free_pages() as f64))),
            ("state", Value::U32(mem.host.state() as u32)),
        ]);
    }

    /// The memory tables, when memory is modelled.
    pub(super) fn mem_tables(&self) -> Vec<(&'static str, &Table)> {
        self.mem.as_ref().map_or(Vec::new(), |m| {
            let mut v = vec![("mem", &m.vm_table), ("mem_host", &m.host_table)];
            if m.spec.vms.iter().any(|v| v.guest_os.is_some()) {
                v.push(("mem_guest", &m.guest_table));
            }
            if let Some(a) = &m.apps {
                v.push(("mem_app", a.table()));
            }
            v
        })
    }

    /// The memory tables' rows since the last drain.
    pub(super) fn drain_mem_tables(&mut self) -> Vec<(&'static str, Table)> {
        self.mem.as_mut().map_or(Vec::new(), |m| {
            let mut v = vec![("mem", m.vm_table.take()), ("mem_host", m.host_table.take())];
            if m.spec.vms.iter().any(|v| v.guest_os.is_some()) {
                v.push(("mem_guest", m.guest_table.take()));
            }
            if let Some(a) = m.apps.as_mut() {
                v.push(("mem_app", a.take_table()));
            }
            v
        })
    }

    /// The memory subsystem, when the scenario models memory (tests and tools read its state).
    pub fn mem_host(&self) -> Option<&MemHost> {
        self.mem.as_ref().map(|m| m.host())
    }

    /// Memory index of VM `vm` in [`Simulation::mem_host`], once powered on.
    pub fn mem_index(&self, vm: u32) -> Option<u32> {
        self.mem.as_ref().and_then(|m| m.index[vm as usize])
    }
}
