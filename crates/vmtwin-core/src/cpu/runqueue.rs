//! Run queues: each pCPU's ready vCPUs ordered by virtual time, lowest first, and a tournament
//! tree over the queue heads.
//!
//! ESX keeps a run queue per pCPU so that scheduling decisions take per-pCPU locks, not a global
//! one ([WP §3.2]); a pCPU that runs dry pulls work from the others. The tree makes "the lowest
//! key on the host" an O(1) read, maintained in O(log pCPUs) whenever a queue's head changes.
//! Keys are finite `f64` virtual times (negative ones too: the fair clock is rebased to zero),
//! compared through an order-preserving map of their bit patterns; ties go to the earlier
//! enqueue (`seq`).
//!
//! # Tunables
//! None.
//!
//! # Counters
//! None of its own: the scheduler counts dispatches and migrations.
//!
//! # Known gaps
//! - The tree answers "lowest key in this LLC / node" in O(1) only when the group is an aligned
//!   power of two of pCPUs; other groups are scanned head by head.

/// A float's bits mapped so that unsigned order is numeric order: flip every bit of a negative
/// number, only the sign bit of a positive one.
#[inline]
fn ordered_bits(key: f64) -> u64 {
    let b = key.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

#[inline]
fn from_ordered_bits(o: u64) -> f64 {
    f64::from_bits(if o >> 63 == 1 { o & !(1 << 63) } else { !o })
}

/// `(key, seq, id)` packed into one 16-byte integer: keys map to bits that order like their
/// values (`ordered_bits`), so packed integers order by key, then by enqueue order
/// (`seq`, kept to its low 32 bits: ties 4 billion enqueues apart are vanishingly rare and still
/// break the same way every run), and carry a 32-bit id (the vCPU in a queue, the pCPU in the
/// tree).
#[inline]
fn pack(key: f64, seq: u64, id: u32) -> u128 {
    debug_assert!(key.is_finite());
    (u128::from(ordered_bits(key)) << 64) | (u128::from(seq as u32) << 32) | u128::from(id)
}

/// The id carried in the low 32 bits.
#[inline]
fn id_of(packed: u128) -> u32 {
    packed as u32
}

/// The packed value with another id (same key and seq). The low half is masked as a `u64`:
/// masked as a `u128`, the entry was read with one 16-byte vector load, which the store buffer
/// cannot serve from the two 8-byte stores of the insert just before (`push` then `refresh`),
/// so it waited for them to reach the cache.
#[inline]
fn with_id(packed: u128, id: u32) -> u128 {
    let low = (packed as u64 & !u64::from(u32::MAX)) | u64::from(id);
    (packed >> 64 << 64) | u128::from(low)
}

#[inline]
fn key_of(packed: u128) -> f64 {
    from_ordered_bits((packed >> 64) as u64)
}

/// Longest run queue that [`RunQueue::push`] inserts into by compare-exchanges from the end
/// rather than by a search and a move ([`RunQueue::push_long`]): about as many instructions at 8 entries
/// (bench-64vm's queues hold 1.5 vCPUs on average at an insert, bench-1024vm's 60).
const SHORT_QUEUE: usize = 8;

/// Entries per group of [`RunQueue::push_long`]'s two-round count: about the square root of a
/// long queue's length (bench-1024vm's 60), so both rounds are about as long.
const GROUP: usize = 8;

/// Ready vCPUs of one pCPU, kept sorted with the lowest key last. Queues are short (a few
/// vCPUs per pCPU even on an overcommitted host), where a sorted vector beats a heap: popping
/// the head is a truncation and an insert moves a handful of 16-byte entries.
#[derive(Debug, Default, Clone)]
pub struct RunQueue {
    sorted: Vec<u128>,
}

impl RunQueue {
    /// Enqueue `vcpu` with virtual time `key` (>= 0); `seq` breaks ties, first come first.
    /// Returns whether the queue was short (at most [`SHORT_QUEUE`] entries before).
    #[inline]
    pub fn push(&mut self, key: f64, seq: u64, vcpu: u32) -> bool {
        let e = pack(key, seq, vcpu);
        let n = self.sorted.len();
        if n > SHORT_QUEUE {
            self.push_long(e);
            return false;
        }
        // a short queue: append, then one step per entry from the end, so that the new entry
        // sinks to its place; each step is one comparison with the new entry and two
        // conditional moves, and the loop runs `n` times wherever the entry lands (a binary
        // search and a `memmove` branch on where it lands: a coin toss). Entry `i`, below the
        // new one (`a < e`), moves up a place; the first not below it gets the new entry just
        // above it; the ones before are rewritten with themselves (`hi` carries the entry the
        // step before read: one store per step, not the two of a compare-exchange)
        self.sorted.push(e);
        let s = &mut self.sorted[..];
        let mut hi = e;
        for i in (0..n).rev() {
            let a = s[i];
            let below = a < e;
            s[i + 1] = std::hint::select_unpredictable(below, a, hi);
            hi = std::hint::select_unpredictable(below, e, a);
        }
        s[0] = hi;
        true
    }

    /// [`Self::push`] into a queue of more than [`SHORT_QUEUE`] entries: the insertion point
    /// (descending order: after every larger entry) is the count of larger entries, counted in
    /// two rounds of independent compares (each group's last entry, then the group it falls
    /// in) rather than by a binary search, whose probes form a chain of dependent loads from a
    /// queue mostly out of L1. Cold and not inlined: the short queues' path keeps its own code
    /// and its place (bench-64vm's queues are short).
    #[cold]
    #[inline(never)]
    fn push_long(&mut self, e: u128) {
        let s = &self.sorted[..];
        // the key halves alone (one 8-byte compare each, not a 16-byte one): an entry of a
        // larger key is larger; the larger ones of an equal key follow them and are counted
        // one by one after (none unless the 32-bit `seq` wrapped: it grows with every enqueue,
        // so an equal key was enqueued before and is smaller)
        let k = (e >> 64) as u64;
        let above = |x: &u128| usize::from((*x >> 64) as u64 > k);
        let whole: usize = s[GROUP - 1..].iter().step_by(GROUP).map(above).sum();
        let lo = whole * GROUP;
        let mut at = lo + s[lo..(lo + GROUP).min(s.len())].iter().map(above).sum::<usize>();
        while at < s.len() && s[at] > e {
            at += 1;
        }
        self.sorted.insert(at, e);
    }

    /// The head, packed, for comparing queues without removing anything.
    #[inline]
    fn head(&self) -> Option<u128> {
        self.sorted.last().copied()
    }

    /// Remove the head and return its vCPU.
    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        self.sorted.pop().map(id_of)
    }
}

