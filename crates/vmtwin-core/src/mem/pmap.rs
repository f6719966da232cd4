//! The pmap: per guest "physical" page (PPN) its state, its backing and its content, in 12 bytes.
//!
//! ESX keeps, per VM, a map from "physical" page numbers to machine page numbers (research/memory.md
//! A.1) and annotates entries that are not backed (ballooned, swapped). Here each guest page is
//! one 12-byte slot of a flat array (4-byte aligned, so a random access touches one cache line
//! in most cases, instead of one per word with two arrays):
//!
//! ```text
//!   content: u64   bit 63 = touched in the current sampling period (working-set bit);
//!                  bits 0..63 = content id (what the page holds; 0 is the zero page)
//!   entry:   u32   bits 29..32 = state, bit 28 = sampled (mapping invalidated by the
//!                  active-memory sampler), bits 0..28 = index (MPN, compressed size in
//!                  quarter pages, or 0)
//! ```
//!
//! so a guest page costs 12 bytes (512 GB of guest memory in 1.5 GB), and machine page numbers
//! reach 2^28 (1 TiB of machine memory per host). The states are the six of research/memory.md
//! A.2 plus `Deflated`: a page the balloon gave back to the guest, unbacked but still counted as
//! mapped ("considered as mapped through the lifetime of the VM", [S2 §3.2]). Per-state counts
//! are kept on every transition, so counters are O(1).
//!
//! # Tunables
//! None.
//!
//! # Counters
//! Pages per state ([`Pmap::count`]), pages touched this period ([`Pmap::touched`]).
//!
//! # Known gaps
//! - Machine memory above 2^28 pages (1 TiB) per host is not representable.

/// What backs a guest page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PageState {
    /// never touched: no machine page, not mapped
    Unmapped = 0,
    /// backed by a private machine page
    Regular = 1,
    /// backed by a copy-on-write machine page shared by content
    Shared = 2,
    /// held in the VM's compression cache in 1/4 or 1/2 of a page
    Compressed = 3,
    /// pinned by the guest's balloon driver; the machine page was given back
    Ballooned = 4,
    /// in the VM's swap file
    Swapped = 5,
    /// released by the balloon to the guest; unbacked until touched, still counted as mapped
    Deflated = 6,
}

/// All states, in encoding order.
pub const STATES: [PageState; 7] = [
    PageState::Unmapped,
    PageState::Regular,
    PageState::Shared,
    PageState::Compressed,
    PageState::Ballooned,
    PageState::Swapped,
    PageState::Deflated,
];

const STATE_SHIFT: u32 = 29;
const SAMPLED: u32 = 1 << 28;
const INDEX_MASK: u32 = SAMPLED - 1;
const TOUCHED: u64 = 1 << 63;
/// Mask of the content-id bits of a content word.
pub const CONTENT_MASK: u64 = !TOUCHED;
/// Largest machine page number a pmap entry can hold.
pub const MAX_MPN: u32 = INDEX_MASK;

#[derive(Debug, Clone, Copy)]
#[repr(C, packed(4))]
struct Slot {
    content: u64,
    entry: u32,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 12);

/// One VM's pmap (see the module docs).
#[derive(Debug, Clone)]
pub struct Pmap {
    slots: Vec<Slot>,
    counts: [u64; 7],
    touched: u64,
}

impl Pmap {
    /// A pmap of `pages` unmapped pages whose first-touch contents are `content` (one id each).
    pub fn new(content: Vec<u64>) -> Self {
        let n = content.len() as u64;
        let slots = content.into_iter().map(|c| Slot { content: c & CONTENT_MASK, entry: 0 }).collect::<Vec<_>>();
        let mut counts = [0u64; 7];
        counts[0] = n;
        Pmap { slots, counts, touched: 0 }
    }

    /// Number of guest pages.
    #[inline]
    pub fn pages(&self) -> u32 {
        self.slots.len() as u32
    }

    /// State of page `ppn`.
    #[inline]
    pub fn state(&self, ppn: u32) -> PageState {
        STATES[(self.slots[ppn as usize].entry >> STATE_SHIFT) as usize]
    }

