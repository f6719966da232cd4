//! The run loop's side of the storage subsystem: building it from the spec, routing its events,
//! and handing its completions to whoever waits for them ([`IoToken`]).

use super::Simulation;
use crate::sim::Time;
use crate::storage::Completion;
use crate::wiring::{IoToken, Post};

impl Simulation {
    /// A storage event came due. Out of line: inlined into the step, subsystem arms cost the
    /// CPU-only hot path 8% (callgrind).
    #[inline(never)]
    pub(super) fn route_storage(&mut self, slot: u32, t: Time) {
        let ev = self.storage_events.take(slot);
        let storage = self.storage.as_mut().expect("storage events come from the storage subsystem");
        storage.handle(t, ev, &mut Post { queue: &mut self.queue, slab: &mut self.storage_events });
        self.storage_completions(t);
    }

    /// Hand every I/O submitted from outside the stack that has completed to its waiter.
    fn storage_completions(&mut self, t: Time) {
        let Some(storage) = self.storage.as_mut() else { return };
        if !storage.has_completions() {
            return;
        }
        for c in storage.take_completions() {
            self.io_done(c, t);
        }
    }

    /// One completed I/O, by who waits for it.
    fn io_done(&mut self, c: Completion, t: Time) {
        match IoToken::decode(c.token) {
            Some(IoToken::Vcpu { vcpu }) => {
                let _ = (vcpu, t);
                unimplemented!("vCPU synchronous I/O completion (storage engineer, in progress)")
            }
            Some(IoToken::Swap { vm, batch }) => {
                // the memory subsystem's call (simulation/memory.rs) goes here:
                // self.swap_io_done(vm, batch, t)
                let _ = (vm, batch);
                unimplemented!("hypervisor swap I/O completion: swap_io_done in simulation/memory.rs (memory engineer)")
            }
            None => panic!("storage completion with token {:#x}, which no IoToken encodes", c.token),
        }
    }
}