/// Head of an empty queue in the tournament tree: larger than any real head.
const NO_HEAD: u128 = u128::MAX;

/// `k == NO_HEAD`, read from the key half alone: a real head's key half is never all ones (that
/// is a NaN's ordered bits; keys are finite). Compared as a `u128`, a node was read with one
/// 16-byte vector load, which the store buffer cannot serve from the two 8-byte stores of the
/// tree walk just before (a push or a pop), so the read waited for them to reach the cache.
#[inline(always)]
fn is_no_head(k: u128) -> bool {
    (k >> 64) as u64 == u64::MAX
}

/// Every pCPU's run queue, plus a tournament tree over their heads so that the lowest key on
/// the whole host is found in O(1) and kept up to date in O(log pCPUs) per push or pop.
#[derive(Debug, Clone)]
pub struct QueueSet {
    queues: Vec<RunQueue>,
    /// implicit binary tree of queue heads packed with their pCPU as id: leaves at
    /// `leaves + p`, each inner node the minimum of its two children
    tree: Vec<u128>,
    leaves: usize,
    len: usize,
}

impl QueueSet {
    /// Empty queues for `pcpus` pCPUs.
    pub fn new(pcpus: usize) -> Self {
        // at least two leaves, so that the root (index 1) is an inner node
        let leaves = pcpus.next_power_of_two().max(2);
        QueueSet { queues: vec![RunQueue::default(); pcpus], tree: vec![NO_HEAD; 2 * leaves], leaves, len: 0 }
    }

