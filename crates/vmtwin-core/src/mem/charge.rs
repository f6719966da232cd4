//! Each VM's charge for its shared pages, kept as sharing changes instead of walked per sample.
//!
//! The 2013 paper's consumed memory counts a page shared n ways as 1/n to each sharer, and
//! SHRDSVD is the rest, (n − 1)/n [S2 §3.2]. When a frame's reference count changes, the charge
//! of *every* page mapped to it changes, in every VM that has one; walking each VM's pmap at every
//! sample to sum 1/n is O(guest pages) (7.5 G slot reads in a simulated hour of 16 x 1 GB VMs).
//! Instead, per VM, a histogram counts its shared pages by the reference count of their frame
//! (`refs -> pages`), and per shared machine page a short list records how many pages of each
//! VM map to it. The charge is Σ pages / refs over the VM's buckets, summed in increasing refs,
//! so it is deterministic. A second per-VM count gives ZERO (shared zero pages).
//!
//! **Deferred histogram updates.** A page joining or leaving a frame of r references moves each
//! sharing VM's pages from bucket r to r ± 1: O(VMs on the frame) per join. A sharing scan joins
//! the same frame many times in a row (a frame of the OS image shared by 16 VMs takes 16 joins,
//! the zero page's frame one per zero page), so a join or leave only updates the frame's own list
//! (its VMs' page counts now) and marks the frame dirty; each frame's list also remembers the
//! counts and reference count last entered in the histograms. Before any histogram is read, and at
//! the end of a full scan, the dirty frames are settled: each takes its remembered contribution
//! out of its VMs' buckets and puts its current one in, once, however many joins and leaves it saw.
//! The histograms are integer counts that depend only on which pages map to which frame, so a
//! read gives the same histogram, and the same charge to the last bit, as updating at every join.
//! Buckets for reference counts below [`DENSE_REFS`] are an array per VM; larger counts (the zero
//! page's frame) are in an ordered map. Each machine page has its record (reference counts now
//! and as entered, the head of its list: 12 bytes), found by MPN without an index, so a join
//! touches the record and the head entry only. Settling walks each dirty list once, entering
//! each changed entry on its own (the buckets are sums) and folding a VM's later entries into
//! its first.
//!
//! The host's `audit` recounts the histograms from the pmaps and the frame table, which is the
//! independent check of this bookkeeping.
//!
//! # Tunables
//! None.
//!
//! # Counters
//! Per VM: the 1/n charge of its shared pages ([`ShareCharge::charge`]), its shared zero pages
//! ([`ShareCharge::zero`]), its pages per reference count ([`ShareCharge::histogram`]).
//!
//! # Known gaps
//! - 12 bytes per machine page, shared or not, plus a 16-byte list entry per (frame, VM); an
//!   index to records of shared pages only took 4 bytes per machine page plus 16 per shared
//!   frame, and a dependent cache miss and a record allocation per new frame.
//! - Histogram reads lock a mutex (they take `&self` and may settle deferred updates).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Reference counts below this are bucketed in an array per VM (the rest in an ordered map).
pub const DENSE_REFS: usize = 64;

const NONE: u32 = u32::MAX;

/// Bit of [`FrameSharers::seen`] marking a machine page in the dirty list.
const DIRTY: u32 = 1 << 31;

/// One machine page's sharers (12 bytes, one per machine page, found by MPN).
#[derive(Debug, Clone, Copy)]
struct FrameSharers {
    /// references now (pages mapped to the machine page)
    refs_now: u32,
    /// references as last entered in the histograms, and [`DIRTY`]
    seen: u32,
    /// first entry of its list in the arena (the VM that joined last), or NONE
    head: u32,
}

const NO_SHARERS: FrameSharers = FrameSharers { refs_now: 0, seen: 0, head: NONE };

/// One VM's entry in a frame's list: its pages mapped to the frame now and as last entered in
/// the histograms; lists are linked through an arena, so a new frame allocates nothing.
#[derive(Debug, Clone, Copy)]
struct Entry {
    vm: u32,
    now: u32,
    seen: u32,
    next: u32,
}

/// One VM's shared pages by the reference count of their frame.
#[derive(Debug)]
struct Hist {
    dense: Box<[u64; DENSE_REFS]>,
    sparse: BTreeMap<u32, u64>,
}

