//! One host's memory: machine pages per NUMA node, the VMs' pmaps, and the reclamation loop.
//!
//! **Machine memory** is a free list of machine pages (MPNs) per NUMA node; a VM allocates from
//! its home node first. ESX's own memory (`host_overhead_pages`) and each VM's overhead memory
//! (frame buffer, pmap, shadow page tables [S1 §6.1]) are taken at construction and power-on.
//! Every machine page is in exactly one place: free, host or VM overhead, a VM's regular page,
//! a shared frame, a VM's compression cache, or an asynchronous swap-out still being written.
//!
//! **Guest accesses** ([`MemHost::read`], [`MemHost::write`]) go through the pmap. A backed
//! page is a hit (a write to a shared page breaks copy-on-write: a private copy, one reference
//! fewer). An unbacked page faults and is backed by a free machine page: a first touch gets the
//! contents the guest puts there at boot (the content model's layout), a ballooned page "pops"
//! the balloon and gets a zeroed page [S1 §3.2], a compressed page is decompressed (a short
//! stall), and a swapped page is read back from the swap device *synchronously*: the access
//! returns [`Access::SwapWait`] with the completion time, which the CPU side turns into the
//! vCPU's %SWPWT. If the VM is blocked (low state, above its target) or no machine page is
//! free, the access returns [`Access::Blocked`]: nothing happened, retry at the given time. A
//! VM is never killed or suspended.
//!
//! **The tick** (every `tick_ns`, 1 s) runs the policy: the sharing scanner examines random
//! pages of every VM; VMs whose sampling period ended fold their sample into the active
//! estimate and draw a new one; the free-memory state is updated; targets are recomputed
//! ([`crate::mem::targets`]); each balloon driver polls its target (MCTLTGT) and inflates or
//! deflates at most its rate, up to its maximum; in the swapping states the swap daemon picks
//! random victims of VMs above target and, for each, tries sharing first, then (2013 preset)
//! compression into the VM's cache (when the cache needs one more page, a regular victim's own
//! page becomes it), and otherwise writes it out asynchronously in clusters: its machine page
//! is freed when [`MemEvent::SwapOutDone`] arrives.
//!
//! The allocation `P` the policy uses is the VM's regular pages, its compression cache (quarters
//! / 4) and its shared pages at the host-wide pages-per-shared-page ratio, so the VMs' `P` add up
//! exactly to the machine pages their pages occupy; the counters ([`MemHost::vm_stats`]) charge
//! each shared page its own 1/n.
//!
//! # Tunables
//! Every field of `MemParams`; per VM the fields of [`VmMemSpec`].
//!
//! # Counters
//! Per VM ([`VmMemStats`]): MEMSZ, GRANT (backed now: regular + shared), mapped (ever touched,
//! [S2 §3.2]), consumed, TCHD (active), working set, SZTGT,
//! MCTLSZ, MCTLTGT, SWCUR, SWTGT, SWR/SWW pages, ZIP/UNZIP pages, CACHEUSD, SHRD, ZERO, SHRDSVD,
//! swap wait (%SWPWT's numerator), CPU charged for scans and compression. Host: state, free pages.
//!
//! # Known gaps
//! - The guest chooses balloon victims; with no guest model yet the driver takes random pages,
//!   and the guest's own paging to its virtual disk is not modelled.
//! - A page touched while its swap-out is in flight is read back from the device (ESX would
//!   rescue it from memory).
//! - The compression cache packs quarters perfectly (no fragmentation).
//! - Admission control checks memory reservations and overhead, not swap space.
//! - Swap goes to [`crate::mem::FixedLatencySwapStandIn`] until the storage wiring.

use super::charge::ShareCharge;
use super::guest::{FileRead, GuestCounters, GuestOs, GuestParams, GuestRole, GuestTouch};
use super::content::{compressed_quarters, mix64, ContentSpec, MemoryImage, ZERO_CONTENT};
use super::params::{MemParams, Preset};
use super::pmap::{PageState, Pmap, MAX_MPN};
use super::policy::{next_state, targets, ActiveEstimate, MemClaim, MemState};
use super::sharing::{Frame, FrameKind, FrameTable};
use super::swap::SwapDevice;
use crate::sim::{stream_seed, Rng, Time};
use crate::{invalid, VmtwinError, VmtwinResult};

/// Events the memory subsystem schedules for itself; the run loop hands each back to
/// [`MemHost::handle`] at its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemEvent {
    /// the periodic policy tick
    Tick,
    /// an asynchronous swap-out write completed; its machine pages can be freed
    SwapOutDone {
        /// in-flight batch
        batch: u32,
    },
    /// the run loop's own: vCPU `vcpu`, which waited for a swap-in or a blocked allocation,
    /// resumes its burst (the host ignores it)
    Resume {
        /// global vCPU index
        vcpu: u32,
    },
}

/// A swap I/O for the storage subsystem (see [`MemHost::queue_swap_io`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapRequest {
    /// write `pages` pages of VM `vm` to its swap file, as swap-out batch `batch`; report with
    /// [`MemHost::swap_write_done`]
    Write {
        /// VM (memory index)
        vm: u32,
        /// in-flight batch
        batch: u32,
        /// pages
        pages: u32,
    },
    /// read page `ppn` of VM `vm` back; report with [`MemHost::swap_read_done`]
    Read {
        /// VM (memory index)
        vm: u32,
        /// guest page
        ppn: u32,
    },
    /// the guest OS writes `pages` anonymous pages to its own virtual disk (no completion
    /// needed)
    GuestWrite {
        /// VM (memory index)
        vm: u32,
        /// pages
        pages: u32,
    },
    /// the guest OS reads anonymous page `vpn` back from its virtual disk; the touching vCPU
    /// waits; report with [`MemHost::guest_read_done`]
    GuestRead {
        /// VM (memory index)
        vm: u32,
        /// anonymous (guest-virtual) page
        vpn: u32,
    },
    /// the guest OS reads file page `page` from its virtual disk into its page cache (an
    /// application's page-cache miss, [`MemHost::guest_file_read`]); the reading vCPU waits
    FileRead {
        /// VM (memory index)
        vm: u32,
        /// file page
        page: u32,
    },
}

/// Where the memory subsystem schedules its events (the run loop's queue).
pub trait MemScheduler {
    /// Deliver `ev` back at time `t`.
    fn at(&mut self, t: Time, ev: MemEvent);
}

/// Outcome of a guest access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// backed; no fault
    Hit,
    /// a fault served in memory; the vCPU stalls `stall_ns`
    Fault {
        /// stall in ns
        stall_ns: Time,
    },
    /// a synchronous swap-in: the vCPU waits until `until` (esxtop %SWPWT)
    SwapWait {
        /// completion of the read
        until: Time,
    },
    /// a synchronous swap-in submitted to the storage queues ([`MemHost::queue_swap_io`]): the
    /// vCPU waits until the run loop reports its completion ([`MemHost::swap_read_done`])
    SwapIo,
    /// the access could not be served (allocation blocked or no free page); retry at `retry_at`
    Blocked {
        /// next policy tick
        retry_at: Time,
    },
}

