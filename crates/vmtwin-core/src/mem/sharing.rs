//! Content-based page sharing: the global hash table of shared and hint frames [S1 §4.2–4.3].
//!
//! A scanned candidate page is hashed (64 bits) and looked up in one table for the whole host:
//!
//! 1. **match with a shared frame**: compare the contents in full; if identical, remap the
//!    candidate to the shared machine page (copy-on-write), add a reference, free its old page;
//! 2. **match with a hint frame** (an earlier, unshared page, remembered by VM and PPN): rehash
//!    the hint page's *current* contents; if the hash changed the hint is stale and is dropped
//!    (the candidate becomes the hint); if not, compare in full and, if identical, share the two
//!    pages: the hint's machine page becomes the shared page with two references and the
//!    candidate's page is freed;
//! 3. **no match**: insert the candidate as a hint, *not* marking it copy-on-write, so writes to
//!    unshared pages take no faults;
//! 4. **false match** (equal hash, different contents): the page is ineligible and left alone.
//!
//! A write to a shared page breaks sharing (a private copy, one reference fewer; the frame and
//! its machine page go when the last reference does). The table is open addressing with linear
//! probing over 16-byte frames (the paper's frame size): a shared frame holds the hash, the MPN
//! and a 32-bit reference count; a hint frame the hash and a back-reference (VM, PPN). It doubles
//! when an insert would take it past a load factor of 3/4 ([`MAX_LOAD`]); a lookup that misses
//! returns the empty slot ending its probe run, where the insert goes without probing again. The
//! slot layout decides no result (nothing reads the frames in slot order but counts). The host
//! ([`crate::mem::MemHost`]) scans pages of its VMs in random order at a set rate; over model
//! content the "full comparison" compares content ids (two pages are identical exactly when their
//! ids are equal). [`scan_images`] is the same algorithm over raw memory images, comparing bytes.
//!
//! # Tunables
//! `share_scan_pages_per_s` (per VM) and `share_scan_cpu_ns` in `MemParams`.
//!
//! # Counters
//! Frames in use, shared frames, hint frames; per VM SHRD (pages in shared state), SHRDSVD
//! (pages saved: sharers − frames, split 1/n per sharer), ZERO (shared zero pages).
//!
//! # Known gaps
//! - Collisions are resolved by probing, not chaining, and hint frames keep the full hash
//!   instead of a truncated one; one frame per hash value, as the paper's false-match rule needs.
//! - Reference counts are 32-bit in the frame, not 16-bit with an overflow table.
//! - Inside the host, pages loaded from a memory image carry a 60-bit content id derived from
//!   the hash of their bytes, and are compared by that id; only [`scan_images`] compares bytes.

use super::content::{page_hash, MemoryImage};

/// Bit of a frame's `a` word marking a hint frame.
const HINT: u32 = 1 << 31;

/// One 16-byte frame of the table; `hash == 0` marks an empty slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Frame {
    /// 64-bit content hash (never 0 for a used frame)
    pub hash: u64,
    a: u32,
    b: u32,
}

/// What a used frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// a shared machine page and its reference count
    Shared {
        /// machine page number
        mpn: u32,
        /// number of guest pages mapped to it
        refs: u32,
    },
    /// an unshared page seen by the scanner
    Hint {
        /// VM index
        vm: u32,
        /// guest page
        ppn: u32,
    },
}

impl Frame {
    /// A shared frame.
    pub fn shared(hash: u64, mpn: u32, refs: u32) -> Self {
        debug_assert!(mpn < HINT && hash != 0);
        Frame { hash, a: mpn, b: refs }
    }
    /// A hint frame.
    pub fn hint(hash: u64, vm: u32, ppn: u32) -> Self {
        debug_assert!(vm < HINT && hash != 0);
        Frame { hash, a: vm | HINT, b: ppn }
    }
    /// Decode a used frame.
    #[inline]
    pub fn kind(&self) -> FrameKind {
        if self.a & HINT != 0 {
            FrameKind::Hint { vm: self.a & !HINT, ppn: self.b }
        } else {
            FrameKind::Shared { mpn: self.a, refs: self.b }
        }
    }
}

/// Largest load factor (used slots / slots) of the frame table, as (numerator, denominator): the
/// table doubles before an insert would pass it. Linear probing's expected probe count for a
/// miss, (1 + 1/(1 - a)^2) / 2, is 2.5 at 1/2 and 8.5 at 3/4, but four 16-byte slots share a
/// cache line, so a probe run rarely costs a second miss; at 1/2 the table is half empty after
/// every doubling, and a first scan spends more time faulting its pages in than probing it.
pub const MAX_LOAD: (usize, usize) = (3, 4);