impl Hist {
    #[inline]
    fn add(&mut self, refs: u32, n: u64) {
        if (refs as usize) < DENSE_REFS {
            self.dense[refs as usize] += n;
        } else {
            *self.sparse.entry(refs).or_default() += n;
        }
    }
    #[inline]
    fn sub(&mut self, refs: u32, n: u64) {
        if (refs as usize) < DENSE_REFS {
            self.dense[refs as usize] -= n;
        } else {
            let e = self.sparse.get_mut(&refs).expect("a sharer's pages are in its frame's bucket");
            *e -= n;
            if *e == 0 {
                self.sparse.remove(&refs);
            }
        }
    }
    /// (refs, pages) for every non-empty bucket, in increasing refs.
    fn buckets(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let dense = self.dense.iter().enumerate().filter(|&(_, &n)| n > 0).map(|(r, &n)| (r as u32, n));
        dense.chain(self.sparse.iter().map(|(&r, &n)| (r, n)))
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// per machine page, its sharers
    recs: Vec<FrameSharers>,
    entries: Vec<Entry>,
    free_entries: Vec<u32>,
    /// machine pages whose frames changed since the histograms were last settled
    dirty: Vec<u32>,
    hist: Vec<Hist>,
    /// settling's scratch: per VM, the list being settled when it last met the VM (a count of
    /// lists settled) and its first entry there
    first_of_vm: Vec<(u32, u32)>,
    /// lists settled, wrapping (0 is never a current list)
    stamp: u32,
}

impl Inner {
    /// The record of machine page `mpn`, marked dirty.
    #[inline(always)]
    fn rec(&mut self, mpn: u32) -> usize {
        let r = &mut self.recs[mpn as usize];
        if r.seen & DIRTY == 0 {
            r.seen |= DIRTY;
            self.dirty.push(mpn);
        }
        mpn as usize
    }

    /// An entry of `vm` with pages mapped now in record `r`'s list, if any.
    #[inline]
    fn entry_with_pages(&self, r: usize, vm: u32) -> Option<usize> {
        let mut e = self.recs[r].head;
        while e != NONE {
            if self.entries[e as usize].vm == vm && self.entries[e as usize].now > 0 {
                return Some(e as usize);
            }
            e = self.entries[e as usize].next;
        }
        None
    }

    fn settle(&mut self) {
        let Inner { recs, entries, free_entries, dirty, hist, first_of_vm, stamp } = self;
        for &mpn in dirty.iter() {
            *stamp = stamp.wrapping_add(1);
            if *stamp == 0 {
                first_of_vm.fill((0, NONE));
                *stamp = 1;
            }
            let r = &mut recs[mpn as usize];
            let (now, seen) = (r.refs_now, r.seen & !DIRTY);
            debug_assert!(now < DIRTY);
            r.seen = now;
            // one walk: enter each changed entry (the histograms are sums, so a VM's entries
            // can be entered one by one), then fold a VM's later entries into its first and
            // unlink them and the emptied ones
            let mut prev = NONE;
            let mut e = r.head;
            while e != NONE {
                let Entry { vm, now: n, seen: s, next } = entries[e as usize];
                if (n, now) != (s, seen) {
                    let h = &mut hist[vm as usize];
                    if s > 0 {
                        h.sub(seen, u64::from(s));
                    }
                    if n > 0 {
                        h.add(now, u64::from(n));
                    }
                }
                let (at, first) = first_of_vm[vm as usize];
                if n == 0 || at == *stamp {
                    if n > 0 {
                        let f = &mut entries[first as usize];
                        f.now += n;
                        f.seen += n;
                    }
                    if prev == NONE {
                        recs[mpn as usize].head = next;
                    } else {
                        entries[prev as usize].next = next;
                    }
                    free_entries.push(e);
                } else {
                    entries[e as usize].seen = n;
                    first_of_vm[vm as usize] = (*stamp, e);
                    prev = e;
                }
                e = next;
            }
            debug_assert!(now > 0 || recs[mpn as usize].head == NONE);
        }
        dirty.clear();
        // a first scan dirties every frame at once; the tick's scans, a few hundred
        dirty.shrink_to(4096);
    }
}

/// Shared-page charges of a host's VMs (see the module docs).
#[derive(Debug)]
pub struct ShareCharge {
    inner: Mutex<Inner>,
    /// per VM, shared pages holding the zero page
    zero: Vec<u64>,
}

impl ShareCharge {
    /// Charges for a host of `machine_pages` pages (a record per machine page, made once).
    pub fn new(machine_pages: usize) -> Self {
        let inner = Inner { recs: vec![NO_SHARERS; machine_pages], ..Inner::default() };
        ShareCharge { inner: Mutex::new(inner), zero: Vec::new() }
    }

    fn inner(&mut self) -> &mut Inner {
        self.inner.get_mut().expect("the charge lock is never poisoned")
    }

    /// Track one more VM (indices follow the host's).
    pub fn add_vm(&mut self) {
        let g = self.inner();
        g.hist.push(Hist { dense: Box::new([0; DENSE_REFS]), sparse: BTreeMap::new() });
        g.first_of_vm.push((0, NONE));
        self.zero.push(0);
    }