/// A VM as the memory subsystem sees it.
#[derive(Debug, Clone)]
pub struct VmMemSpec {
    /// name (seeds the VM's random stream)
    pub name: String,
    /// configured memory in pages (MEMSZ)
    pub pages: u32,
    /// reservation in pages
    pub min_pages: u32,
    /// limit in pages (`None`: the configured size)
    pub limit_pages: Option<u32>,
    /// memory shares
    pub shares: f64,
    /// overhead memory in pages (32 MB = 8192 typical [S1 §6.1])
    pub overhead_pages: u32,
    /// NUMA node to allocate from first
    pub home_node: u32,
    /// whether the balloon driver runs in the guest
    pub balloon_driver: bool,
    /// content model of its pages
    pub content: ContentSpec,
    /// raw memory image: if given, its pages' contents (hashed from bytes) replace the model's
    pub image: Option<MemoryImage>,
    /// the guest OS model ([`crate::mem::guest`]), if modelled: its workload then touches an
    /// anonymous region of `anon_pages` pages through the guest
    pub guest: Option<GuestParams>,
    /// size of the guest's anonymous region (with `guest`)
    pub anon_pages: u32,
}

impl VmMemSpec {
    /// A VM of `pages` pages with normal shares (10 per MB, as vSphere's "normal"), no
    /// reservation, 8192 overhead pages, a balloon driver and private content.
    pub fn new(name: &str, pages: u32) -> Self {
        VmMemSpec {
            name: name.into(),
            pages,
            min_pages: 0,
            limit_pages: None,
            shares: f64::from(pages) * 10.0 / 256.0,
            overhead_pages: 8192,
            home_node: 0,
            balloon_driver: true,
            content: ContentSpec::default(),
            image: None,
            guest: None,
            anon_pages: 0,
        }
    }
}

/// Cumulative per-VM event counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmMemCounters {
    /// pages read back from swap (SWR)
    pub swap_in_pages: u64,
    /// pages written to swap (SWW)
    pub swap_out_pages: u64,
    /// pages compressed (ZIP)
    pub zipped: u64,
    /// pages decompressed (UNZIP)
    pub unzipped: u64,
    /// copy-on-write breaks
    pub cow_breaks: u64,
    /// accesses to ballooned pages (balloon pops)
    pub balloon_pops: u64,
    /// pages the balloon driver inflated
    pub balloon_inflated: u64,
    /// pages examined by the sharing scanner
    pub scanned: u64,
    /// time the VM's vCPUs waited on swap-in, in ns (%SWPWT's numerator)
    pub swap_wait_ns: u64,
    /// CPU charged for sharing scans and compression attempts, in ns
    pub cpu_ns: u64,
    /// accesses refused because allocation was blocked or memory was exhausted
    pub blocked: u64,
    /// the guest OS's counts (zero without a guest model)
    pub guest: GuestCounters,
}

/// A VM's memory counters at one instant, in pages (esxtop's names in the docs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VmMemStats {
    /// MEMSZ: configured pages
    pub memsz: u64,
    /// mapped pages in [S2 §3.2]'s sense: ever touched, "considered as mapped through the lifetime
    /// of the VM" (a ballooned, swapped or compressed page stays mapped); caps SZTGT. No esxtop column.
    pub mapped: u64,
    /// GRANT (esxtop) / granted (vCenter): guest pages backed by a machine page now, private or
    /// shared (Regular + Shared). A ballooned, swapped, compressed or deflated page is not backed, so
    /// not granted (vSphere Resource Management, "Measuring and Differentiating Types of Memory
    /// Usage": guest memory is not mapped to machine memory "when the VMkernel swaps out or balloons
    /// guest physical memory"; [S2 §3.4]: any access to a compressed page faults). Hence
    /// consumed = granted - SHRDSVD + CACHEUSD exactly.
    pub granted: u64,
    /// consumed pages, a shared page counting 1/n
    pub consumed: f64,
    /// TCHD: active pages, sampled estimate
    pub active: f64,
    /// %ACTVS's pages: the slow moving average of the sampled active fraction, times MEMSZ
    pub active_slow: f64,
    /// %ACTVF's pages: the fast moving average, times MEMSZ
    pub active_fast: f64,
    /// working set: distinct pages touched in the last complete sampling period
    pub working_set: u64,
    /// SZTGT: target
    pub target: f64,
    /// MCTLSZ: ballooned pages
    pub mctlsz: u64,
    /// MCTLTGT: balloon target
    pub mctltgt: u64,
    /// SWCUR: swapped pages
    pub swcur: u64,
    /// SWTGT: swap target
    pub swtgt: u64,
    /// compressed pages
    pub zipped: u64,
    /// CACHEUSD: compression cache in use, in pages
    pub cacheusd: f64,
    /// SHRD: pages in shared state
    pub shrd: u64,
    /// ZERO: shared zero pages
    pub zero: u64,
    /// SHRDSVD: pages saved by sharing, each shared page saving (n - 1) / n
    pub shrdsvd: f64,
    /// guest page cache, pages (0 without a guest model)
    pub guest_cache: u64,
    /// guest free list, pages
    pub guest_free: u64,
    /// guest anonymous pages resident
    pub guest_anon: u64,
    /// guest anonymous pages in the guest's swap
    pub guest_swapped: u64,
    /// guest kernel pages
    pub guest_kernel: u64,
    /// cumulative counts
    pub counters: VmMemCounters,
}

#[derive(Debug, Clone)]
struct VmMem {
    spec: VmMemSpec,
    pmap: Pmap,
    rng: Rng,
    est: ActiveEstimate,
    sample: Vec<u32>,
    next_sample: Time,
    working_set: u64,
    balloon_target: u64,
    swap_target: u64,
    target: f64,
    cache_quarters: u64,
    cache_mpns: Vec<u32>,
    overhead_mpns: Vec<u32>,
    blocked: bool,
    deflate_cursor: u32,
    guest: Option<GuestOs>,
    c: VmMemCounters,
}

/// The memory of one host (see the module docs).
pub struct MemHost {
    params: MemParams,
    free: Vec<Vec<u32>>,
    total: u64,
    pages_per_node: u32,
    vms: Vec<VmMem>,
    frames: FrameTable,
    shared_pages: u64,
    charge: ShareCharge,
    state: MemState,
    /// the device, or `None` when swap I/O goes out as [`SwapRequest`]s
    swap: Option<Box<dyn SwapDevice>>,
    swap_requests: Vec<SwapRequest>,
    inflight: Vec<Vec<u32>>,
    inflight_free: Vec<u32>,
    host_overhead: Vec<u32>,
    seed: u64,
    scan_rng: Rng,
    next_tick: Time,
}

/// How many pages ahead a full scan fetches the frame-table slots it will probe (a power of
/// two; chosen by measurement on the benchmark's first pass: 16 took fewer CPU samples than 8).
pub const SCAN_AHEAD: u32 = 16;

/// Key of a content id in the frame table: a bijection of the id, so over model content equal
/// keys mean equal contents; the one id whose key would be 0 (the empty-slot mark) is never shared.
#[inline]
fn key(cid: u64) -> u64 {
    mix64(cid)
}