#[inline]
fn over_load(used: usize, slots: usize) -> bool {
    used * MAX_LOAD.1 > slots * MAX_LOAD.0
}

/// Slots (a power of two) for `frames` frames within [`MAX_LOAD`].
fn slots_for(frames: usize) -> usize {
    (frames * MAX_LOAD.1).div_ceil(MAX_LOAD.0).next_power_of_two()
}

/// `n` empty slots, from zeroed memory (a fresh allocation's pages are zero already, where
/// filling with `Frame::default()` would write every byte).
fn empty_slots(n: usize) -> Vec<Frame> {
    let layout = std::alloc::Layout::array::<Frame>(n).expect("a frame table fits in memory");
    // SAFETY: `Frame` is plain integers, for which all-zero bytes are a valid value (an empty
    // slot); the pointer comes from the global allocator with `Frame`'s layout for `n` frames,
    // which is what `Vec::from_raw_parts` requires, and a null pointer is handled.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut Frame;
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // write one word per 4 KB page, so each page faults in once, for writing (the first
        // access to a slot is a read, which would map the shared zero page, and the write that
        // follows would fault a second time)
        let bytes = n * std::mem::size_of::<Frame>();
        let b = p as *mut u8;
        let mut at = 0;
        while at < bytes {
            std::ptr::write_volatile(b.add(at), 0);
            at += 4096;
        }
        Vec::from_raw_parts(p, n, n)
    }
}

/// The open-addressing frame table (see the module docs).
#[derive(Debug, Clone)]
pub struct FrameTable {
    slots: Vec<Frame>,
    used: usize,
    shared: usize,
}

impl Default for FrameTable {
    fn default() -> Self {
        Self::with_capacity(1024)
    }
}

