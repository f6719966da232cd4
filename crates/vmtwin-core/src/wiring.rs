//! How subsystems reach the run loop's one event queue.
//!
//! The CPU scheduler's events are small (an index and a generation) and travel in the queue
//! itself, which keeps an entry at 32 bytes on the hot path. A subsystem's events (storage's
//! [`StorageEvent`], memory's [`MemEvent`], and whatever comes next) may be larger; they are
//! parked in a [`Slab`] owned by the run loop and the queue carries only the slot
//! ([`Event::Storage`], [`Event::Mem`]). A subsystem never sees the queue: each of its calls that
//! can schedule takes its own scheduler trait ([`IoScheduler`], [`MemScheduler`]), which
//! [`Post`] implements by parking the event and pushing its slot. When the slot comes due the run
//! loop takes the event back out ([`Slab::take`]) and hands it to the subsystem's `handle`.
//!
//! Slots are reused (a free list), so the slab holds at most the events pending at once; the
//! order of events is the queue's `(time, seq)` order, independent of slot numbers, so reuse
//! cannot change a run.

use crate::mem::{MemEvent, MemScheduler};
use crate::sim::{Event, EventQueue, Time};
use crate::storage::{IoScheduler, StorageEvent};

/// Who waits for an I/O submitted with [`crate::storage::Storage::submit`]: the `u64` token the
/// storage stack hands back in its [`crate::storage::Completion`]. One pair of functions encodes
/// and decodes it ([`IoToken::encode`], [`IoToken::decode`]); the run loop's completion handling
/// (`simulation/storage.rs`) matches on the decoded value and calls the waiting side.
///
/// Layout: the top 8 bits name the kind, the low 56 bits its fields (a `Swap`'s VM in bits
/// 32..56, so at most 2^24 VMs per host, and its batch in bits 0..32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoToken {
    /// a vCPU's synchronous guest I/O: the vCPU (global index) waits until it completes
    Vcpu {
        /// global vCPU index
        vcpu: u32,
    },
    /// hypervisor swap I/O of VM `vm` (its swap file on a datastore), batch `batch` of the
    /// memory subsystem's numbering
    Swap {
        /// VM index
        vm: u32,
        /// the memory subsystem's batch number
        batch: u32,
    },
}

const TOKEN_KIND_SHIFT: u32 = 56;
const TOKEN_VCPU: u64 = 1;
const TOKEN_SWAP: u64 = 2;
const TOKEN_VM_LIMIT: u32 = 1 << 24;

impl IoToken {
    /// The token as the `u64` [`crate::storage::Storage::submit`] takes.
    ///
    /// # Panics
    /// If a `Swap`'s VM index does not fit in 24 bits.
    pub fn encode(self) -> u64 {
        match self {
            IoToken::Vcpu { vcpu } => (TOKEN_VCPU << TOKEN_KIND_SHIFT) | u64::from(vcpu),
            IoToken::Swap { vm, batch } => {
                assert!(vm < TOKEN_VM_LIMIT, "swap I/O token: VM index {vm} does not fit in 24 bits");
                (TOKEN_SWAP << TOKEN_KIND_SHIFT) | (u64::from(vm) << 32) | u64::from(batch)
            }
        }
    }

    /// The token a completion carries, decoded; `None` for a `u64` no [`IoToken::encode`] made.
    pub fn decode(raw: u64) -> Option<IoToken> {
        let low = raw & ((1 << TOKEN_KIND_SHIFT) - 1);
        match raw >> TOKEN_KIND_SHIFT {
            TOKEN_VCPU if low <= u64::from(u32::MAX) => Some(IoToken::Vcpu { vcpu: low as u32 }),
            TOKEN_SWAP => Some(IoToken::Swap { vm: (low >> 32) as u32, batch: low as u32 }),
            _ => None,
        }
    }
}

/// Parked events of one subsystem, by slot.
#[derive(Debug, Clone)]
pub struct Slab<E> {
    slots: Vec<Option<E>>,
    free: Vec<u32>,
}

impl<E> Default for Slab<E> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new() }
    }
}

impl<E> Slab<E> {
    /// Park `ev`; returns its slot.
    pub fn park(&mut self, ev: E) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(ev);
                s
            }
            None => {
                self.slots.push(Some(ev));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Take the event parked at `slot` out, freeing the slot.
    ///
    /// # Panics
    /// If the slot is empty: every slot is pushed once and popped once.
    pub fn take(&mut self, slot: u32) -> E {
        let ev = self.slots[slot as usize].take().expect("a parked event is taken once");
        self.free.push(slot);
        ev
    }

    /// Events parked now.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether nothing is parked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A subsystem's scheduler: parks its events in `slab` and queues their slots.
pub struct Post<'a, E> {
    /// the run loop's queue
    pub queue: &'a mut EventQueue,
    /// the subsystem's parked events
    pub slab: &'a mut Slab<E>,
}

impl IoScheduler for Post<'_, StorageEvent> {
    #[inline(always)]
    fn at(&mut self, t: Time, ev: StorageEvent) {
        let slot = self.slab.park(ev);
        self.queue.push(t, Event::Storage { slot });
    }
}

impl MemScheduler for Post<'_, MemEvent> {
    fn at(&mut self, t: Time, ev: MemEvent) {
        let slot = self.slab.park(ev);
        self.queue.push(t, Event::Mem { slot });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_tokens_round_trip_and_kinds_do_not_collide() {
        let cases = [
            IoToken::Vcpu { vcpu: 0 },
            IoToken::Vcpu { vcpu: u32::MAX },
            IoToken::Swap { vm: 0, batch: 0 },
            IoToken::Swap { vm: TOKEN_VM_LIMIT - 1, batch: u32::MAX },
            IoToken::Swap { vm: 7, batch: 123_456 },
        ];
        let raws: std::collections::HashSet<u64> = cases.iter().map(|t| t.encode()).collect();
        assert_eq!(raws.len(), cases.len());
        for t in cases {
            assert_eq!(IoToken::decode(t.encode()), Some(t));
        }
        assert_eq!(IoToken::decode(0), None, "kind 0 is no token");
        assert_eq!(IoToken::decode(TOKEN_VCPU << TOKEN_KIND_SHIFT | 1 << 40), None);
    }

    #[test]
    fn slots_are_reused_and_events_come_back_in_queue_order() {
        let mut queue = EventQueue::with_timers(0);
        let mut slab: Slab<StorageEvent> = Slab::default();
        let ev = |gen| StorageEvent::Issue { gen, user: 0 };
        {
            let mut post = Post { queue: &mut queue, slab: &mut slab };
            post.at(30, ev(3));
            post.at(10, ev(1));
            post.at(20, ev(2));
        }
        assert_eq!(slab.len(), 3);
        let mut seen = vec![];
        while let Some((t, e)) = queue.pop() {
            let Event::Storage { slot } = e else { panic!("{e:?}") };
            seen.push((t, slab.take(slot)));
            if t == 10 {
                // a slot freed by the first pop is the next one parked
                let mut post = Post { queue: &mut queue, slab: &mut slab };
                post.at(15, ev(9));
            }
        }
        assert_eq!(seen, vec![(10, ev(1)), (15, ev(9)), (20, ev(2)), (30, ev(3))]);
        assert!(slab.is_empty());
        assert_eq!(slab.slots.len(), 3, "the fourth event reused a slot");
    }
}