impl MemHost {
    /// A host of `nodes` NUMA nodes of `pages_per_node` machine pages each, swapping to `swap`.
    pub fn new(params: MemParams, nodes: u32, pages_per_node: u32, swap: Box<dyn SwapDevice>, seed: u64) -> VmtwinResult<Self> {
        params.validate()?;
        if nodes == 0 || pages_per_node == 0 {
            invalid!("host.memory", format!("{nodes} nodes x {pages_per_node} pages"), "at least one node of at least one page");
        }
        let total = u64::from(nodes) * u64::from(pages_per_node);
        if total > u64::from(MAX_MPN) {
            invalid!("host.memory", format!("{total} pages"), format!("at most {MAX_MPN} pages (1 TiB)"));
        }
        if params.host_overhead_pages >= total {
            invalid!("memory.host_overhead_pages", params.host_overhead_pages, format!("fewer than the host's {total} pages"));
        }
        // stacks pop the lowest MPN first
        let mut free: Vec<Vec<u32>> = (0..nodes).map(|n| ((n * pages_per_node)..((n + 1) * pages_per_node)).rev().collect()).collect();
        let mut host_overhead = Vec::new();
        for i in 0..params.host_overhead_pages {
            host_overhead.push(free[(i % u64::from(nodes)) as usize].pop().unwrap());
        }
        Ok(MemHost {
            params,
            free,
            total,
            pages_per_node,
            vms: Vec::new(),
            frames: FrameTable::default(),
            shared_pages: 0,
            charge: ShareCharge::new(total as usize),
            state: MemState::High,
            swap: Some(swap),
            swap_requests: Vec::new(),
            inflight: Vec::new(),
            inflight_free: Vec::new(),
            host_overhead,
            seed,
            scan_rng: Rng::new(stream_seed(seed, "mem.scanner", 0)),
            next_tick: 0,
        })
    }

    /// Power on a VM after admission control: its reservation and overhead must fit in the
    /// memory not yet reserved. Returns its index.
    pub fn power_on(&mut self, spec: VmMemSpec) -> VmtwinResult<u32> {
        let path = format!("vms[{}].memory", self.vms.len());
        if spec.pages == 0 {
            invalid!(format!("{path}.size"), spec.pages, "at least one page");
        }
        if spec.min_pages > spec.pages {
            invalid!(format!("{path}.reservation"), format!("{} pages", spec.min_pages), format!("at most the configured size, {} pages", spec.pages));
        }
        if !(spec.shares > 0.0 && spec.shares.is_finite()) {
            invalid!(format!("{path}.shares"), spec.shares, "a number > 0");
        }
        if spec.home_node as usize >= self.free.len() {
            invalid!(format!("{path}.home_node"), spec.home_node, format!("a node below {}", self.free.len()));
        }
        spec.content.validate(&format!("{path}.content"))?;
        if let Some(g) = &spec.guest {
            g.validate(&format!("{path}.guest_os"), spec.pages, spec.anon_pages)?;
        }
        if let Some(img) = &spec.image {
            if img.pages() != spec.pages {
                invalid!(format!("{path}.image"), format!("{} pages", img.pages()), format!("an image of the configured size, {} pages", spec.pages));
            }
        }
        let reserved: u64 = self.host_overhead.len() as u64 + self.vms.iter().map(|v| u64::from(v.spec.min_pages) + v.overhead_mpns.len() as u64).sum::<u64>();
        let want = u64::from(spec.min_pages) + u64::from(spec.overhead_pages);
        if reserved + want > self.total {
            return Err(VmtwinError::AdmissionControl {
                entity: spec.name.clone(),
                reason: format!("reservation + overhead of {want} pages exceeds the {} unreserved pages", self.total - reserved),
            });
        }
        let vm = self.vms.len() as u32;
        let mut rng = Rng::new(stream_seed(self.seed, &spec.name, 0));
        let content = match &spec.image {
            Some(img) => img.content_ids(),
            None => spec.content.layout(spec.pages, &mut rng),
        };
        let mut overhead = Vec::with_capacity(spec.overhead_pages as usize);
        for _ in 0..spec.overhead_pages {
            match self.alloc_on(spec.home_node) {
                Some(m) => overhead.push(m),
                None => {
                    for m in overhead {
                        self.free_mpn(m);
                    }
                    return Err(VmtwinError::AdmissionControl { entity: spec.name.clone(), reason: "no free machine memory for its overhead".into() });
                }
            }
        }
        self.vms.push(VmMem {
            pmap: Pmap::new(content),
            rng,
            est: ActiveEstimate::default(),
            sample: Vec::new(),
            next_sample: 0,
            working_set: 0,
            balloon_target: 0,
            swap_target: 0,
            target: f64::from(spec.pages),
            cache_quarters: 0,
            cache_mpns: Vec::new(),
            overhead_mpns: overhead,
            blocked: false,
            deflate_cursor: 0,
            guest: spec.guest.as_ref().map(|g| GuestOs::boot(g, spec.pages, spec.anon_pages)),
            c: VmMemCounters::default(),
            spec,
        });
        self.charge.add_vm();
        Ok(vm)
    }

    /// Schedule the first policy tick at `now`.
    pub fn start(&mut self, now: Time, sched: &mut impl MemScheduler) {
        self.next_tick = now;
        sched.at(now, MemEvent::Tick);
    }

    /// Handle one of the subsystem's own events at its time.
    pub fn handle(&mut self, ev: MemEvent, now: Time, sched: &mut impl MemScheduler) {
        match ev {
            MemEvent::Tick => {
                self.tick(now, sched);
                self.next_tick = now + self.params.tick_ns;
                sched.at(self.next_tick, MemEvent::Tick);
            }
            MemEvent::SwapOutDone { batch } => self.swap_write_done(batch),
            MemEvent::Resume { .. } => {}
        }
    }

    // ---- machine pages -------------------------------------------------------------------

    fn alloc_on(&mut self, node: u32) -> Option<u32> {
        let n = self.free.len();
        (0..n).find_map(|i| self.free[(node as usize + i) % n].pop())
    }

    #[inline]
    fn free_mpn(&mut self, mpn: u32) {
        // nodes are equal ranges of MPNs
        let node = if self.free.len() == 1 { 0 } else { (mpn / self.pages_per_node) as usize };
        self.free[node].push(mpn);
    }

    /// Free machine pages.
    pub fn free_pages(&self) -> u64 {
        self.free.iter().map(|f| f.len() as u64).sum()
    }

    /// Machine pages in the host.
    pub fn total_pages(&self) -> u64 {
        self.total
    }

    /// Current free-memory state.
    pub fn state(&self) -> MemState {
        self.state
    }

    /// Number of VMs.
    pub fn vm_count(&self) -> u32 {
        self.vms.len() as u32
    }

    /// A VM's cumulative counters (O(1), unlike [`MemHost::vm_stats`]).
    pub fn counters(&self, vm: u32) -> &VmMemCounters {
        &self.vms[vm as usize].c
    }

    /// The tunables in force.
    pub fn params(&self) -> &MemParams {
        &self.params
    }

    /// Read access to a VM's pmap.
    pub fn pmap(&self, vm: u32) -> &Pmap {
        &self.vms[vm as usize].pmap
    }

    /// The sharing frame table.
    pub fn frames(&self) -> &FrameTable {
        &self.frames
    }

    // ---- guest accesses ------------------------------------------------------------------

    /// The guest reads page `ppn` of `vm` at `now`.
    pub fn read(&mut self, vm: u32, ppn: u32, now: Time) -> Access {
        self.access(vm, ppn, None, now)
    }

    /// The guest writes page `ppn` of `vm` at `now`, leaving content `cid` in it.
    pub fn write(&mut self, vm: u32, ppn: u32, cid: u64, now: Time) -> Access {
        self.access(vm, ppn, Some(cid), now)
    }

    /// Hint the CPU to fetch the pmap slot of page `ppn` of `vm` (see [`Pmap::prefetch`]).
    #[inline]
    pub fn prefetch(&self, vm: u32, ppn: u32) {
        self.vms[vm as usize].pmap.prefetch(ppn);
    }

