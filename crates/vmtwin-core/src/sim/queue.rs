//! The event queue: one-shot events in a timing wheel, plus re-armable timers in a tournament tree.
//!
//! Both are keyed by `(time, seq)`, with `seq` drawn from one counter, so two events at the same
//! nanosecond pop in the order they were scheduled and every run is identical. A pCPU's slice
//! timer is moved or cancelled all the time (a slice cut short by a preemption or a halt), so
//! each pCPU has a timer slot that holds at most one pending event and is re-armed or cancelled
//! in place, in O(log pCPUs): no stale event is ever popped. The slots are the leaves of a
//! tournament tree (each inner node the earliest of its two children), and a re-arm or cancel
//! rewrites the leaf and every node above it: a walk whose length is the tree's height and whose
//! minimums are conditional moves, so nothing in it depends on which timer is earlier. (The
//! 4-ary heap it replaced did fewer compares, but where a sift stops is a coin toss: on
//! bench-64vm its branches were the largest source of mispredictions in valgrind's branch
//! simulator, about 0.65 per event.) Events that are never cancelled
//! (the end of a halt, samples, entitlement updates, power-ons, limit refills) are one-shot.
//!
//! Most one-shot events are vCPU wake-ups a few ms to ~0.5 s ahead, so they go to a timing wheel
//! rather than a heap: [`WHEEL_BUCKETS`] buckets of [`BUCKET_NS`] each cover the window of time
//! starting at the bucket of the last popped event. A bucket holds the events of its time range
//! sorted earliest first, a bitmap marks the non-empty buckets, and the earliest non-empty one
//! (the head) is cached with a cursor at its next event to pop, so a pop reads at the cursor and
//! steps it (the bucket is cleared when the cursor reaches its end, then a bitmap scan finds the
//! next one), and a push is a sorted insert found from the bucket's end. A storage completion
//! comes about one device service time after the one before, so it lands at or a few entries
//! from its bucket's end (70% appended in the storage benchmark, about 50 events per bucket);
//! nothing before it moves, nor the bucket's popped prefix. (Buckets sorted latest first and
//! popped off the end moved the whole bucket on every such push: 92 of that benchmark's 2,136
//! instructions per I/O; this order costs the CPU benchmarks nothing more.) A bucket's events live
//! in a vector taken, at its first event, from a stack of the vectors buckets emptied (their
//! room kept), the last emptied first: so the wheel's events sit in the few vectors popped
//! lately, still in the cache, not in 4,096 vectors of their own that the window sweeps through
//! every second, each out of the cache by the time it is used again. Events beyond the
//! window (samples every 2 s, say), or before it, go to a small overflow heap. The earliest
//! one-shot key (wheel or overflow) is cached, and `pop` takes the earlier of it and the timer
//! heap's root, so the order is exactly `(time, seq)` whichever structure holds an event. (For
//! 64 VMs the pending one-shot events number about 64, so a binary heap was only 6 levels deep:
//! the wheel saves a few tens of instructions per event, not an order of magnitude.)

use super::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an instant. Indices refer to the simulation's flat arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// a halted vCPU's halt ends
    Wake { vcpu: u32 },
    /// the slice of whatever runs on `pcpu` ends
    SliceEnd { pcpu: u32 },
    /// a CPU limit (a VM's or a pool's) has earned tokens again; stale unless `gen` matches
    LimitRefill { limiter: u32, gen: u32 },
    /// the pool limits' look at dormancy: one may end or begin (`cpu/limit.rs`, dormant pool
    /// limits); stale unless `gen` matches
    LimitDormant { gen: u32 },
    /// recompute demand estimates and entitlements
    Entitlement,
    /// sample every counter into the tables
    Sample,
    /// power a VM on (admission control runs here)
    PowerOn { vm: u32 },
    /// a co-scheduled VM's vCPU may have run too far ahead of a sibling; stale unless `gen`
    /// matches
    Cosched { vm: u32, gen: u32 },
    /// a storage event parked by the run loop at `slot` (see `wiring`)
    Storage { slot: u32 },
    /// a memory event parked by the run loop at `slot`
    Mem { slot: u32 },
}