impl FrameTable {
    /// A table sized for about `frames` frames at a load factor of at most [`MAX_LOAD`].
    pub fn with_capacity(frames: usize) -> Self {
        let n = slots_for(frames).max(16);
        FrameTable { slots: empty_slots(n), used: 0, shared: 0 }
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        // the hash's high bits: low bits of a model id's hash are as good, but image hashes
        // are finished by a multiply, whose top bits mix best
        (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & (self.slots.len() - 1)
    }

    /// Slot holding `hash`, if any.
    #[inline]
    pub fn find(&self, hash: u64) -> Option<usize> {
        self.probe(hash).ok()
    }

    /// `Ok(slot)` holding `hash`, or `Err(slot)`: the empty slot that ends its probe run, where
    /// [`FrameTable::insert_at`] puts it without probing again.
    #[inline]
    pub fn probe(&self, hash: u64) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let h = self.slots[i].hash;
            if h == hash {
                return Ok(i);
            }
            if h == 0 {
                return Err(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Insert `f`, whose hash is not in the table, at `slot` from [`FrameTable::probe`] (no
    /// change to the table in between); the same as [`FrameTable::insert`].
    #[inline]
    pub fn insert_at(&mut self, slot: usize, f: Frame) {
        if over_load(self.used + 1, self.slots.len()) {
            return self.insert(f);
        }
        debug_assert_eq!(self.probe(f.hash), Err(slot));
        self.slots[slot] = f;
        self.used += 1;
        self.shared += matches!(f.kind(), FrameKind::Shared { .. }) as usize;
    }

    /// Hint the CPU to fetch the slot where `hash` would start its probe (a full scan issues
    /// these a few pages ahead, so the table's cache misses overlap).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = self.slots.as_ptr().wrapping_add(self.home(hash)) as *const i8;
            // SAFETY: a prefetch never faults and reads nothing architecturally; `p` is in bounds.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// The frame in slot `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Frame {
        self.slots[i]
    }

    /// Replace the frame in slot `i` (same hash).
    #[inline]
    pub fn set(&mut self, i: usize, f: Frame) {
        debug_assert_eq!(self.slots[i].hash, f.hash);
        let was_shared = matches!(self.slots[i].kind(), FrameKind::Shared { .. });
        let is_shared = matches!(f.kind(), FrameKind::Shared { .. });
        self.shared = self.shared + is_shared as usize - was_shared as usize;
        self.slots[i] = f;
    }

    /// Insert a frame whose hash is not in the table.
    pub fn insert(&mut self, f: Frame) {
        if over_load(self.used + 1, self.slots.len()) {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(f.hash);
        while self.slots[i].hash != 0 {
            debug_assert_ne!(self.slots[i].hash, f.hash);
            i = (i + 1) & mask;
        }
        self.slots[i] = f;
        self.used += 1;
        self.shared += matches!(f.kind(), FrameKind::Shared { .. }) as usize;
    }

    /// Remove the frame in slot `i`, shifting later frames of its probe run back.
    pub fn remove(&mut self, mut i: usize) {
        self.shared -= matches!(self.slots[i].kind(), FrameKind::Shared { .. }) as usize;
        self.used -= 1;
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let f = self.slots[j];
            if f.hash == 0 {
                break;
            }
            let h = self.home(f.hash);
            // move f into the hole at i unless its home lies cyclically in (i, j]
            let stays = if i <= j { i < h && h <= j } else { i < h || h <= j };
            if !stays {
                self.slots[i] = f;
                i = j;
            }
        }
        self.slots[i] = Frame::default();
    }

    /// Make room for `frames` frames in all without growing again.
    pub fn reserve(&mut self, frames: usize) {
        let n = slots_for(frames);
        if n > self.slots.len() {
            self.rebuild(n);
        }
    }

    fn grow(&mut self) {
        self.rebuild(self.slots.len() * 2);
    }

    fn rebuild(&mut self, n: usize) {
        let old = std::mem::replace(&mut self.slots, empty_slots(n));
        let mask = n - 1;
        // the same frames, counts unchanged: only their slots move
        for f in old.into_iter().filter(|f| f.hash != 0) {
            let mut i = self.home(f.hash);
            while self.slots[i].hash != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = f;
        }
    }

    /// Frames in use.
    pub fn len(&self) -> usize {
        self.used
    }
    /// Whether no frame is in use.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }
    /// Shared frames.
    pub fn shared_frames(&self) -> usize {
        self.shared
    }
    /// Hint frames.
    pub fn hint_frames(&self) -> usize {
        self.used - self.shared
    }
    /// Heap bytes of the table.
    pub fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Frame>()
    }
    /// Every used frame.
    pub fn frames(&self) -> impl Iterator<Item = Frame> + '_ {
        self.slots.iter().copied().filter(|f| f.hash != 0)
    }
}

/// Outcome of a full sharing scan over memory images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageScan {
    /// pages scanned
    pub pages: u64,
    /// pages mapped to a shared frame (Fig. 4's "Shared")
    pub shared: u64,
    /// distinct shared frames
    pub shared_frames: u64,
    /// pages whose machine page was freed: shared − shared frames (Fig. 4's "Reclaimed")
    pub reclaimed: u64,
    /// all-zero pages among the shared
    pub zero_shared: u64,
    /// hash matches whose bytes differed (pages left unshared)
    pub false_matches: u64,
}

/// One full scan of every page of `images`, in order, as a static snapshot: the shared frame's
/// contents are those of its first page (all sharers hold the same bytes), and every hash
/// match is confirmed by comparing bytes.
pub fn scan_images(images: &[&MemoryImage]) -> ImageScan {
    let total: u64 = images.iter().map(|m| u64::from(m.pages())).sum();
    let mut table = FrameTable::with_capacity(total as usize);
    let mut out = ImageScan { pages: total, ..Default::default() };
    for (vm, img) in images.iter().enumerate() {
        for ppn in 0..img.pages() {
            let page = img.page(ppn);
            let h = page_hash(page);
            match table.find(h) {
                None => table.insert(Frame::hint(h, vm as u32, ppn)),
                Some(slot) => {
                    let f = table.get(slot);
                    match f.kind() {
                        FrameKind::Hint { vm: hv, ppn: hp } => {
                            if images[hv as usize].page(hp) == page {
                                // the hint's page becomes the shared page; an image frame keeps
                                // its representative page (image, page) where a host frame keeps
                                // its MPN and reference count
                                table.set(slot, Frame { hash: h, a: hv, b: hp });
                                out.shared += 2;
                                out.shared_frames += 1;
                                out.reclaimed += 1;
                                out.zero_shared += 2 * u64::from(page.iter().all(|&b| b == 0));
                            } else {
                                out.false_matches += 1;
                            }
                        }
                        FrameKind::Shared { mpn: rv, refs: rp } => {
                            if images[rv as usize].page(rp) == page {
                                out.shared += 1;
                                out.reclaimed += 1;
                                out.zero_shared += u64::from(page.iter().all(|&b| b == 0));
                            } else {
                                out.false_matches += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
