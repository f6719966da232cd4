//! Each VM's charge for its shared pages, kept as sharing changes instead of walked per sample.
//!
//! The 2013 paper's consumed memory counts a page shared n ways as 1/n to each sharer, and
//! SHRDSVD is the rest, (n − 1)/n [S2 §3.2]. When a frame's reference count changes, the charge
//! of *every* page mapped to it changes, in every VM that has one; walking each VM's pmap at every
//! sample to sum 1/n is O(guest pages) (7.5 G slot reads in a simulated hour of 16 x 1 GB VMs).
//! Instead, per VM, a histogram counts its shared pages by the reference count of their frame
//! (`refs -> pages`), and per shared machine page a short list records how many pages of each
//! VM map to it. A page joining or leaving a frame of r references moves each sharing VM's
//! pages from bucket r to r ± 1: O(VMs on the frame). The charge is Σ pages / refs over the
//! VM's buckets, summed in increasing refs, so it is deterministic. The same histogram gives
//! ZERO (shared zero pages) by keeping a second count.
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
//! - The per-frame sharer lists are a hash map keyed by machine page, about 40 bytes per shared
//!   frame plus 8 per sharing VM; a dense array over machine pages would be faster and larger.

use std::collections::{BTreeMap, HashMap};

/// Shared-page charges of a host's VMs (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct ShareCharge {
    /// per shared machine page, (VM, pages of that VM mapped to it)
    sharers: HashMap<u32, Vec<(u32, u32)>>,
    /// per VM, reference count -> pages of the VM on frames with that count
    hist: Vec<BTreeMap<u32, u64>>,
    /// per VM, shared pages holding the zero page
    zero: Vec<u64>,
}

fn bucket_add(h: &mut BTreeMap<u32, u64>, refs: u32, n: u64) {
    *h.entry(refs).or_default() += n;
}

fn bucket_sub(h: &mut BTreeMap<u32, u64>, refs: u32, n: u64) {
    let e = h.get_mut(&refs).expect("a sharer's pages are in its frame's bucket");
    *e -= n;
    if *e == 0 {
        h.remove(&refs);
    }
}

impl ShareCharge {
    /// Track one more VM (indices follow the host's).
    pub fn add_vm(&mut self) {
        self.hist.push(BTreeMap::new());
        self.zero.push(0);
    }

    /// A page of `vm` now maps to shared machine page `mpn`, whose frame had `refs_before`
    /// references (0 for a new frame); `zero` if it holds the zero page.
    pub fn join(&mut self, vm: u32, mpn: u32, refs_before: u32, zero: bool) {
        let list = self.sharers.entry(mpn).or_default();
        if refs_before > 0 {
            for &(v, c) in list.iter() {
                bucket_sub(&mut self.hist[v as usize], refs_before, u64::from(c));
                bucket_add(&mut self.hist[v as usize], refs_before + 1, u64::from(c));
            }
        }
        match list.iter_mut().find(|(v, _)| *v == vm) {
            Some((_, c)) => *c += 1,
            None => list.push((vm, 1)),
        }
        bucket_add(&mut self.hist[vm as usize], refs_before + 1, 1);
        self.zero[vm as usize] += u64::from(zero);
    }

    /// A page of `vm` no longer maps to shared machine page `mpn`, whose frame had
    /// `refs_before` references.
    pub fn leave(&mut self, vm: u32, mpn: u32, refs_before: u32, zero: bool) {
        let list = self.sharers.get_mut(&mpn).expect("a shared page's frame has sharers");
        let at = list.iter().position(|(v, _)| *v == vm).expect("the leaving VM shares the frame");
        list[at].1 -= 1;
        if list[at].1 == 0 {
            list.swap_remove(at);
        }
        bucket_sub(&mut self.hist[vm as usize], refs_before, 1);
        for &(v, c) in list.iter() {
            bucket_sub(&mut self.hist[v as usize], refs_before, u64::from(c));
            bucket_add(&mut self.hist[v as usize], refs_before - 1, u64::from(c));
        }
        if list.is_empty() {
            self.sharers.remove(&mpn);
        }
        self.zero[vm as usize] -= u64::from(zero);
    }

    /// The 1/n charge of `vm`'s shared pages, in pages.
    pub fn charge(&self, vm: u32) -> f64 {
        self.hist[vm as usize].iter().map(|(&r, &n)| n as f64 / f64::from(r)).sum()
    }

    /// `vm`'s shared pages that hold the zero page.
    pub fn zero(&self, vm: u32) -> u64 {
        self.zero[vm as usize]
    }

    /// `vm`'s shared pages by the reference count of their frame.
    pub fn histogram(&self, vm: u32) -> &BTreeMap<u32, u64> {
        &self.hist[vm as usize]
    }
}
