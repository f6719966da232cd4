//! The guest OS's view of its "physical" memory: kernel, page cache, free list and anonymous
//! memory, the balloon driver's victims and the guest's own swapping.
//!
//! Each guest page (PPN) has one guest role: **kernel** (text, data and the per-page structures,
//! sized from configured memory: `kernel_base_bytes` plus `kernel_bytes_per_page` for every
//! page, as Linux's `mem_map` holds one `struct page` per page frame; the reason a 256 MB VM
//! ballooned to 128 MB has less free space than a VM configured with 128 MB [S1 §3.2, Fig. 2]),
//! **page cache** (file data read at boot, `boot_cache_bytes`; clean, so dropping it costs no
//! I/O), **free**, **anonymous** (the workload's memory, one guest-virtual page per PPN) or
//! **balloon** (pinned by the balloon driver).
//!
//! The workload touches guest-virtual pages of its anonymous region. A page not yet allocated
//! takes a page from the free list (the guest zeroes it); when the free list is empty the guest
//! reclaims: the oldest page-cache page first, then the least recently touched anonymous page,
//! which it writes to its own swap space on its virtual disk (a *guest swap-out*). A touch of a
//! guest-swapped page is a *guest swap-in*: the thread waits for the read from the virtual disk.
//! "Least recently touched" is the CLOCK approximation guests use: a referenced bit per
//! anonymous page, set on every touch, and a hand that clears bits until it finds a clear one.
//!
//! **Ballooning** [S1 §3.2]: asked for `n` pages, the driver allocates them through the guest's
//! allocator, so the guest gives its free pages first, then drops page cache (oldest first),
//! then swaps out cold anonymous pages; each page taken becomes a balloon page, which ESX
//! unbacks. Deflating returns balloon pages to the free list.
//!
//! Every guest page is in exactly one role and every anonymous page is either resident on one
//! PPN or in guest swap ([`GuestOs::audit`] recounts both).
//!
//! # Tunables
//! [`GuestParams`]: `kernel_base_bytes`, `kernel_bytes_per_page`, `boot_cache_bytes`, `zero_at_boot`.
//!
//! # Counters
//! [`GuestCounters`]: guest swap-outs and swap-ins, pages the balloon took from the free list,
//! the page cache and anonymous memory, page-cache pages dropped, double paging (a guest
//! swap-out of a page ESX had swapped or compressed); pages per role ([`GuestOs::role_pages`]).
//!
//! **File reads** (an application's file set, [`crate::mem::app`]): a read of a file page the
//! page cache holds is a hit; a miss takes a page as a first touch does (free, else the oldest
//! cache page, else a cold anonymous page swapped out) and appends it to the cache, so the cache
//! grows into free memory and is what the balloon and anonymous memory take back first. The
//! cache is FIFO (a page read again does not move): under uniform reads its hit ratio is its
//! size over the file set's, as for LRU.
//!
//! # Known gaps
//! - Files are read, never written (no dirty page cache, no write-back).
//! - One anonymous region (the workload's working set); the kernel never grows.
//! - A guest swap-out completes at once for the balloon (the guest would wait for the write
//!   before handing the page over); the write still goes to the virtual disk.

use crate::{invalid, VmtwinResult};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// What a guest uses a page for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum GuestRole {
    /// kernel text, data and per-page structures
    Kernel = 0,
    /// on the free list
    Free = 1,
    /// page cache (clean file data)
    Cache = 2,
    /// anonymous memory of the workload
    Anon = 3,
    /// pinned by the balloon driver
    Balloon = 4,
}

/// All roles, in encoding order.
pub const ROLES: [GuestRole; 5] = [GuestRole::Kernel, GuestRole::Free, GuestRole::Cache, GuestRole::Anon, GuestRole::Balloon];

