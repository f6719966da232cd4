//! The event queue: a binary min-heap keyed by `(time, seq)`.
//!
//! `seq` increases with every push, so two events at the same nanosecond pop in the order they
//! were scheduled. Cancellation is lazy: handlers carry a generation number and ignore stale
//! events, which keeps the hot path free of searches.

use super::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an instant. Indices refer to the simulation's flat arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// a waiting or idle vCPU becomes runnable (its think time is over)
    Wake { vcpu: u32 },
    /// the slice of whatever runs on `pcpu` ends; stale unless `gen` matches the pCPU's
    SliceEnd { pcpu: u32, gen: u32 },
    /// a VM held back by its CPU limit has earned tokens again; stale unless `gen` matches
    LimitRefill { vm: u32, gen: u32 },
    /// recompute demand estimates and entitlements
    Entitlement,
    /// sample every counter into the tables
    Sample,
    /// power a VM on (admission control runs here)
    PowerOn { vm: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) is on top.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Pending events in `(time, seq)` order.
///
/// # Examples
/// ```
/// use vmtwin_core::sim::{Event, EventQueue};
/// let mut q = EventQueue::default();
/// q.push(5, Event::Sample);
/// q.push(5, Event::Entitlement);
/// q.push(1, Event::Wake { vcpu: 0 });
/// assert_eq!(q.pop(), Some((1, Event::Wake { vcpu: 0 })));
/// assert_eq!(q.pop(), Some((5, Event::Sample)));      // same time: emission order
/// assert_eq!(q.pop(), Some((5, Event::Entitlement)));
/// assert_eq!(q.pop(), None);
/// ```
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    /// Schedule `event` at absolute time `time`.
    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, event });
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