    /// A fresh private content id from `vm`'s stream (what a workload's write leaves).
    pub fn private_content(&mut self, vm: u32) -> u64 {
        super::content::private_page(&mut self.vms[vm as usize].rng)
    }

    fn access(&mut self, vm: u32, ppn: u32, write: Option<u64>, now: Time) -> Access {
        let v = &mut self.vms[vm as usize];
        let st = v.pmap.state(ppn);
        let needs_page = match st {
            PageState::Regular => false,
            PageState::Shared => write.is_some(),
            _ => true,
        };
        if needs_page && v.blocked {
            v.c.blocked += 1;
            return Access::Blocked { retry_at: self.next_tick.max(now + 1) };
        }
        if v.pmap.take_sampled(ppn) {
            v.est.t += 1;
        }
        if !needs_page {
            v.pmap.note_touch(ppn);
            if let Some(c) = write {
                v.pmap.set_content(ppn, c);
            }
            return Access::Hit;
        }
        let home = v.spec.home_node;
        let Some(mpn) = self.alloc_on(home) else {
            let v = &mut self.vms[vm as usize];
            v.c.blocked += 1;
            return Access::Blocked { retry_at: self.next_tick.max(now + 1) };
        };
        let p = &self.params;
        let (minor, decompress, cow) = (p.minor_fault_ns, p.decompress_ns, p.cow_copy_ns);
        let cid = self.vms[vm as usize].pmap.content(ppn);
        let out = match st {
            PageState::Unmapped => Access::Fault { stall_ns: minor },
            PageState::Deflated | PageState::Ballooned => {
                let v = &mut self.vms[vm as usize];
                if st == PageState::Ballooned {
                    v.c.balloon_pops += 1;
                    v.balloon_target = v.balloon_target.min(v.pmap.count(PageState::Ballooned) - 1);
                }
                v.pmap.set_content(ppn, ZERO_CONTENT);
                Access::Fault { stall_ns: minor }
            }
            PageState::Compressed => {
                let stall = decompress;
                let q = self.vms[vm as usize].pmap.index(ppn);
                let v = &mut self.vms[vm as usize];
                v.c.unzipped += 1;
                v.c.cpu_ns += stall;
                v.cache_quarters -= u64::from(q);
                self.fit_cache(vm);
                Access::Fault { stall_ns: stall }
            }
            PageState::Swapped => match self.swap.as_mut() {
                Some(dev) => {
                    let until = dev.read(vm, now);
                    let v = &mut self.vms[vm as usize];
                    v.c.swap_in_pages += 1;
                    v.c.swap_wait_ns += until - now;
                    Access::SwapWait { until }
                }
                None => {
                    self.swap_requests.push(SwapRequest::Read { vm, ppn });
                    self.vms[vm as usize].c.swap_in_pages += 1;
                    Access::SwapIo
                }
            },
            PageState::Shared => {
                self.unshare(vm, cid);
                self.vms[vm as usize].c.cow_breaks += 1;
                Access::Fault { stall_ns: cow }
            }
            PageState::Regular => unreachable!(),
        };
        let v = &mut self.vms[vm as usize];
        v.pmap.set(ppn, PageState::Regular, mpn);
        v.pmap.note_touch(ppn);
        if let Some(c) = write {
            v.pmap.set_content(ppn, c);
        }
        out
    }

    // ---- sharing -------------------------------------------------------------------------

    /// Drop `vm`'s reference to the shared frame of content `cid`, freeing its page at zero.
    fn unshare(&mut self, vm: u32, cid: u64) {
        let slot = self.frames.find(key(cid)).expect("a shared page has a frame");
        let f = self.frames.get(slot);
        let FrameKind::Shared { mpn, refs } = f.kind() else { panic!("shared page on a hint frame") };
        self.shared_pages -= 1;
        self.charge.leave(vm, mpn, refs, cid == ZERO_CONTENT);
        if refs == 1 {
            self.frames.remove(slot);
            self.free_mpn(mpn);
        } else {
            self.frames.set(slot, Frame::shared(f.hash, mpn, refs - 1));
        }
    }

    /// Offer page `ppn` of `vm` to the sharing table; returns true if the page is now shared.
    pub fn share_candidate(&mut self, vm: u32, ppn: u32) -> bool {
        let h = key(self.vms[vm as usize].pmap.content(ppn));
        self.share_keyed(vm, ppn, h)
    }

    /// [`MemHost::share_candidate`] with the key of the page's content id already computed.
    #[inline]
    fn share_keyed(&mut self, vm: u32, ppn: u32, h: u64) -> bool {
        let pmap = &self.vms[vm as usize].pmap;
        let Some((cid, own)) = pmap.regular(ppn) else { return pmap.is(ppn, PageState::Shared) };
        debug_assert_eq!(h, key(cid));
        if h == 0 {
            return false;
        }
        match self.frames.probe(h) {
            Err(empty) => {
                self.frames.insert_at(empty, Frame::hint(h, vm, ppn));
                false
            }
            Ok(slot) => match self.frames.get(slot).kind() {
                FrameKind::Shared { mpn, refs } => {
                    // key is a bijection of the id: equal keys are equal contents
                    self.frames.set(slot, Frame::shared(h, mpn, refs + 1));
                    self.charge.join(vm, mpn, refs, cid == ZERO_CONTENT);
                    self.vms[vm as usize].pmap.set(ppn, PageState::Shared, mpn);
                    self.shared_pages += 1;
                    self.free_mpn(own);
                    true
                }
                FrameKind::Hint { vm: hv, ppn: hp } => {
                    if (hv, hp) == (vm, ppn) {
                        return false;
                    }
                    // rehash the hint page's current contents: stale if it changed or went away
                    // (the key is a bijection of the id, so comparing ids is comparing keys)
                    let mpn = match self.vms[hv as usize].pmap.regular(hp) {
                        Some((c, mpn)) if c == cid => mpn,
                        _ => {
                            self.frames.set(slot, Frame::hint(h, vm, ppn));
                            return false;
                        }
                    };
                    self.frames.set(slot, Frame::shared(h, mpn, 2));
                    self.charge.join(hv, mpn, 0, cid == ZERO_CONTENT);
                    self.charge.join(vm, mpn, 1, cid == ZERO_CONTENT);
                    self.vms[hv as usize].pmap.set(hp, PageState::Shared, mpn);
                    self.vms[vm as usize].pmap.set(ppn, PageState::Shared, mpn);
                    self.shared_pages += 2;
                    self.free_mpn(own);
                    true
                }
            },
        }
    }