/// The guest OS's sizing constants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestParams {
    /// kernel text, data and boot-time allocations, bytes. Default 64 MB: a chosen stand-in (no
    /// paper gives it); with the per-page term it makes a booted 24 GB RHEL6 guest about 0.45 GB
    /// of kernel, inside the "about 1GB" [S2 §4.1] it consumes booted and idle
    #[serde(default = "default_kernel_base")]
    pub kernel_base_bytes: u64,
    /// kernel bytes per 4 KiB page of configured memory. Default 64: Linux's `struct page`
    /// on x86-64, one per page frame (the structures "sized by physical memory" of [S1 §3.2])
    #[serde(default = "default_kernel_per_page")]
    pub kernel_bytes_per_page: f64,
    /// page cache filled at boot, bytes. Default 0 (none): set it to model a guest whose boot
    /// read files, e.g. 0.55 GB for the rest of RHEL6's "about 1GB" at boot [S2 §4.1]
    #[serde(default)]
    pub boot_cache_bytes: u64,
    /// whether the guest writes zeroes over all its memory at boot, so that every page is mapped
    /// once boot finishes: Windows does, Linux touches only the pages it needs [S2 §3.2]
    /// (research/memory.md A.2, C.15). Default false (Linux). The free pages so zeroed hold the
    /// zero page's contents: the sharing scanner collapses them, and the balloon's first
    /// victims, free pages, free machine memory
    #[serde(default)]
    pub zero_at_boot: bool,
}

fn default_kernel_base() -> u64 {
    64 << 20
}
fn default_kernel_per_page() -> f64 {
    64.0
}

impl Default for GuestParams {
    fn default() -> Self {
        GuestParams { kernel_base_bytes: default_kernel_base(), kernel_bytes_per_page: default_kernel_per_page(), boot_cache_bytes: 0, zero_at_boot: false }
    }
}

impl GuestParams {
    /// Kernel pages of a guest of `pages` pages.
    pub fn kernel_pages(&self, pages: u32) -> u32 {
        let bytes = self.kernel_base_bytes as f64 + self.kernel_bytes_per_page * f64::from(pages);
        ((bytes / super::PAGE_BYTES as f64).ceil() as u64).min(u64::from(pages)) as u32
    }

    /// Check the constants for a guest of `pages` pages whose workload needs `anon` pages.
    pub fn validate(&self, path: &str, pages: u32, anon: u32) -> VmtwinResult<()> {
        if !(self.kernel_bytes_per_page >= 0.0 && self.kernel_bytes_per_page < super::PAGE_BYTES as f64) {
            invalid!(format!("{path}.kernel_bytes_per_page"), self.kernel_bytes_per_page, "a number in [0, 4096)");
        }
        let kernel = self.kernel_pages(pages);
        let cache = super::spec::pages_of(self.boot_cache_bytes);
        if u64::from(kernel) + cache >= u64::from(pages) {
            invalid!(
                format!("{path}.boot_cache"),
                format!("{} bytes with {kernel} kernel pages", self.boot_cache_bytes),
                format!("kernel + boot cache below the configured {pages} pages")
            );
        }
        if u64::from(kernel) + u64::from(anon) > u64::from(pages) {
            invalid!(format!("{path}.working_set"), format!("{anon} pages"), format!("at most the {} pages the kernel leaves", pages - kernel));
        }
        Ok(())
    }
}

/// Cumulative guest counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuestCounters {
    /// anonymous pages written to the guest's swap space
    pub swap_out: u64,
    /// anonymous pages read back from the guest's swap space
    pub swap_in: u64,
    /// balloon pages taken from the free list
    pub balloon_free: u64,
    /// balloon pages taken by dropping page cache
    pub balloon_cache: u64,
    /// balloon pages taken by swapping anonymous memory out
    pub balloon_anon: u64,
    /// page-cache pages dropped (for the balloon or for anonymous memory)
    pub cache_dropped: u64,
    /// guest swap-outs of pages ESX had swapped or compressed (double paging)
    pub double_paging: u64,
    /// time the workload waited for guest swap-ins, ns
    pub swap_wait_ns: u64,
}

/// What a touch of an anonymous page needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestTouch {
    /// resident on this PPN
    Resident(u32),
    /// first touch: the guest gave it this (zeroed) PPN
    Fresh(u32),
    /// guest-swapped: read back into this PPN; its contents were `content`
    SwapIn {
        /// the page's new PPN
        ppn: u32,
        /// the contents it had when swapped out
        content: u64,
    },
}

const NOT_ALLOCATED: u32 = u32::MAX;
const SWAPPED: u32 = u32::MAX - 1;