    /// A page of `vm` now maps to shared machine page `mpn`, whose frame had `refs_before`
    /// references (0 for a new frame); `zero` if it holds the zero page.
    #[inline(always)]
    pub fn join(&mut self, vm: u32, mpn: u32, refs_before: u32, zero: bool) {
        let g = self.inner();
        let r = g.rec(mpn);
        debug_assert_eq!(g.recs[r].refs_now, refs_before);
        g.recs[r].refs_now += 1;
        // only the head is checked (a scan goes VM by VM, so a VM joining again is most often
        // the last to have joined): otherwise the VM gets a new entry even if it has one further
        // down, and settling merges them, so a join never walks the list
        let head = g.recs[r].head;
        match (head != NONE && g.entries[head as usize].vm == vm).then_some(head as usize) {
            Some(e) => g.entries[e].now += 1,
            None => {
                let e = Entry { vm, now: 1, seen: 0, next: g.recs[r].head };
                let at = match g.free_entries.pop() {
                    Some(at) => {
                        g.entries[at as usize] = e;
                        at
                    }
                    None => {
                        g.entries.push(e);
                        (g.entries.len() - 1) as u32
                    }
                };
                g.recs[r].head = at;
            }
        }
        self.zero[vm as usize] += u64::from(zero);
    }

    /// A page of `vm` no longer maps to shared machine page `mpn`, whose frame had
    /// `refs_before` references.
    #[inline]
    pub fn leave(&mut self, vm: u32, mpn: u32, refs_before: u32, zero: bool) {
        let g = self.inner();
        let r = g.rec(mpn);
        debug_assert_eq!(g.recs[r].refs_now, refs_before);
        g.recs[r].refs_now -= 1;
        let e = g.entry_with_pages(r, vm).expect("the leaving VM shares the frame");
        g.entries[e].now -= 1;
        self.zero[vm as usize] -= u64::from(zero);
    }

    /// Enter every deferred change in the histograms (reads do this themselves).
    pub fn settle(&mut self) {
        self.inner().settle();
    }

    fn settled(&self) -> std::sync::MutexGuard<'_, Inner> {
        let mut g = self.inner.lock().expect("the charge lock is never poisoned");
        if !g.dirty.is_empty() {
            g.settle();
        }
        g
    }

    /// The 1/n charge of `vm`'s shared pages, in pages.
    pub fn charge(&self, vm: u32) -> f64 {
        self.settled().hist[vm as usize].buckets().map(|(r, n)| n as f64 / f64::from(r)).sum()
    }

    /// `vm`'s shared pages that hold the zero page.
    pub fn zero(&self, vm: u32) -> u64 {
        self.zero[vm as usize]
    }

    /// `vm`'s shared pages by the reference count of their frame.
    pub fn histogram(&self, vm: u32) -> BTreeMap<u32, u64> {
        self.settled().hist[vm as usize].buckets().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Joins and leaves in random order over a few VMs and machine pages (VMs interleaved, so
    /// lists get duplicate entries; frames emptied and their pages reused before a settle),
    /// with histogram reads at random points, against a recount of the pages per (frame, VM).
    #[test]
    fn deferred_histograms_match_a_recount() {
        const VMS: usize = 4;
        const MPNS: usize = 6;
        let mut c = ShareCharge::new(MPNS);
        for _ in 0..VMS {
            c.add_vm();
        }
        let mut pages = [[0u32; VMS]; MPNS];
        let mut zero = [0u64; VMS];
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n as u64) as usize
        };
        let (mut dense_seen, mut sparse_seen, mut emptied) = (false, false, 0);
        for step in 0..200_000 {
            let (m, vm) = (next(MPNS), next(VMS));
            let refs: u32 = pages[m].iter().sum();
            let z = m == 0;
            // phases of growth (frames pass DENSE_REFS references, into the ordered map) and of
            // shrinking (frames empty, their records and entries are freed and reused)
            let leave = if (step / 3000) % 3 == 0 { next(3) == 0 } else { next(3) != 0 };
            if pages[m][vm] > 0 && leave {
                c.leave(vm as u32, m as u32, refs, z);
                pages[m][vm] -= 1;
                emptied += usize::from(refs == 1);
                zero[vm] -= u64::from(z);
            } else {
                c.join(vm as u32, m as u32, refs, z);
                pages[m][vm] += 1;
                zero[vm] += u64::from(z);
            }
            if next(50) == 0 || step % 9973 == 0 {
                for v in 0..VMS {
                    let mut want = BTreeMap::<u32, u64>::new();
                    for p in &pages {
                        let r: u32 = p.iter().sum();
                        if p[v] > 0 {
                            dense_seen |= (r as usize) < DENSE_REFS;
                            sparse_seen |= r as usize >= DENSE_REFS;
                            *want.entry(r).or_default() += u64::from(p[v]);
                        }
                    }
                    assert_eq!(c.histogram(v as u32), want, "step {step} vm {v}");
                    let charge: f64 = want.iter().map(|(&r, &n)| n as f64 / f64::from(r)).sum();
                    assert_eq!(c.charge(v as u32).to_bits(), charge.to_bits(), "step {step} vm {v}");
                    assert_eq!(c.zero(v as u32), zero[v]);
                }
            }
            if step % 5000 == 4999 {
                c.settle();
            }
        }
        assert!(dense_seen && sparse_seen && emptied > 100, "{dense_seen} {sparse_seen} {emptied}");
    }
}