    /// One full sharing pass over every page of every VM, in order (a test and benchmark aid;
    /// the tick scans at the configured rate in random order). Returns pages examined.
    ///
    /// The same decisions as calling [`MemHost::share_candidate`] on each page in turn, with the
    /// frame-table slot each page will probe prefetched [`SCAN_AHEAD`] pages ahead (its key
    /// computed then and kept in a ring), so the table's cache misses overlap; pages that are
    /// not regular then are skipped. The table is first given room for the frames the pass can
    /// leave (see the body), so a first pass does not double it as it goes. A second stage
    /// that read the prefetched slot half-way and prefetched the hint page's pmap slot or the
    /// charge record was measured and dropped: it cost more CPU than it saved (perf samples of
    /// the benchmark's first pass, 871-910 against 641-715 without it, runs alternated).
    pub fn full_scan(&mut self) -> u64 {
        const A: u32 = SCAN_AHEAD;
        // a ring of keys for pages ppn..=ppn + A (longer than A, so page ppn + A's key does
        // not overwrite page ppn's before it is used); 0 marks a page to skip: one not regular
        // when looked ahead at is not regular at its turn either (a scan only makes pages
        // shared), and a regular page whose key is 0 is never shared
        let mut keys = [0u64; 2 * SCAN_AHEAD as usize];
        let mask = 2 * SCAN_AHEAD - 1;
        let mut n = 0;
        // room made once for the frames the pass leaves if no hint is stale: the shared frames
        // and at most one frame per regular page (a hint, or a shared frame taking its page),
        // so a first pass does not double the table (each doubling rehashes every frame into
        // a fresh table); stale hints can still make it double
        let regular: u64 = self.vms.iter().map(|v| v.pmap.count(PageState::Regular)).sum();
        self.frames.reserve(self.frames.shared_frames() + regular as usize);
        for vm in 0..self.vms.len() as u32 {
            let pages = self.vms[vm as usize].pmap.pages();
            let ahead = |h: &Self, ppn: u32| -> u64 {
                let Some((cid, _)) = h.vms[vm as usize].pmap.regular(ppn) else { return 0 };
                let k = key(cid);
                h.frames.prefetch(k);
                k
            };
            for ppn in 0..pages.min(A) {
                keys[(ppn & mask) as usize] = ahead(self, ppn);
            }
            for ppn in 0..pages {
                if ppn + A < pages {
                    keys[((ppn + A) & mask) as usize] = ahead(self, ppn + A);
                }
                let k = keys[(ppn & mask) as usize];
                if k != 0 {
                    self.share_keyed(vm, ppn, k);
                }
            }
            n += u64::from(pages);
            self.vms[vm as usize].c.scanned += u64::from(pages);
        }
        // the charge histograms' deferred updates, once per frame (part of the scan's cost)
        self.charge.settle();
        n
    }

    // ---- reclamation ---------------------------------------------------------------------

    /// Take the machine memory away from a backed or compressed page (no state change).
    fn unback(&mut self, vm: u32, ppn: u32) {
        let v = &self.vms[vm as usize];
        match v.pmap.state(ppn) {
            PageState::Regular => {
                let m = v.pmap.index(ppn);
                self.free_mpn(m);
            }
            PageState::Shared => {
                let cid = v.pmap.content(ppn);
                self.unshare(vm, cid);
            }
            PageState::Compressed => {
                let q = v.pmap.index(ppn);
                self.vms[vm as usize].cache_quarters -= u64::from(q);
                self.fit_cache(vm);
            }
            _ => {}
        }
    }

    /// Keep exactly ceil(quarters / 4) machine pages in the VM's compression cache; false if a
    /// page was needed and none was free.
    fn fit_cache(&mut self, vm: u32) -> bool {
        let need = self.vms[vm as usize].cache_quarters.div_ceil(4) as usize;
        while self.vms[vm as usize].cache_mpns.len() > need {
            let m = self.vms[vm as usize].cache_mpns.pop().unwrap();
            self.free_mpn(m);
        }
        while self.vms[vm as usize].cache_mpns.len() < need {
            let home = self.vms[vm as usize].spec.home_node;
            match self.alloc_on(home) {
                Some(m) => self.vms[vm as usize].cache_mpns.push(m),
                None => return false,
            }
        }
        true
    }

    fn inflate(&mut self, vm: u32, n: u64) {
        if self.vms[vm as usize].guest.is_some() {
            return self.guest_inflate(vm, n);
        }
        let pages = self.vms[vm as usize].pmap.pages();
        let mut done = 0;
        let mut tries = 0;
        while done < n && tries < 8 * n + 64 {
            tries += 1;
            let ppn = (self.vms[vm as usize].rng.uniform() * f64::from(pages)) as u32;
            if self.vms[vm as usize].pmap.state(ppn) == PageState::Ballooned {
                continue;
            }
            self.unback(vm, ppn);
            self.vms[vm as usize].pmap.set(ppn, PageState::Ballooned, 0);
            self.vms[vm as usize].c.balloon_inflated += 1;
            done += 1;
        }
    }

    fn deflate(&mut self, vm: u32, mut n: u64) {
        let v = &mut self.vms[vm as usize];
        let pages = v.pmap.pages();
        let mut seen = 0;
        while n > 0 && seen < pages {
            let ppn = v.deflate_cursor;
            v.deflate_cursor = (v.deflate_cursor + 1) % pages;
            seen += 1;
            if v.pmap.state(ppn) == PageState::Ballooned {
                v.pmap.set(ppn, PageState::Deflated, 0);
                if let Some(g) = v.guest.as_mut() {
                    g.balloon_give(ppn);
                }
                n -= 1;
            }
        }
    }

    /// The guest's balloon driver takes `n` pages: the guest chooses them (free, then page
    /// cache, then cold anonymous pages it swaps to its virtual disk); ESX unbacks each.
    fn guest_inflate(&mut self, vm: u32, n: u64) {
        let v = &mut self.vms[vm as usize];
        let (g, pmap) = (v.guest.as_mut().expect("a guest"), &v.pmap);
        let r = g.balloon_take(n, |p| pmap.content(p));
        self.guest_swapped_out(vm, &r.swapped_out);
        for p in r.ppns {
            self.unback(vm, p);
            let v = &mut self.vms[vm as usize];
            v.pmap.set(p, PageState::Ballooned, 0);
            v.c.balloon_inflated += 1;
        }
    }

    /// Anonymous pages the guest swapped out: one write to its virtual disk; a page ESX had
    /// swapped or compressed is double paging.
    fn guest_swapped_out(&mut self, vm: u32, out: &[(u32, u32)]) {
        if out.is_empty() {
            return;
        }
        let v = &mut self.vms[vm as usize];
        let g = v.guest.as_mut().expect("a guest");
        g.c.double_paging += out.iter().filter(|&&(_, p)| matches!(v.pmap.state(p), PageState::Swapped | PageState::Compressed)).count() as u64;
        let pages = out.len() as u32;
        let now = self.next_tick;
        match self.swap.as_mut() {
            Some(dev) => {
                dev.write(vm, pages, now);
            }
            None => self.swap_requests.push(SwapRequest::GuestWrite { vm, pages }),
        }
    }