/// One guest's memory (see the module docs).
#[derive(Debug, Clone)]
pub struct GuestOs {
    role: Vec<GuestRole>,
    /// per anonymous page (guest-virtual): its PPN, or NOT_ALLOCATED / SWAPPED
    anon: Vec<u32>,
    /// per PPN in the Anon role, its anonymous page
    owner: HashMap<u32, u32>,
    referenced: Vec<bool>,
    hand: u32,
    free: Vec<u32>,
    cache: VecDeque<u32>,
    swapped: HashMap<u32, u64>,
    /// per file page, the PPN caching it or NOT_ALLOCATED
    files: Vec<u32>,
    /// per PPN in the page cache that holds a file page, that page
    file_of: HashMap<u32, u32>,
    counts: [u64; 5],
    kernel_pages: u32,
    /// cumulative counts
    pub c: GuestCounters,
}

/// What a file read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRead {
    /// in the page cache on this PPN
    Hit(u32),
    /// not cached: read from disk into this PPN, now in the page cache
    Miss(u32),
}

/// Pages a guest reclaims to give: the PPNs and, for each anonymous page swapped out to free
/// one, that page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// the PPNs, in the order taken
    pub ppns: Vec<u32>,
    /// (anonymous page, PPN) swapped out on the way, whose contents the caller records
    pub swapped_out: Vec<(u32, u32)>,
}

impl GuestOs {
    /// A booted guest of `pages` pages with an anonymous region of `anon_pages` pages: the kernel
    /// on the lowest PPNs, then the boot page cache, the rest free (allocated lowest first).
    pub fn boot(params: &GuestParams, pages: u32, anon_pages: u32) -> Self {
        let kernel = params.kernel_pages(pages);
        let cache = (super::spec::pages_of(params.boot_cache_bytes) as u32).min(pages - kernel);
        let mut role = vec![GuestRole::Free; pages as usize];
        role[..kernel as usize].fill(GuestRole::Kernel);
        role[kernel as usize..(kernel + cache) as usize].fill(GuestRole::Cache);
        let mut counts = [0u64; 5];
        counts[GuestRole::Kernel as usize] = u64::from(kernel);
        counts[GuestRole::Cache as usize] = u64::from(cache);
        counts[GuestRole::Free as usize] = u64::from(pages - kernel - cache);
        GuestOs {
            role,
            anon: vec![NOT_ALLOCATED; anon_pages as usize],
            owner: HashMap::new(),
            referenced: vec![false; anon_pages as usize],
            hand: 0,
            free: ((kernel + cache)..pages).rev().collect(),
            cache: (kernel..kernel + cache).collect(),
            swapped: HashMap::new(),
            files: Vec::new(),
            file_of: HashMap::new(),
            counts,
            kernel_pages: kernel,
            c: GuestCounters::default(),
        }
    }

    /// Pages in role `r`.
    pub fn role_pages(&self, r: GuestRole) -> u64 {
        self.counts[r as usize]
    }

    /// Role of page `ppn`.
    pub fn role(&self, ppn: u32) -> GuestRole {
        self.role[ppn as usize]
    }

    /// Kernel pages (the lowest PPNs).
    pub fn kernel_pages(&self) -> u32 {
        self.kernel_pages
    }

    /// Anonymous pages in guest swap.
    pub fn swapped_pages(&self) -> u64 {
        self.swapped.len() as u64
    }

    /// The contents anonymous page `vpn` had when the guest swapped it out, if it is swapped.
    pub fn swapped_content(&self, vpn: u32) -> Option<u64> {
        self.swapped.get(&vpn).copied()
    }

    /// Size of the anonymous region, pages.
    pub fn anon_pages(&self) -> u32 {
        self.anon.len() as u32
    }

    /// The PPN of anonymous page `vpn`, if resident.
    pub fn resident(&self, vpn: u32) -> Option<u32> {
        let p = self.anon[vpn as usize];
        (p < SWAPPED).then_some(p)
    }

    fn set_role(&mut self, ppn: u32, r: GuestRole) {
        let old = std::mem::replace(&mut self.role[ppn as usize], r);
        self.counts[old as usize] -= 1;
        self.counts[r as usize] += 1;
    }

    /// The least recently touched resident anonymous page (CLOCK), if any.
    fn cold_anon(&mut self) -> Option<u32> {
        let n = self.anon.len() as u32;
        if self.counts[GuestRole::Anon as usize] == 0 {
            return None;
        }
        // two sweeps at most: the first clears every bit
        for _ in 0..2 * n {
            let vpn = self.hand;
            self.hand = (self.hand + 1) % n;
            if self.anon[vpn as usize] >= SWAPPED {
                continue;
            }
            if std::mem::take(&mut self.referenced[vpn as usize]) {
                continue;
            }
            return Some(vpn);
        }
        None
    }