/// A one-shot event with its packed `(time, seq)` key (see [`pack`]; the slot bits are zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    key: u128,
    event: Event,
}

// The hot path moves entries by value: keep them at one u128 key plus a 12-byte event. A
// subsystem with larger events parks them outside the queue (`wiring`).
const _: () = assert!(std::mem::size_of::<Entry>() == 32);

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest key is on top.
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Width of one wheel bucket in nanoseconds (2^18, about 262 µs; a power of two, so the
/// division is a shift). Measured: 2^17 to 2^20 cost about the same; narrower buckets cost
/// more in bitmap scans, wider ones in sorted inserts into crowded buckets.
const BUCKET_NS: Time = 1 << 18;

/// Buckets in the wheel: with [`BUCKET_NS`] the window spans about 1.07 s, which holds nearly
/// every wake-up; a power of two, so a bucket's index is its number masked.
const WHEEL_BUCKETS: usize = 4096;

/// 64-bit words in the bitmap of non-empty buckets.
const WHEEL_WORDS: usize = WHEEL_BUCKETS / 64;

/// `one_shot_head` when no one-shot event is pending (no real key is this large).
const NO_KEY: u128 = u128::MAX;

/// No timer slot (`fired` when no timer awaits removal).
const UNARMED: u32 = u32::MAX;

/// `(time, seq, slot)` packed into one 16-byte integer, so a comparison is a single compare and
/// an entry is a quarter of a cache line. `seq` keeps its low 32 bits: ties 4 billion events
/// apart are vanishingly rare and still break the same way every run.
#[inline]
fn pack(time: Time, seq: u64, slot: u32) -> u128 {
    (u128::from(time) << 64) | (u128::from(seq as u32) << 32) | u128::from(slot)
}

#[inline]
fn slot_of(packed: u128) -> u32 {
    packed as u32
}

#[inline]
fn time_of(packed: u128) -> Time {
    (packed >> 64) as Time
}

/// Pending events in `(time, seq)` order.
///
/// # Examples
/// ```
/// use vmtwin_core::sim::{Event, EventQueue};
/// let mut q = EventQueue::with_timers(2);
/// q.push(5, Event::Sample);
/// q.push(5, Event::Entitlement);
/// q.set_timer(0, 1, Event::Wake { vcpu: 0 });
/// q.set_timer(1, 3, Event::SliceEnd { pcpu: 0 });
/// q.set_timer(1, 7, Event::SliceEnd { pcpu: 0 });   // re-armed: the old time is gone
/// assert_eq!(q.pop(), Some((1, Event::Wake { vcpu: 0 })));
/// assert_eq!(q.pop(), Some((5, Event::Sample)));      // same time: emission order
/// assert_eq!(q.pop(), Some((5, Event::Entitlement)));
/// assert_eq!(q.pop(), Some((7, Event::SliceEnd { pcpu: 0 })));
/// assert_eq!(q.pop(), None);
/// ```
#[derive(Debug)]
pub struct EventQueue {
    /// one-shot events by bucket (`time / BUCKET_NS` modulo `WHEEL_BUCKETS`), each sorted
    /// earliest first; every event in it lies in buckets `base .. base + WHEEL_BUCKETS`. The
    /// head bucket's entries before `cursor` are popped already; every other bucket's entries
    /// are all pending
    /// (a fixed-size array: an index masked to its size needs no bounds check)
    wheel: Box<[Vec<Entry>; WHEEL_BUCKETS]>,
    /// index of the head bucket's next event to pop (0 while the wheel is empty)
    cursor: usize,
    /// bit `b` set when `wheel[b]` is non-empty
    occupied: [u64; WHEEL_WORDS],
    /// number of events in `wheel`
    wheel_len: usize,
    /// first bucket number (`time / BUCKET_NS`) of the wheel's window; never after the
    /// earliest pending event's bucket
    base: u64,
    /// bucket number of the earliest event in `wheel` (meaningful while `wheel_len > 0`)
    head: u64,
    /// emptied buckets' vectors, cleared with their room kept, the last emptied on top: a
    /// bucket that gets its first event takes the top one (see [`Self::push`])
    spare: Vec<Vec<Entry>>,
    /// one-shot events outside the wheel's window when pushed
    heap: BinaryHeap<Entry>,
    /// the heap's earliest key, or `NO_KEY` when it is empty (kept, so that a pop from the
    /// wheel, nearly every one-shot pop, does not look into the heap twice)
    heap_head: u128,
    /// earliest one-shot key (wheel or heap), or `NO_KEY` when there is none
    one_shot_head: u128,
    seq: u64,
    /// tournament tree of packed (time, seq, slot): slot `s`'s leaf is `timers[leaves + s]`
    /// (`NO_KEY` while unarmed), inner node `i` is the least of `2i` and `2i + 1`, so the root
    /// `timers[1]` is the earliest timer (index 0 is unused)
    timers: Vec<u128>,
    /// leaves of the tree: the slots rounded up to a power of two, at least 2 (no timer is
    /// armed, the fired one included until it is removed, exactly when the root is `NO_KEY`)
    leaves: usize,
    /// per slot: the event it fires while armed
    slots: Vec<Event>,
    /// slot of a timer just popped but still in the tree: it is removed lazily, so that the
    /// common "fire, then re-arm the same timer" costs one walk up the tree instead of two
    fired: u32,
}

impl EventQueue {
    /// A queue with `slots` timer slots, numbered from 0.
    pub fn with_timers(slots: usize) -> Self {
        EventQueue {
            wheel: vec![Vec::new(); WHEEL_BUCKETS].into_boxed_slice().try_into().expect("WHEEL_BUCKETS buckets"),
            cursor: 0,
            occupied: [0; WHEEL_WORDS],
            wheel_len: 0,
            base: 0,
            head: 0,
            spare: Vec::new(),
            heap: BinaryHeap::new(),
            heap_head: NO_KEY,
            one_shot_head: NO_KEY,
            seq: 0,
            slots: vec![Event::Sample; slots],
            timers: vec![NO_KEY; 2 * slots.next_power_of_two().max(2)],
            leaves: slots.next_power_of_two().max(2),
            fired: UNARMED,
        }
    }

    /// Earliest one-shot key (wheel or overflow heap), if any.
    #[inline]
    fn one_shot_min(&self) -> Option<u128> {
        (self.one_shot_head != NO_KEY).then_some(self.one_shot_head)
    }

    /// Remove the earliest one-shot event (the caller knows there is one).
    #[inline(always)]
    fn pop_one_shot(&mut self) -> Entry {
        // keys are unique (seq), so the earliest is the wheel's exactly when it is not the heap's
        let from_wheel = self.heap_head != self.one_shot_head;
        let (e, wheel_next) = if from_wheel {
            self.pop_wheel()
        } else {
            let e = self.heap.pop().expect("non-empty");
            self.heap_head = self.heap.peek().map_or(NO_KEY, |h| h.key);
            let w = if self.wheel_len > 0 { self.wheel[self.head as usize % WHEEL_BUCKETS][self.cursor].key } else { NO_KEY };
            (e, w)
        };
        self.one_shot_head = self.heap_head.min(wheel_next);
        e
    }

    /// Remove the wheel's earliest event (the wheel is not empty); returns it and the wheel's
    /// earliest key after it (`NO_KEY` when the wheel is empty now).
    #[inline(always)]
    fn pop_wheel(&mut self) -> (Entry, u128) {
        let idx = self.head as usize % WHEEL_BUCKETS;
        let bucket = &mut self.wheel[idx];
        let e = bucket[self.cursor];
        self.cursor += 1;
        self.wheel_len -= 1;
        if let Some(next) = bucket.get(self.cursor) {
            return (e, next.key);
        }
        // the emptied vector, room kept, goes to the spares; the bucket holds one with no room
        let mut emptied = std::mem::take(bucket);
        emptied.clear();
        self.spare.push(emptied);
        self.cursor = 0;
        self.occupied[idx / 64] &= !(1u64 << (idx % 64));
        if self.wheel_len == 0 {
            return (e, NO_KEY);
        }
        self.head += self.distance_to_next(idx) as u64;
        (e, self.wheel[self.head as usize % WHEEL_BUCKETS][0].key)
    }

    /// Buckets from `idx` (empty) forward, wrapping, to the next occupied one; the wheel is
    /// not empty.
    #[inline]
    fn distance_to_next(&self, idx: usize) -> usize {
        let mut w = idx / 64;
        let bits = self.occupied[w] & (!0u64 << (idx % 64));
        if bits != 0 {
            return w * 64 + bits.trailing_zeros() as usize - idx;
        }
        let mut dist = 64 - idx % 64;
        loop {
            w = (w + 1) % WHEEL_WORDS;
            let bits = self.occupied[w];
            if bits != 0 {
                return dist + bits.trailing_zeros() as usize;
            }
            dist += 64;
        }
    }

    /// Note that an event at `time` was popped: the wheel's window may start at its bucket.
    #[inline]
    fn advance(&mut self, time: Time) {
        // a maximum, not a branch: whether an event opens a new bucket is a coin toss on the
        // CPU benchmarks (about 1.6 events per bucket), and the branch was mispredicted on half
        // of all events in valgrind's branch simulator
        self.base = self.base.max(time / BUCKET_NS);
    }

    /// Finish removing the timer `pop` returned last, unless it was re-armed meanwhile.
    #[inline]
    fn settle(&mut self) {
        if self.fired != UNARMED {
            let f = std::mem::replace(&mut self.fired, UNARMED);
            self.disarm(f);
        }
    }

    /// Finish removing the timer `pop` returned last, unless it is timer `slot`, which the
    /// caller rewrites anyway. Either way nothing awaits removal after it.
    #[inline(always)]
    fn settle_except(&mut self, slot: u32) {
        let f = std::mem::replace(&mut self.fired, UNARMED);
        // rare: the run loop re-arms or cancels a fired slice timer before anything else
        if f != UNARMED && f != slot {
            self.disarm(f);
        }
    }

    /// Clear timer `slot`'s leaf (armed or not) and fix the nodes above it.
    #[inline]
    fn disarm(&mut self, slot: u32) {
        self.put(slot, NO_KEY);
    }

    /// Write `key` into timer `slot`'s leaf and recompute every node above it, up to the root.
    #[inline(always)]
    fn put(&mut self, slot: u32, key: u128) {
        super::tree::set_leaf(&mut self.timers, self.leaves + slot as usize, key);
    }

    /// Schedule a one-shot `event` at absolute time `time`.
    #[inline(always)]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        let entry = Entry { key: pack(time, self.seq, 0), event };
        self.one_shot_head = self.one_shot_head.min(entry.key);
        let b = time / BUCKET_NS;
        if b.wrapping_sub(self.base) >= WHEEL_BUCKETS as u64 {
            // outside the window: far ahead, or before `base` (then the distance wraps to a huge
            // number)
            self.heap.push(entry);
            self.heap_head = self.heap_head.min(entry.key);
            return;
        }
        let idx = b as usize % WHEEL_BUCKETS;
        let bit = 1u64 << (idx % 64);
        if self.occupied[idx / 64] & bit == 0 {
            // a bucket's first event: it goes into the vector a bucket emptied last, still in the
            // cache from its pops, and the bucket is known empty from the bitmap, without
            // reading its vector (the 4,096 of them span 96 KB, mostly out of the cache)
            let mut v = self.spare.pop().unwrap_or_default();
            v.push(entry);
            // an empty bucket holds a vector with no room (`pop_wheel`), so nothing is dropped
            let old = std::mem::replace(&mut self.wheel[idx], v);
            debug_assert_eq!(old.capacity(), 0);
            std::mem::forget(old);
            self.occupied[idx / 64] |= bit;
        } else {
            let bucket = &mut self.wheel[idx];
            match bucket.last() {
                Some(last) if last.key > entry.key => self.insert_sorted(idx, b, entry),
                // the common case: the latest event of its bucket is appended
                _ => bucket.push(entry),
            }
        }
        if self.wheel_len == 0 || b < self.head {
            if self.wheel_len > 0 && self.cursor > 0 {
                self.new_head_from(b);
            }
            self.head = b;
        }
        self.wheel_len += 1;
    }

    /// Insert `entry` into bucket `idx` (number `b`), which holds a later event: before every
    /// later one, and never before the head's cursor (an event pushed for before the last
    /// popped one pops next).
    #[inline]
    fn insert_sorted(&mut self, idx: usize, b: u64, entry: Entry) {
        let floor = if self.wheel_len > 0 && b == self.head { self.cursor } else { 0 };
        let bucket = &mut self.wheel[idx];
        let mut at = bucket.len();
        while at > floor && bucket[at - 1].key > entry.key {
            at -= 1;
        }
        bucket.insert(at, entry);
    }

    /// Bucket `b`, before the partly popped head, becomes the head: the old head drops its
    /// popped prefix, so that only the head has a cursor. Not reached while popped times only
    /// grow: a partly popped head is then the `base` bucket, and an earlier bucket lies outside
    /// the window (the overflow heap).
    #[cold]
    fn new_head_from(&mut self, b: u64) {
        debug_assert!(b < self.head);
        let old = self.head as usize % WHEEL_BUCKETS;
        self.wheel[old].drain(..self.cursor);
        self.cursor = 0;
    }

    /// Arm timer `slot` to fire `event` at `time`, replacing whatever it held. Always inlined
    /// into its one caller, the slice start: as a call it cost about 4% of bench-64vm.
    #[inline(always)]
    pub fn set_timer(&mut self, slot: u32, time: Time, event: Event) {
        debug_assert!(time != Time::MAX, "a timer's time is below Time::MAX (`earliest_timer`)");
        self.seq += 1;
        self.slots[slot as usize] = event;
        let key = pack(time, self.seq, slot);
        // re-arming the timer that just fired (a slice end's next slice) or another: the same
        // walk either way
        self.settle_except(slot);
        self.put(slot, key);
    }

    /// Disarm timer `slot` (no effect when it is not armed).
    #[inline]
    pub fn cancel_timer(&mut self, slot: u32) {
        self.settle_except(slot);
        self.disarm(slot);
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.settle();
        let timer = self.earliest_timer();
        let one_shot = self.one_shot_min();
        let (time, event) = match (timer, one_shot) {
            // seqs are unique, so the slot bits never decide between the two
            (Some(a), Some(b)) if b < a => {
                let e = self.pop_one_shot();
                (time_of(e.key), e.event)
            }
            (Some(key), _) => {
                let slot = slot_of(key);
                self.fired = slot;
                (time_of(key), self.slots[slot as usize])
            }
            (None, Some(_)) => {
                let e = self.pop_one_shot();
                (time_of(e.key), e.event)
            }
            (None, None) => return None,
        };
        self.advance(time);
        Some((time, event))
    }

    /// Remove and return the earliest event if it is due at or before `until`; otherwise leave
    /// the queue as it is and return `None`. The run loop's step: [`Self::peek_time`] then
    /// [`Self::pop`] found the earliest event twice (and, right after a timer fired, as the
    /// least of the root's children); callgrind on bench-64vm: 2.5% of the run's instructions.
    #[inline(always)]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Event)> {
        self.settle();
        let timer = self.earliest_timer();
        let (time, event) = match (timer, self.one_shot_min()) {
            // seqs are unique, so the slot bits never decide between the two
            (Some(a), Some(b)) if b < a => {
                if time_of(b) > until {
                    return None;
                }
                let e = self.pop_one_shot();
                (time_of(e.key), e.event)
            }
            (Some(key), _) => {
                if time_of(key) > until {
                    return None;
                }
                let slot = slot_of(key);
                self.fired = slot;
                (time_of(key), self.slots[slot as usize])
            }
            (None, Some(b)) => {
                if time_of(b) > until {
                    return None;
                }
                let e = self.pop_one_shot();
                (time_of(e.key), e.event)
            }
            (None, None) => return None,
        };
        self.advance(time);
        Some((time, event))
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        let timer = if self.fired != UNARMED {
            // the fired timer is gone: the earliest other is the least of the subtrees beside
            // its path to the root
            let mut i = self.leaves + self.fired as usize;
            let mut k = NO_KEY;
            while i > 1 {
                k = k.min(self.timers[i ^ 1]);
                i /= 2;
            }
            (k != NO_KEY).then(|| time_of(k))
        } else {
            self.earliest_timer().map(time_of)
        };
        let one_shot = self.one_shot_min().map(time_of);
        match (timer, one_shot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The root of the timer tree: the earliest armed timer's key, if any is armed.
    #[inline(always)]
    fn earliest_timer(&self) -> Option<u128> {
        let root = self.timers[1];
        // the time half alone tells `NO_KEY` (no armed timer's time is `Time::MAX`): tested as a
        // `u128`, the root was read with one 16-byte vector load, which the store buffer cannot
        // serve from the two 8-byte stores of the tree walk just before (a timer re-armed, or
        // the fired one removed), so every pop waited for them to reach the cache
        (time_of(root) != Time::MAX).then_some(root)
    }

    /// Number of pending events (the timers counted by a scan of the slots: not for hot paths,
    /// which keep no count, so that arming a timer costs only its walk).
    pub fn len(&self) -> usize {
        let armed = self.timers[self.leaves..].iter().filter(|&&k| k != NO_KEY).count();
        self.wheel_len + self.heap.len() + armed - usize::from(self.fired != UNARMED)
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pop_until_stops_before_later_events_and_leaves_them() {
        let mut q = EventQueue::with_timers(1);
        q.push(5, Event::Sample);
        q.set_timer(0, 3, Event::SliceEnd { pcpu: 0 });
        q.push(9, Event::Entitlement);
        assert_eq!(q.pop_until(4), Some((3, Event::SliceEnd { pcpu: 0 })));
        assert_eq!(q.pop_until(4), None);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_until(5), Some((5, Event::Sample)));
        assert_eq!(q.pop_until(8), None);
        assert_eq!(q.pop(), Some((9, Event::Entitlement)));
        assert_eq!(q.pop_until(u64::MAX), None);
    }

    #[test]
    fn cancelled_timer_never_fires() {
        let mut q = EventQueue::with_timers(3);
        for s in 0..3 {
            q.set_timer(s, 10 + s as Time, Event::Wake { vcpu: s });
        }
        q.cancel_timer(0);
        q.cancel_timer(0);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(), Some((11, Event::Wake { vcpu: 1 })));
        assert_eq!(q.pop(), Some((12, Event::Wake { vcpu: 2 })));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn equal_times_pop_in_scheduling_order_across_both_heaps() {
        let mut q = EventQueue::with_timers(2);
        q.set_timer(1, 4, Event::Wake { vcpu: 1 });
        q.push(4, Event::Sample);
        q.set_timer(0, 4, Event::Wake { vcpu: 0 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, vec![Event::Wake { vcpu: 1 }, Event::Sample, Event::Wake { vcpu: 0 }]);
    }
}