    /// Enqueue `vcpu` on pCPU `p`'s queue.
    #[inline(always)]
    pub fn push(&mut self, p: u32, key: f64, seq: u64, vcpu: u32) {
        let short = self.queues[p as usize].push(key, seq, vcpu);
        self.len += 1;
        let leaf = self.leaves + p as usize;
        let e = pack(key, seq, p);
        if short {
            // whether the new entry heads a short queue is a coin toss (a third mispredicted in
            // callgrind's branch simulation): the leaf becomes the lesser of it and the old
            // head, and the walk to the root runs either way (an unchanged leaf rewrites the
            // same nodes)
            let m = self.tree[leaf].min(e);
            crate::sim::tree::set_leaf(&mut self.tree, leaf, m);
        } else if e < self.tree[leaf] {
            // a long queue's new entry seldom heads it
            self.refresh(p);
        }
    }

    /// Remove the head of pCPU `p`'s queue (always inlined: as a call, in the dispatch loop, it
    /// cost bench-mixed 0.5% more instructions).
    #[inline(always)]
    pub fn pop(&mut self, p: u32) -> Option<u32> {
        let v = self.queues[p as usize].pop()?;
        self.len -= 1;
        self.refresh(p);
        Some(v)
    }

    /// Remove the entry of `vcpu` that would be popped first (lowest `(key, seq)`) from
    /// whichever queue holds it; false if no queue does. A scan of every queue: only
    /// co-scheduling's entries left behind by a VM-wide co-stop are dropped this way.
    pub fn remove_first_of(&mut self, vcpu: u32) -> bool {
        let mut found: Option<(u128, usize, usize)> = None;
        for (p, q) in self.queues.iter().enumerate() {
            // descending order: the last entry naming `vcpu` is its first to be popped
            if let Some(i) = q.sorted.iter().rposition(|&e| id_of(e) == vcpu) {
                let e = q.sorted[i];
                if found.is_none_or(|(f, _, _)| e < f) {
                    found = Some((e, p, i));
                }
            }
        }
        let Some((_, p, i)) = found else { return false };
        self.queues[p].sorted.remove(i);
        self.len -= 1;
        self.refresh(p as u32);
        true
    }

    /// True if `f` holds for every queued vCPU (stopping at the first for which it does not),
    /// queue by queue.
    #[inline]
    pub fn all(&self, mut f: impl FnMut(u32) -> bool) -> bool {
        self.queues.iter().all(|q| q.sorted.iter().all(|&e| f(id_of(e))))
    }

    /// The queue holding the lowest `(key, seq)` on the host, with that key.
    #[inline]
    pub fn best(&self) -> Option<(u32, f64)> {
        let k = self.tree[1];
        (!is_no_head(k)).then(|| (id_of(k), key_of(k)))
    }

    /// The vCPU at the head of pCPU `p`'s queue.
    #[inline]
    pub fn head(&self, p: u32) -> Option<u32> {
        self.queues[p as usize].head().map(id_of)
    }

    /// The vCPU at the head of pCPU `p`'s queue, with its key.
    #[inline]
    pub fn head_entry(&self, p: u32) -> Option<(u32, f64)> {
        self.queues[p as usize].head().map(|h| (id_of(h), key_of(h)))
    }

    /// The tree node whose subtree holds exactly the queues of pCPUs `lo..hi`, or 0 when the
    /// range is not an aligned power of two (then [`Self::best_in`] scans it). Topology numbers
    /// LLC and node mates adjacently, so on the usual power-of-two hosts every LLC and node is
    /// one subtree and its best head an O(1) read.
    pub fn subtree(&self, lo: usize, hi: usize) -> usize {
        let n = hi - lo;
        if n == 0 || !n.is_power_of_two() || !lo.is_multiple_of(n) || hi > self.queues.len() {
            return 0;
        }
        (self.leaves + lo) / n
    }

