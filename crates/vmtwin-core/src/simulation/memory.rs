//! The run loop's side of the memory subsystem: building it from the spec, routing its events,
//! and turning guest accesses into vCPU stalls and waits.

use super::Simulation;
use crate::sim::Time;
use crate::wiring::Post;

impl Simulation {
    /// A memory event came due (out of line, as storage's).
    #[inline(never)]
    pub(super) fn route_mem(&mut self, slot: u32, t: Time) {
        let ev = self.mem_events.take(slot);
        let mem = self.mem.as_mut().expect("memory events come from the memory subsystem");
        mem.handle(ev, t, &mut Post { queue: &mut self.queue, slab: &mut self.mem_events });
    }
}
