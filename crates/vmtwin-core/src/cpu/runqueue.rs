//! A pCPU's run queue: ready vCPUs ordered by virtual time, lowest first.
//!
//! Keys are non-negative finite `f64` virtual times, compared through their bit patterns (which
//! order like the values for non-negative floats); ties go to the earlier enqueue (`seq`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    key_bits: u64,
    seq: u64,
    vcpu: u32,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.key_bits, other.seq).cmp(&(self.key_bits, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Ready vCPUs of one pCPU.
#[derive(Debug, Default, Clone)]
pub struct RunQueue {
    heap: BinaryHeap<Entry>,
}

impl RunQueue {
    /// Enqueue `vcpu` with virtual time `key` (>= 0); `seq` breaks ties, first come first.
    #[inline]
    pub fn push(&mut self, key: f64, seq: u64, vcpu: u32) {
        debug_assert!(key >= 0.0 && key.is_finite());
        self.heap.push(Entry { key_bits: key.to_bits(), seq, vcpu });
    }

    /// The head's `(key, seq)`, for comparing queues without removing anything.
    #[inline]
    pub fn peek(&self) -> Option<(f64, u64)> {
        self.heap.peek().map(|e| (f64::from_bits(e.key_bits), e.seq))
    }

    /// Remove the head and return its vCPU.
    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        self.heap.pop().map(|e| e.vcpu)
    }
}