    /// The workload touches anonymous page `vpn` of `vm` through its guest OS, writing `write`
    /// (a fresh page is zeroed by the guest). A guest swap-in waits for the read from the
    /// virtual disk (the stand-in's `until`, or [`Access::SwapIo`] with a
    /// [`SwapRequest::GuestRead`]); the guest's wait is not %SWPWT.
    pub fn guest_access(&mut self, vm: u32, vpn: u32, write: Option<u64>, now: Time) -> Access {
        let mut out = Vec::new();
        let v = &mut self.vms[vm as usize];
        let (g, pmap) = (v.guest.as_mut().expect("guest_access needs a guest model"), &v.pmap);
        let Some(t) = g.touch(vpn, &mut out, |p| pmap.content(p)) else {
            v.c.blocked += 1;
            return Access::Blocked { retry_at: self.next_tick.max(now + 1) };
        };
        self.guest_swapped_out(vm, &out);
        let a = match t {
            GuestTouch::Resident(p) => return self.access(vm, p, write, now),
            GuestTouch::Fresh(p) => self.access(vm, p, Some(write.unwrap_or(ZERO_CONTENT)), now),
            GuestTouch::SwapIn { ppn, content } => {
                // the guest's disk read overwrites the whole page (ESX performs the virtual
                // disk's DMA): whatever ESX swapped or compressed there is discarded, not read
                if matches!(self.vms[vm as usize].pmap.state(ppn), PageState::Swapped | PageState::Compressed) {
                    self.unback(vm, ppn);
                    self.vms[vm as usize].pmap.set(ppn, PageState::Deflated, 0);
                }
                self.access(vm, ppn, Some(write.unwrap_or(content)), now)
            }
        };
        if let Access::Blocked { .. } = a {
            self.vms[vm as usize].guest.as_mut().expect("a guest").undo_touch(vpn, t);
            return a;
        }
        let GuestTouch::SwapIn { .. } = t else { return a };
        // the read from the guest's virtual disk
        let stall = match a {
            Access::Fault { stall_ns } => stall_ns,
            Access::Hit => 0,
            // a blocked allocation was undone above; a swap-in cannot happen on an overwrite
            other => return other,
        };
        match self.swap.as_mut() {
            Some(dev) => {
                let until = dev.read(vm, now) + stall;
                self.vms[vm as usize].guest.as_mut().expect("a guest").c.swap_wait_ns += until - now;
                Access::SwapWait { until }
            }
            None => {
                self.swap_requests.push(SwapRequest::GuestRead { vm, vpn });
                Access::SwapIo
            }
        }
    }

    /// A guest swap-in of VM `vm` completed after the vCPU waited `waited_ns`.
    pub fn guest_read_done(&mut self, vm: u32, waited_ns: Time) {
        if let Some(g) = self.vms[vm as usize].guest.as_mut() {
            g.c.swap_wait_ns += waited_ns;
        }
    }

    /// Give the guest OS of `vm` a file set of `pages` pages (an application's files).
    pub fn set_guest_file_pages(&mut self, vm: u32, pages: u32) {
        self.vms[vm as usize].guest.as_mut().expect("a file set needs a guest model").set_file_pages(pages);
    }

    /// The workload reads file page `f` of `vm` through its guest's page cache. A hit reads the
    /// cache page (which ESX may have swapped or compressed: the usual faults); a miss overwrites
    /// a page the guest took (ESX performs the virtual disk's DMA) and waits for the disk read
    /// (the stand-in's `until`, or [`Access::SwapIo`] with a [`SwapRequest::FileRead`]).
    pub fn guest_file_read(&mut self, vm: u32, f: u32, now: Time) -> Access {
        let mut out = Vec::new();
        let v = &mut self.vms[vm as usize];
        let (g, pmap) = (v.guest.as_mut().expect("guest_file_read needs a guest model"), &v.pmap);
        let Some(r) = g.file_read(f, &mut out, |p| pmap.content(p)) else {
            v.c.blocked += 1;
            return Access::Blocked { retry_at: self.next_tick.max(now + 1) };
        };
        self.guest_swapped_out(vm, &out);
        let ppn = match r {
            FileRead::Hit(p) => return self.access(vm, p, None, now),
            FileRead::Miss(p) => p,
        };
        if matches!(self.vms[vm as usize].pmap.state(ppn), PageState::Swapped | PageState::Compressed) {
            self.unback(vm, ppn);
            self.vms[vm as usize].pmap.set(ppn, PageState::Deflated, 0);
        }
        let cid = self.private_content(vm);
        let stall = match self.access(vm, ppn, Some(cid), now) {
            Access::Fault { stall_ns } => stall_ns,
            Access::Hit => 0,
            other => {
                if let Access::Blocked { .. } = other {
                    self.vms[vm as usize].guest.as_mut().expect("a guest").undo_file_read(f, ppn);
                }
                return other;
            }
        };
        match self.swap.as_mut() {
            Some(dev) => Access::SwapWait { until: dev.read(vm, now) + stall },
            None => {
                self.swap_requests.push(SwapRequest::FileRead { vm, page: f });
                Access::SwapIo
            }
        }
    }

    /// The guest OS of `vm`, if modelled.
    pub fn guest(&self, vm: u32) -> Option<&GuestOs> {
        self.vms[vm as usize].guest.as_ref()
    }

    /// Reclaim up to `n` pages of `vm` by random victims: share, else compress, else swap out.
    fn swap_out(&mut self, vm: u32, n: u64, now: Time, sched: &mut impl MemScheduler) {
        let pages = self.vms[vm as usize].pmap.pages();
        let cap_quarters = (self.params.compress_cache_fraction * f64::from(pages)) as u64 * 4;
        let mut batch: Vec<u32> = Vec::new();
        let (mut done, mut tries) = (0u64, 0u64);
        while done < n && tries < 8 * n + 64 {
            tries += 1;
            let ppn = (self.vms[vm as usize].rng.uniform() * f64::from(pages)) as u32;
            let st = self.vms[vm as usize].pmap.state(ppn);
            if st != PageState::Regular && st != PageState::Shared {
                continue;
            }
            // sharing first [S1 §4.3, S2 §3]
            if st == PageState::Regular && self.share_candidate(vm, ppn) {
                done += 1;
                continue;
            }
            let cid = self.vms[vm as usize].pmap.content(ppn);
            if self.params.compresses() && self.vms[vm as usize].cache_quarters < cap_quarters {
                self.vms[vm as usize].c.cpu_ns += self.params.compress_cpu_ns;
                let q = compressed_quarters(cid, self.params.compress_quarter_fraction, self.params.compress_half_fraction);
                let cq = self.vms[vm as usize].cache_quarters + u64::from(q);
                if q > 0 && cq <= cap_quarters {
                    // the cache grows first: a regular victim's own page becomes the new cache
                    // page (compression in place); otherwise a free page, and with none the
                    // victim is swapped instead
                    let grow = cq.div_ceil(4) as usize > self.vms[vm as usize].cache_mpns.len();
                    let in_place = grow && self.vms[vm as usize].pmap.state(ppn) == PageState::Regular;
                    let room = !grow || in_place || {
                        let home = self.vms[vm as usize].spec.home_node;
                        match self.alloc_on(home) {
                            Some(m) => {
                                self.vms[vm as usize].cache_mpns.push(m);
                                true
                            }
                            None => false,
                        }
                    };
                    if room {
                        if in_place {
                            let m = self.vms[vm as usize].pmap.index(ppn);
                            self.vms[vm as usize].cache_mpns.push(m);
                        } else {
                            self.unback(vm, ppn);
                        }
                        let v = &mut self.vms[vm as usize];
                        v.cache_quarters = cq;
                        v.pmap.set(ppn, PageState::Compressed, q);
                        v.c.zipped += 1;
                        done += 1;
                        continue;
                    }
                }
            }
            match self.vms[vm as usize].pmap.state(ppn) {
                PageState::Regular => batch.push(self.vms[vm as usize].pmap.index(ppn)),
                _ => self.unback(vm, ppn),
            }
            self.vms[vm as usize].pmap.set(ppn, PageState::Swapped, 0);
            self.vms[vm as usize].c.swap_out_pages += 1;
            done += 1;
            if batch.len() as u32 >= self.params.swap_cluster_pages {
                self.issue(vm, std::mem::take(&mut batch), now, sched);
            }
        }
        if !batch.is_empty() {
            self.issue(vm, batch, now, sched);
        }
    }