    /// Whether page `ppn` is in `state` (compares the encoded field, no decoding).
    #[inline]
    pub fn is(&self, ppn: u32, state: PageState) -> bool {
        self.slots[ppn as usize].entry >> STATE_SHIFT == state as u32
    }

    /// Content id and machine page of page `ppn` if it is regular (one slot read: the sharing
    /// scanner's question).
    #[inline]
    pub fn regular(&self, ppn: u32) -> Option<(u64, u32)> {
        let s = self.slots[ppn as usize];
        (s.entry >> STATE_SHIFT == PageState::Regular as u32).then_some((s.content & CONTENT_MASK, s.entry & INDEX_MASK))
    }

    /// Index field of page `ppn` (MPN for regular and shared pages, quarters for compressed).
    #[inline]
    pub fn index(&self, ppn: u32) -> u32 {
        self.slots[ppn as usize].entry & INDEX_MASK
    }

    /// Content id of page `ppn`.
    #[inline]
    pub fn content(&self, ppn: u32) -> u64 {
        self.slots[ppn as usize].content & CONTENT_MASK
    }

    /// Replace the content id of page `ppn` (a write), keeping its touched bit.
    #[inline]
    pub fn set_content(&mut self, ppn: u32, cid: u64) {
        let s = &mut self.slots[ppn as usize];
        s.content = (s.content & TOUCHED) | (cid & CONTENT_MASK);
    }

    /// Move page `ppn` to `state` with `index`, keeping its sampled bit and the counts.
    #[inline]
    pub fn set(&mut self, ppn: u32, state: PageState, index: u32) {
        debug_assert!(index <= INDEX_MASK);
        let s = &mut self.slots[ppn as usize];
        let e = s.entry;
        self.counts[(e >> STATE_SHIFT) as usize] -= 1;
        self.counts[state as usize] += 1;
        s.entry = ((state as u32) << STATE_SHIFT) | (e & SAMPLED) | index;
    }

    /// Pages in `state`.
    #[inline]
    pub fn count(&self, state: PageState) -> u64 {
        self.counts[state as usize]
    }

    /// Mark `ppn` as sampled (its mappings invalidated); returns false if it already was.
    #[inline]
    pub fn mark_sampled(&mut self, ppn: u32) -> bool {
        let s = &mut self.slots[ppn as usize];
        let was = s.entry & SAMPLED != 0;
        s.entry |= SAMPLED;
        !was
    }

    /// Clear the sampled bit of `ppn`; returns whether it was set (a sampled page's first touch).
    #[inline]
    pub fn take_sampled(&mut self, ppn: u32) -> bool {
        let s = &mut self.slots[ppn as usize];
        let was = s.entry & SAMPLED != 0;
        s.entry &= !SAMPLED;
        was
    }

    /// Note an access to `ppn` for the working set; returns true on its first access this period.
    #[inline]
    pub fn note_touch(&mut self, ppn: u32) -> bool {
        let s = &mut self.slots[ppn as usize];
        if s.content & TOUCHED == 0 {
            s.content |= TOUCHED;
            self.touched += 1;
            true
        } else {
            false
        }
    }

    /// Distinct pages touched since the last [`Pmap::end_period`].
    #[inline]
    pub fn touched(&self) -> u64 {
        self.touched
    }

    /// End a working-set period: clear every touched bit and return the period's count.
    pub fn end_period(&mut self) -> u64 {
        for s in &mut self.slots {
            s.content &= CONTENT_MASK;
        }
        std::mem::take(&mut self.touched)
    }

    /// Hint the CPU to fetch page `ppn`'s slot (random touches issue these a few pages ahead,
    /// so their cache misses overlap instead of queueing one after another).
    #[inline]
    pub fn prefetch(&self, ppn: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = self.slots.as_ptr().wrapping_add(ppn as usize) as *const i8;
            // SAFETY: a prefetch never faults and reads nothing architecturally.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = ppn;
    }

    /// Heap bytes held per guest page (the benchmark's figure).
    pub fn bytes_per_page(&self) -> f64 {
        let bytes = self.slots.capacity() * std::mem::size_of::<Slot>();
        bytes as f64 / self.slots.len().max(1) as f64
    }
}
