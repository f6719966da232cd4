//! The event queue: one-shot events in a binary heap, plus re-armable timers in an indexed heap.
//!
//! Both are keyed by `(time, seq)`, with `seq` drawn from one counter, so two events at the same
//! nanosecond pop in the order they were scheduled and every run is identical. A pCPU's slice
//! timer is moved or cancelled all the time (a slice cut short by a preemption or a halt), so
//! each pCPU has a timer slot that holds at most one pending event and is re-armed or cancelled
//! in place, in O(log pCPUs): no stale event is ever popped. Events that are never cancelled
//! (the end of a halt, samples, entitlement updates, power-ons, limit refills) go to the plain
//! heap.

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
    /// recompute demand estimates and entitlements
    Entitlement,
    /// sample every counter into the tables
    Sample,
    /// power a VM on (admission control runs here)
    PowerOn { vm: u32 },
}

/// A one-shot event with its packed `(time, seq)` key (see [`pack`]; the slot bits are zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    key: u128,
    event: Event,
}

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

/// Position of a slot that is not in the timer heap.
const UNARMED: u32 = u32::MAX;

/// Children per node of the timer heap: a 4-ary heap is half as deep as a binary one, and its
/// four children sit in one cache line.
const ARITY: usize = 4;

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
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    /// timer heap (4-ary) of packed (time, seq, slot)
    timers: Vec<u128>,
    /// per slot: the event it fires while armed
    slots: Vec<Event>,
    /// per slot: index in `timers`, or UNARMED
    pos: Vec<u32>,
    /// slot of a timer just popped but still at the root: it is removed lazily, so that the
    /// common "fire, then re-arm the same timer" costs one sift instead of two
    fired: u32,
}

impl EventQueue {
    /// A queue with `slots` timer slots, numbered from 0.
    pub fn with_timers(slots: usize) -> Self {
        EventQueue {
            slots: vec![Event::Sample; slots],
            pos: vec![UNARMED; slots],
            timers: Vec::with_capacity(slots),
            fired: UNARMED,
            ..Default::default()
        }
    }

    /// Finish removing the timer `pop` returned last, unless it was re-armed meanwhile.
    #[inline]
    fn settle(&mut self) {
        if self.fired != UNARMED {
            self.fired = UNARMED;
            self.remove_at(0);
        }
    }

    /// Schedule a one-shot `event` at absolute time `time`.
    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        self.heap.push(Entry { key: pack(time, self.seq, 0), event });
    }

    /// Arm timer `slot` to fire `event` at `time`, replacing whatever it held.
    #[inline]
    pub fn set_timer(&mut self, slot: u32, time: Time, event: Event) {
        self.seq += 1;
        self.slots[slot as usize] = event;
        let key = pack(time, self.seq, slot);
        if self.fired == slot {
            // re-arming the timer that just fired: it still sits at the root
            self.fired = UNARMED;
            self.sift_down(0, key);
            return;
        }
        self.settle();
        let p = self.pos[slot as usize];
        if p == UNARMED {
            self.timers.push(key);
            self.sift_up(self.timers.len() - 1, key);
        } else if key > self.timers[p as usize] {
            self.sift_down(p as usize, key);
        } else {
            self.sift_up(p as usize, key);
        }
    }

    /// Disarm timer `slot` (no effect when it is not armed).
    #[inline]
    pub fn cancel_timer(&mut self, slot: u32) {
        self.settle();
        let p = self.pos[slot as usize];
        if p != UNARMED {
            self.remove_at(p as usize);
        }
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.settle();
        let timer = self.timers.first().copied();
        let one_shot = self.heap.peek().map(|e| e.key);
        match (timer, one_shot) {
            // seqs are unique, so the slot bits never decide between the two
            (Some(a), Some(b)) if b < a => self.heap.pop().map(|e| (time_of(e.key), e.event)),
            (Some(key), _) => {
                let slot = slot_of(key);
                self.fired = slot;
                Some((time_of(key), self.slots[slot as usize]))
            }
            (None, _) => self.heap.pop().map(|e| (time_of(e.key), e.event)),
        }
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        let timer = if self.fired != UNARMED {
            // the fired timer is gone: the earliest other is one of the root's children
            let n = self.timers.len().min(1 + ARITY);
            self.timers[1..n].iter().min().map(|&k| time_of(k))
        } else {
            self.timers.first().map(|&k| time_of(k))
        };
        let one_shot = self.heap.peek().map(|e| time_of(e.key));
        match (timer, one_shot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.timers.len() - usize::from(self.fired != UNARMED)
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn remove_at(&mut self, i: usize) {
        self.pos[slot_of(self.timers[i]) as usize] = UNARMED;
        let key = self.timers.pop().expect("non-empty");
        if i < self.timers.len() {
            // the last entry fills the hole, then finds its place
            if i > 0 && key < self.timers[(i - 1) / ARITY] {
                self.sift_up(i, key);
            } else {
                self.sift_down(i, key);
            }
        }
    }

    /// Move the hole at `i` up until `key` fits there.
    #[inline]
    fn sift_up(&mut self, mut i: usize, key: u128) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pk = self.timers[parent];
            if key >= pk {
                break;
            }
            self.timers[i] = pk;
            self.pos[slot_of(pk) as usize] = i as u32;
            i = parent;
        }
        self.timers[i] = key;
        self.pos[slot_of(key) as usize] = i as u32;
    }

    /// Move the hole at `i` down until `key` fits there.
    #[inline]
    fn sift_down(&mut self, mut i: usize, key: u128) {
        let n = self.timers.len();
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let mut mk = self.timers[first];
            let mut m = first;
            for c in first + 1..(first + ARITY).min(n) {
                if self.timers[c] < mk {
                    mk = self.timers[c];
                    m = c;
                }
            }
            if key <= mk {
                break;
            }
            self.timers[i] = mk;
            self.pos[slot_of(mk) as usize] = i as u32;
            i = m;
        }
        self.timers[i] = key;
        self.pos[slot_of(key) as usize] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