    fn issue(&mut self, vm: u32, mpns: Vec<u32>, now: Time, sched: &mut impl MemScheduler) {
        let pages = mpns.len() as u32;
        let id = match self.inflight_free.pop() {
            Some(i) => {
                self.inflight[i as usize] = mpns;
                i
            }
            None => {
                self.inflight.push(mpns);
                self.inflight.len() as u32 - 1
            }
        };
        match self.swap.as_mut() {
            Some(dev) => {
                let done = dev.write(vm, pages, now);
                sched.at(done, MemEvent::SwapOutDone { batch: id });
            }
            None => self.swap_requests.push(SwapRequest::Write { vm, batch: id, pages }),
        }
    }

    // ---- swap I/O through the storage queues ------------------------------------------------

    /// Send swap I/O out as [`SwapRequest`]s instead of to the device given at construction:
    /// the run loop submits them to the storage subsystem and reports their completions.
    pub fn queue_swap_io(&mut self) {
        self.swap = None;
    }

    /// Whether swap requests wait to be submitted.
    pub fn has_swap_requests(&self) -> bool {
        !self.swap_requests.is_empty()
    }

    /// The swap requests made since the last call, in order.
    pub fn take_swap_requests(&mut self) -> Vec<SwapRequest> {
        std::mem::take(&mut self.swap_requests)
    }

    /// Swap-out batch `batch` is on disk: its machine pages are free.
    pub fn swap_write_done(&mut self, batch: u32) {
        for m in std::mem::take(&mut self.inflight[batch as usize]) {
            self.free_mpn(m);
        }
        self.inflight_free.push(batch);
    }

    /// A swap-in of VM `vm` completed after the vCPU waited `waited_ns` (%SWPWT).
    pub fn swap_read_done(&mut self, vm: u32, waited_ns: Time) {
        self.vms[vm as usize].c.swap_wait_ns += waited_ns;
    }

    /// The allocation the policy sees (see the module docs), in pages.
    fn allocation(&self, vm: u32) -> f64 {
        let v = &self.vms[vm as usize];
        let per_shared = if self.shared_pages == 0 { 0.0 } else { self.frames.shared_frames() as f64 / self.shared_pages as f64 };
        v.pmap.count(PageState::Regular) as f64 + v.cache_quarters as f64 / 4.0 + v.pmap.count(PageState::Shared) as f64 * per_shared
    }

    fn mapped(&self, vm: u32) -> u64 {
        let p = &self.vms[vm as usize].pmap;
        u64::from(p.pages()) - p.count(PageState::Unmapped)
    }

    fn tick(&mut self, now: Time, sched: &mut impl MemScheduler) {
        let p = self.params.clone();
        let tick_s = p.tick_ns as f64 / 1e9;
        // sharing scan, random order with replacement [S1 §4.3]
        let per_vm = p.scan_pages_per_vm(tick_s, self.vms.len());
        for vm in 0..self.vms.len() as u32 {
            let pages = self.vms[vm as usize].pmap.pages();
            for _ in 0..per_vm {
                let ppn = (self.scan_rng.uniform() * f64::from(pages)) as u32;
                self.share_candidate(vm, ppn);
            }
            let v = &mut self.vms[vm as usize];
            v.c.scanned += per_vm;
            v.c.cpu_ns += per_vm * p.share_scan_cpu_ns;
        }
        // active-memory sampling periods
        for v in &mut self.vms {
            if now >= v.next_sample {
                v.est.end_period(p.ewma_fast_gain, p.ewma_slow_gain);
                for &s in &v.sample {
                    v.pmap.take_sampled(s);
                }
                v.sample.clear();
                v.working_set = v.pmap.end_period();
                let pages = v.pmap.pages();
                let n = p.sample_pages.min(pages);
                while (v.sample.len() as u32) < n {
                    let ppn = (v.rng.uniform() * f64::from(pages)) as u32;
                    if v.pmap.mark_sampled(ppn) {
                        v.sample.push(ppn);
                    }
                }
                v.est.n = n;
                v.next_sample = now + p.sample_period_ns;
            }
        }
        // state
        self.state = next_state(self.state, self.free_pages(), self.total, p.thresholds, p.hysteresis);
        // targets
        let overheads: u64 = self.host_overhead.len() as u64 + self.vms.iter().map(|v| v.overhead_mpns.len() as u64).sum::<u64>();
        let capacity = (self.total as f64 - overheads as f64 - p.thresholds[0] * self.total as f64).max(0.0);
        let alloc: Vec<f64> = (0..self.vms.len() as u32).map(|vm| self.allocation(vm)).collect();
        let claims: Vec<MemClaim> = (0..self.vms.len())
            .map(|i| {
                let v = &self.vms[i];
                let active_pages = v.est.fraction(p.ewma_fast_gain) * f64::from(v.pmap.pages());
                MemClaim {
                    shares: v.spec.shares,
                    active: if alloc[i] > 0.0 { (active_pages / alloc[i]).min(1.0) } else { 1.0 },
                    min: f64::from(v.spec.min_pages),
                    max: f64::from(v.spec.limit_pages.unwrap_or(v.spec.pages).min(v.spec.pages)).min(self.mapped(i as u32) as f64),
                }
            })
            .collect();
        let t = targets(capacity, &claims, p.idle_tax);
        let balloon_state = self.state == MemState::Soft;
        let swap_state = self.state >= MemState::Hard;
        for vm in 0..self.vms.len() as u32 {
            let i = vm as usize;
            self.vms[i].target = t[i];
            let excess = alloc[i] - t[i];
            let (size, max_balloon, driver) = {
                let v = &self.vms[i];
                (v.pmap.count(PageState::Ballooned), (p.balloon_max_fraction * f64::from(v.pmap.pages())) as u64, v.spec.balloon_driver)
            };
            // balloon target (MCTLTGT): grow by the excess in the ballooning state, shrink when
            // below target in the high state
            let mut bt = self.vms[i].balloon_target;
            if balloon_state && excess > 0.0 && driver {
                bt = (size + excess.ceil() as u64).min(max_balloon);
            } else if self.state == MemState::High && excess < 0.0 {
                bt = size.saturating_sub((-excess) as u64);
            }
            // a VM above its limit is reclaimed in every state, by its balloon first and by
            // swapping where ballooning is not possible (the soft state's rule [S1 §6.3] applied
            // to the VM's own max): the limit is a max the VM never exceeds, whatever the host has
            // free [S1 §3: max]
            let over_limit = self.vms[i].spec.limit_pages.map_or(0.0, |l| alloc[i] - f64::from(l));
            if over_limit > 0.0 && driver {
                bt = bt.max((size + over_limit.ceil() as u64).min(max_balloon));
            }
            self.vms[i].balloon_target = bt;
            // the driver polls once per tick and moves at most its rate
            let step = (f64::from(p.balloon_pages_per_s) * tick_s) as u64;
            if driver {
                if bt > size {
                    self.inflate(vm, (bt - size).min(step));
                } else if bt < size {
                    self.deflate(vm, (size - bt).min(step));
                }
            }
            // swap: in hard/low, or in soft where ballooning cannot reach (2002 preset)
            let left = (self.allocation(vm) - t[i]).max(0.0).ceil() as u64;
            let balloon_blocked = !driver || size >= max_balloon;
            let swap_now = swap_state
                || (self.state == MemState::Soft && p.preset == Preset::Esx2002 && balloon_blocked)
                || (over_limit > 0.0 && balloon_blocked);
            let swcur = self.vms[i].pmap.count(PageState::Swapped);
            self.vms[i].swap_target = if swap_now { swcur + left } else { swcur };
            if swap_now && left > 0 {
                let rate = (f64::from(p.swap_out_pages_per_s) * tick_s) as u64;
                self.swap_out(vm, left.min(rate), now, sched);
            }
            self.vms[i].blocked = self.state == MemState::Low && self.allocation(vm) > t[i];
        }
    }