    /// Take one page for a new use: free, else dropped page cache, else a cold anonymous page
    /// swapped out. `content` gives a PPN's current contents (recorded for a swapped-out page).
    /// Returns the PPN and where it came from (role it had).
    fn take_page(&mut self, out: &mut Vec<(u32, u32)>, content: &mut impl FnMut(u32) -> u64) -> Option<(u32, GuestRole)> {
        if let Some(p) = self.free.pop() {
            return Some((p, GuestRole::Free));
        }
        if let Some(p) = self.cache.pop_front() {
            self.c.cache_dropped += 1;
            if let Some(f) = self.file_of.remove(&p) {
                self.files[f as usize] = NOT_ALLOCATED;
            }
            return Some((p, GuestRole::Cache));
        }
        let vpn = self.cold_anon()?;
        let p = self.anon[vpn as usize];
        self.anon[vpn as usize] = SWAPPED;
        self.owner.remove(&p);
        self.swapped.insert(vpn, content(p));
        self.c.swap_out += 1;
        out.push((vpn, p));
        Some((p, GuestRole::Anon))
    }

    /// The balloon driver allocates up to `n` pages (see the module docs); `content(ppn)` reads
    /// a page's contents for a guest swap-out.
    pub fn balloon_take(&mut self, n: u64, mut content: impl FnMut(u32) -> u64) -> Reclaimed {
        let mut r = Reclaimed::default();
        for _ in 0..n {
            let Some((p, from)) = self.take_page(&mut r.swapped_out, &mut content) else { break };
            match from {
                GuestRole::Free => self.c.balloon_free += 1,
                GuestRole::Cache => self.c.balloon_cache += 1,
                _ => self.c.balloon_anon += 1,
            }
            self.set_role(p, GuestRole::Balloon);
            r.ppns.push(p);
        }
        r
    }

    /// The balloon driver frees balloon page `ppn` to the free list.
    pub fn balloon_give(&mut self, ppn: u32) {
        debug_assert_eq!(self.role[ppn as usize], GuestRole::Balloon);
        self.set_role(ppn, GuestRole::Free);
        self.free.push(ppn);
    }

    /// The workload touches anonymous page `vpn`. `None` when the guest has no page to give
    /// (everything else is kernel or balloon). Pages swapped out to make room are appended to
    /// `swapped_out`; `content(ppn)` reads their contents.
    pub fn touch(&mut self, vpn: u32, swapped_out: &mut Vec<(u32, u32)>, mut content: impl FnMut(u32) -> u64) -> Option<GuestTouch> {
        let p = self.anon[vpn as usize];
        self.referenced[vpn as usize] = true;
        if p < SWAPPED {
            return Some(GuestTouch::Resident(p));
        }
        let (ppn, _) = self.take_page(swapped_out, &mut content)?;
        self.set_role(ppn, GuestRole::Anon);
        self.anon[vpn as usize] = ppn;
        self.owner.insert(ppn, vpn);
        if p == SWAPPED {
            let content = self.swapped.remove(&vpn).expect("a swapped page has its contents");
            self.c.swap_in += 1;
            Some(GuestTouch::SwapIn { ppn, content })
        } else {
            Some(GuestTouch::Fresh(ppn))
        }
    }

    /// Give the guest a file set of `pages` pages, none cached.
    pub fn set_file_pages(&mut self, pages: u32) {
        self.files = vec![NOT_ALLOCATED; pages as usize];
    }

    /// Size of the file set, pages.
    pub fn file_pages(&self) -> u32 {
        self.files.len() as u32
    }

    /// The PPN caching file page `f`, if cached.
    pub fn cached_file(&self, f: u32) -> Option<u32> {
        let p = self.files[f as usize];
        (p != NOT_ALLOCATED).then_some(p)
    }

    /// Read file page `f` through the page cache (see the module docs). `None` when the guest
    /// has no page to give. Anonymous pages swapped out to make room are appended to
    /// `swapped_out`.
    pub fn file_read(&mut self, f: u32, swapped_out: &mut Vec<(u32, u32)>, mut content: impl FnMut(u32) -> u64) -> Option<FileRead> {
        let p = self.files[f as usize];
        if p != NOT_ALLOCATED {
            return Some(FileRead::Hit(p));
        }
        let (ppn, _) = self.take_page(swapped_out, &mut content)?;
        self.set_role(ppn, GuestRole::Cache);
        self.cache.push_back(ppn);
        self.files[f as usize] = ppn;
        self.file_of.insert(ppn, f);
        Some(FileRead::Miss(ppn))
    }