    /// The queue holding the lowest `(key, seq)` among pCPUs `lo..hi` (`sub` from
    /// [`Self::subtree`] for that range), with that key.
    #[inline]
    pub fn best_in(&self, sub: usize, lo: usize, hi: usize) -> Option<(u32, f64)> {
        let k = if sub != 0 {
            self.tree[sub]
        } else {
            (lo..hi).map(|p| self.tree[self.leaves + p]).min().unwrap_or(NO_HEAD)
        };
        (k != NO_HEAD).then(|| (id_of(k), key_of(k)))
    }

    /// Give every queued vCPU a new key, `key(vcpu)`, keeping each one's queue and enqueue
    /// order (for ties), and rebuild the tree: one sort per queue instead of a re-insert per
    /// vCPU.
    pub fn rekey(&mut self, key: impl Fn(u32) -> f64) {
        for q in &mut self.queues {
            for e in &mut q.sorted {
                let v = id_of(*e);
                *e = (u128::from(ordered_bits(key(v))) << 64) | (*e & u128::from(u64::MAX));
            }
            q.sorted.sort_unstable_by(|a, b| b.cmp(a));
        }
        for p in 0..self.queues.len() {
            self.tree[self.leaves + p] = self.queues[p].head().map_or(NO_HEAD, |h| with_id(h, p as u32));
        }
        for i in (1..self.leaves).rev() {
            self.tree[i] = self.tree[2 * i].min(self.tree[2 * i + 1]);
        }
    }

