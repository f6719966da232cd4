//! A minimal run loop for driving the memory subsystem alone in tests.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use vmtwin_core::mem::{MemEvent, MemHost, MemScheduler};
use vmtwin_core::sim::Time;

#[derive(Default)]
pub struct Queue {
    heap: BinaryHeap<Reverse<(Time, u64, u8, u32)>>,
    seq: u64,
}

impl MemScheduler for Queue {
    fn at(&mut self, t: Time, ev: MemEvent) {
        self.seq += 1;
        let (kind, arg) = match ev {
            MemEvent::Tick => (0, 0),
            MemEvent::SwapOutDone { batch } => (1, batch),
            MemEvent::Resume { .. } => unreachable!("the host never schedules the run loop's resume"),
        };
        self.heap.push(Reverse((t, self.seq, kind, arg)));
    }
}

impl Queue {
    /// Run the host's events up to and including `until`.
    pub fn run_until(&mut self, host: &mut MemHost, until: Time) {
        while let Some(&Reverse((t, _, kind, arg))) = self.heap.peek() {
            if t > until {
                break;
            }
            self.heap.pop();
            let ev = if kind == 0 { MemEvent::Tick } else { MemEvent::SwapOutDone { batch: arg } };
            host.handle(ev, t, self);
        }
    }
}