    /// Undo a file read's miss that the hypervisor could not back: the page goes back to the
    /// free list and the file page is not cached.
    pub fn undo_file_read(&mut self, f: u32, ppn: u32) {
        debug_assert_eq!(self.cache.back(), Some(&ppn));
        self.cache.pop_back();
        self.file_of.remove(&ppn);
        self.files[f as usize] = NOT_ALLOCATED;
        self.set_role(ppn, GuestRole::Free);
        self.free.push(ppn);
    }

    /// Undo a touch's allocation that the hypervisor could not back: `vpn` goes back to where it
    /// was (not allocated, or swapped with `content`) and its PPN to the free list.
    pub fn undo_touch(&mut self, vpn: u32, t: GuestTouch) {
        let (ppn, back) = match t {
            GuestTouch::Resident(_) => return,
            GuestTouch::Fresh(p) => (p, NOT_ALLOCATED),
            GuestTouch::SwapIn { ppn, content } => {
                self.swapped.insert(vpn, content);
                self.c.swap_in -= 1;
                (ppn, SWAPPED)
            }
        };
        self.anon[vpn as usize] = back;
        self.owner.remove(&ppn);
        self.set_role(ppn, GuestRole::Free);
        self.free.push(ppn);
    }

    /// Recount: every PPN in one role and the counts right, the free list and page cache hold
    /// exactly their roles' pages, every anonymous page resident on a PPN it owns or swapped.
    pub fn audit(&self) -> Result<(), String> {
        let mut counts = [0u64; 5];
        for r in &self.role {
            counts[*r as usize] += 1;
        }
        if counts != self.counts {
            return Err(format!("guest roles recounted {counts:?}, kept {:?}", self.counts));
        }
        let check = |list: &mut dyn Iterator<Item = u32>, r: GuestRole, n: u64| -> Result<(), String> {
            let mut seen = 0u64;
            for p in list {
                if self.role[p as usize] != r {
                    return Err(format!("PPN {p} on the {r:?} list has role {:?}", self.role[p as usize]));
                }
                seen += 1;
            }
            if seen != n {
                return Err(format!("{r:?} list holds {seen} pages, role count {n}"));
            }
            Ok(())
        };
        check(&mut self.free.iter().copied(), GuestRole::Free, counts[GuestRole::Free as usize])?;
        check(&mut self.cache.iter().copied(), GuestRole::Cache, counts[GuestRole::Cache as usize])?;
        let mut resident = 0u64;
        for (vpn, &p) in self.anon.iter().enumerate() {
            match p {
                NOT_ALLOCATED => {}
                SWAPPED => {
                    if !self.swapped.contains_key(&(vpn as u32)) {
                        return Err(format!("anonymous page {vpn} swapped without contents"));
                    }
                }
                p => {
                    resident += 1;
                    if self.role[p as usize] != GuestRole::Anon || self.owner.get(&p) != Some(&(vpn as u32)) {
                        return Err(format!("anonymous page {vpn} on PPN {p}, which is {:?}", self.role[p as usize]));
                    }
                }
            }
        }
        if resident != counts[GuestRole::Anon as usize] || self.owner.len() as u64 != resident {
            return Err(format!("{resident} resident anonymous pages, {} anon PPNs", counts[GuestRole::Anon as usize]));
        }
        for (f, &p) in self.files.iter().enumerate() {
            if p != NOT_ALLOCATED && (self.role[p as usize] != GuestRole::Cache || self.file_of.get(&p) != Some(&(f as u32))) {
                return Err(format!("file page {f} cached on PPN {p}, which is {:?}", self.role[p as usize]));
            }
        }
        if self.file_of.len() != self.files.iter().filter(|&&p| p != NOT_ALLOCATED).count() {
            return Err(format!("{} cache pages hold file pages, {} file pages cached", self.file_of.len(), self.files.iter().filter(|&&p| p != NOT_ALLOCATED).count()));
        }
        let swapped = self.anon.iter().filter(|&&p| p == SWAPPED).count();
        if swapped != self.swapped.len() {
            return Err(format!("{swapped} anonymous pages swapped, {} contents kept", self.swapped.len()));
        }
        Ok(())
    }
}