    /// Number of queued vCPUs on the host.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Re-read queue `p`'s head and fix its ancestors, every level up to the root
    /// (`sim::tree`).
    #[inline]
    fn refresh(&mut self, p: u32) {
        let m = self.queues[p as usize].head().map_or(NO_HEAD, |h| with_id(h, p));
        crate::sim::tree::set_leaf(&mut self.tree, self.leaves + p as usize, m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_is_the_lowest_head_on_any_queue() {
        let mut qs = QueueSet::new(3);
        assert_eq!(qs.best(), None);
        qs.push(2, 5.0, 1, 20);
        qs.push(0, 7.0, 2, 10);
        qs.push(1, 5.0, 3, 11); // same key as on queue 2, enqueued later
        assert_eq!(qs.best(), Some((2, 5.0)));
        assert_eq!(qs.pop(2), Some(20));
        assert_eq!(qs.best(), Some((1, 5.0)));
        assert_eq!(qs.pop(1), Some(11));
        assert_eq!(qs.best(), Some((0, 7.0)));
        assert_eq!(qs.len(), 1);
    }

    /// Dropping a vCPU's first-to-pop entry, on whatever queue holds it, against a model: a
    /// list of (key, seq, queue, vcpu) whose pops take the lowest (key, seq) of the queue.
    #[test]
    fn remove_first_of_drops_the_entry_popped_first() {
        let mut qs = QueueSet::new(5);
        let mut model: Vec<(u64, u64, u32, u32)> = Vec::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for seq in 0..3000u64 {
            match rnd(3) {
                0 | 1 => {
                    let (k, p, v) = (rnd(50), rnd(5) as u32, rnd(6) as u32);
                    qs.push(p, k as f64, seq, v);
                    model.push((k, seq, p, v));
                }
                _ => {
                    let v = rnd(6) as u32;
                    let first = model.iter().enumerate().filter(|(_, e)| e.3 == v).min_by_key(|(_, e)| (e.0, e.1)).map(|(i, _)| i);
                    assert_eq!(qs.remove_first_of(v), first.is_some());
                    if let Some(i) = first {
                        model.remove(i);
                    }
                }
            }
            assert_eq!(qs.len(), model.len());
            let best = model.iter().min_by_key(|e| (e.0, e.1)).map(|e| (e.2, e.0 as f64));
            assert_eq!(qs.best(), best);
        }
        // and every queue pops what the model says, in order
        for p in 0..5u32 {
            let mut left: Vec<_> = model.iter().filter(|e| e.2 == p).collect();
            left.sort_by_key(|e| (e.0, e.1));
            for e in left {
                assert_eq!(qs.pop(p), Some(e.3));
            }
            assert_eq!(qs.pop(p), None);
        }
    }

    #[test]
    fn negative_keys_order_below_positive_ones() {
        let mut qs = QueueSet::new(2);
        qs.push(0, 0.5, 1, 1);
        qs.push(1, -3.0, 2, 2);
        qs.push(0, -0.25, 3, 3);
        assert_eq!(qs.best(), Some((1, -3.0)));
        // new keys reorder queue 0 and move the host's best to it
        qs.rekey(|v| [0.0, 1.0, 9.0, 2.0][v as usize]);
        assert_eq!(qs.best(), Some((0, 1.0)));
        assert_eq!(qs.pop(0), Some(1));
        assert_eq!(qs.best(), Some((0, 2.0)));
        assert_eq!(qs.pop(0), Some(3));
        assert_eq!(qs.best(), Some((1, 9.0)));
    }

    #[test]
    fn best_in_a_range_agrees_with_a_scan() {
        let mut qs = QueueSet::new(8);
        let keys = [4.0, 9.0, 1.5, 7.0, 3.0, 8.0, 6.0, 2.5];
        for (p, k) in keys.iter().enumerate() {
            qs.push(p as u32, *k, p as u64, p as u32 + 100);
        }
        for (lo, hi) in [(0, 2), (2, 4), (4, 8), (0, 8), (0, 4), (1, 3), (3, 8), (5, 6)] {
            let sub = qs.subtree(lo, hi);
            let want = (lo..hi).min_by(|&a, &b| keys[a].total_cmp(&keys[b])).unwrap();
            assert_eq!(qs.best_in(sub, lo, hi), Some((want as u32, keys[want])), "{lo}..{hi}");
        }
        assert_ne!(qs.subtree(4, 8), 0);
        assert_eq!(qs.subtree(1, 3), 0);
        assert_eq!(qs.head_entry(2), Some((102, 1.5)));
    }

    #[test]
    fn queues_short_and_long_pop_in_key_then_enqueue_order() {
        // keys with many ties, pushed and popped in a scrambled order across the short-queue
        // bound; the oracle is a sort of (key, enqueue order)
        let mut qs = QueueSet::new(1);
        let mut model: Vec<(u64, u64, u32)> = Vec::new();
        let mut x = 12345u64;
        let mut longest = 0;
        for seq in 1..=400u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if (x >> 60) < 11 || model.is_empty() {
                let key = (x >> 33) % 7;
                let id = seq as u32 * 10;
                qs.push(0, key as f64 - 3.0, seq, id);
                model.push((key, seq, id));
                model.sort_unstable();
                longest = longest.max(model.len());
            } else {
                let want = model.remove(0);
                assert_eq!(qs.best(), Some((0, want.0 as f64 - 3.0)));
                assert_eq!(qs.pop(0), Some(want.2));
            }
        }
        assert!(longest > 2 * SHORT_QUEUE, "both insert paths are exercised: {longest}");
        while !model.is_empty() {
            assert_eq!(qs.pop(0), Some(model.remove(0).2));
        }
        assert_eq!(qs.pop(0), None);
    }

    /// A long queue's count compares key halves only; an entry of an equal key whose 32-bit
    /// `seq` wrapped past the new one's still orders as the packed integers do.
    #[test]
    fn long_queue_ties_across_a_seq_wrap_order_as_packed() {
        let mut qs = QueueSet::new(1);
        let mut model: Vec<(u64, u32, u32)> = Vec::new();
        let mut x = 99u64;
        for i in 0..60u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // seqs from just below 2^32 to just above: the last ones wrap to small numbers
            let seq = u64::from(u32::MAX) - 30 + i;
            let key = (x >> 61) as f64;
            let id = i as u32;
            qs.push(0, key, seq, id);
            model.push(((x >> 61), seq as u32, id));
        }
        model.sort_unstable();
        for (_, _, id) in model {
            assert_eq!(qs.pop(0), Some(id));
        }
        assert_eq!(qs.pop(0), None);
    }

    #[test]
    fn single_pcpu_host_works() {
        let mut qs = QueueSet::new(1);
        qs.push(0, 1.0, 1, 3);
        assert_eq!(qs.best(), Some((0, 1.0)));
        assert_eq!(qs.pop(0), Some(3));
        assert_eq!(qs.best(), None);
    }
}