    // ---- counters and audit --------------------------------------------------------------

    /// A VM's counters now (shared pages are charged their own 1/n, kept as sharing changes:
    /// O(distinct reference counts of its frames), see [`crate::mem::charge`]).
    pub fn vm_stats(&self, vm: u32) -> VmMemStats {
        let v = &self.vms[vm as usize];
        let pm = &v.pmap;
        let shared_share = self.charge.charge(vm);
        let zero = self.charge.zero(vm);
        let shrd = pm.count(PageState::Shared);
        let role = |r: GuestRole| v.guest.as_ref().map_or(0, |g| g.role_pages(r));
        let mut counters = v.c;
        counters.guest = v.guest.as_ref().map_or_else(GuestCounters::default, |g| g.c);
        VmMemStats {
            guest_cache: role(GuestRole::Cache),
            guest_free: role(GuestRole::Free),
            guest_anon: role(GuestRole::Anon),
            guest_kernel: role(GuestRole::Kernel),
            guest_swapped: v.guest.as_ref().map_or(0, |g| g.swapped_pages()),
            memsz: u64::from(pm.pages()),
            mapped: self.mapped(vm),
            granted: pm.count(PageState::Regular) + shrd,
            consumed: pm.count(PageState::Regular) as f64 + shared_share + v.cache_quarters as f64 / 4.0,
            active: v.est.fraction(self.params.ewma_fast_gain) * f64::from(pm.pages()),
            active_slow: v.est.slow * f64::from(pm.pages()),
            active_fast: v.est.fast * f64::from(pm.pages()),
            working_set: v.working_set,
            target: v.target,
            mctlsz: pm.count(PageState::Ballooned),
            mctltgt: v.balloon_target,
            swcur: pm.count(PageState::Swapped),
            swtgt: v.swap_target,
            zipped: pm.count(PageState::Compressed),
            cacheusd: v.cache_quarters as f64 / 4.0,
            shrd,
            zero,
            shrdsvd: shrd as f64 - shared_share,
            counters,
        }
    }

    /// Check, by recounting from scratch, that every machine page is in exactly one place, that
    /// each VM's page states add up to its configured pages, that each shared frame's reference
    /// count equals the pages mapped to it, and that each compression cache holds
    /// ceil(quarters / 4) pages. Returns a description of the first violation.
    pub fn audit(&self) -> Result<(), String> {
        let mut owner = vec![0u8; self.total as usize];
        let mut mark = |m: u32, what: &str| -> Result<(), String> {
            let o = owner.get_mut(m as usize).ok_or(format!("{what}: MPN {m} out of range"))?;
            *o += 1;
            if *o > 1 {
                return Err(format!("{what}: MPN {m} is in two places"));
            }
            Ok(())
        };
        for f in &self.free {
            for &m in f {
                mark(m, "free list")?;
            }
        }
        for &m in &self.host_overhead {
            mark(m, "host overhead")?;
        }
        for b in &self.inflight {
            for &m in b {
                mark(m, "swap-out in flight")?;
            }
        }
        let mut refs_seen: std::collections::HashMap<u32, u32> = Default::default();
        for (i, v) in self.vms.iter().enumerate() {
            for &m in &v.overhead_mpns {
                mark(m, "VM overhead")?;
            }
            for &m in &v.cache_mpns {
                mark(m, "compression cache")?;
            }
            let mut counts = [0u64; 7];
            let mut quarters = 0u64;
            for ppn in 0..v.pmap.pages() {
                let st = v.pmap.state(ppn);
                counts[st as usize] += 1;
                match st {
                    PageState::Regular => mark(v.pmap.index(ppn), "regular page")?,
                    PageState::Shared => *refs_seen.entry(v.pmap.index(ppn)).or_default() += 1,
                    PageState::Compressed => quarters += u64::from(v.pmap.index(ppn)),
                    _ => {}
                }
            }
            if counts.iter().sum::<u64>() != u64::from(v.pmap.pages()) {
                return Err(format!("vm {i}: states add to {} of {} pages", counts.iter().sum::<u64>(), v.pmap.pages()));
            }
            for s in super::pmap::STATES {
                if counts[s as usize] != v.pmap.count(s) {
                    return Err(format!("vm {i}: {s:?} counted {} but recounted {}", v.pmap.count(s), counts[s as usize]));
                }
            }
            if let Some(g) = &v.guest {
                g.audit().map_err(|e| format!("vm {i}: {e}"))?;
                for ppn in 0..v.pmap.pages() {
                    if (v.pmap.state(ppn) == PageState::Ballooned) != (g.role(ppn) == GuestRole::Balloon) {
                        return Err(format!("vm {i}: PPN {ppn} is {:?} in the pmap and {:?} in the guest", v.pmap.state(ppn), g.role(ppn)));
                    }
                }
            }
            if quarters != v.cache_quarters || v.cache_mpns.len() as u64 != quarters.div_ceil(4) {
                return Err(format!("vm {i}: cache holds {} quarters in {} pages, recounted {quarters}", v.cache_quarters, v.cache_mpns.len()));
            }
        }
        let mut frames_refs = 0u64;
        for f in self.frames.frames() {
            if let FrameKind::Shared { mpn, refs } = f.kind() {
                mark(mpn, "shared frame")?;
                let seen = refs_seen.remove(&mpn).unwrap_or(0);
                if seen != refs {
                    return Err(format!("shared MPN {mpn}: refcount {refs}, sharers {seen}"));
                }
                frames_refs += u64::from(refs);
            }
        }
        if let Some((m, n)) = refs_seen.into_iter().next() {
            return Err(format!("{n} pages share MPN {m}, which has no shared frame"));
        }
        if frames_refs != self.shared_pages {
            return Err(format!("shared pages {} but frames count {frames_refs}", self.shared_pages));
        }
        // each VM's shared pages by their frame's reference count, recounted from the pmaps
        let refs_of: std::collections::HashMap<u32, u32> = self
            .frames
            .frames()
            .filter_map(|f| match f.kind() {
                FrameKind::Shared { mpn, refs } => Some((mpn, refs)),
                FrameKind::Hint { .. } => None,
            })
            .collect();
        for (i, v) in self.vms.iter().enumerate() {
            let mut hist = std::collections::BTreeMap::<u32, u64>::new();
            let mut zero = 0u64;
            for ppn in 0..v.pmap.pages() {
                if v.pmap.state(ppn) == PageState::Shared {
                    *hist.entry(refs_of[&v.pmap.index(ppn)]).or_default() += 1;
                    zero += u64::from(v.pmap.content(ppn) == ZERO_CONTENT);
                }
            }
            if hist != self.charge.histogram(i as u32) || zero != self.charge.zero(i as u32) {
                return Err(format!("vm {i}: shared pages by refcount {hist:?} ({zero} zero), kept {:?} ({} zero)", self.charge.histogram(i as u32), self.charge.zero(i as u32)));
            }
        }
        if let Some(m) = owner.iter().position(|&o| o == 0) {
            return Err(format!("MPN {m} is nowhere (lost)"));
        }
        Ok(())
    }
}
