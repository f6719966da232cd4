//! The run loop's side of the storage subsystem: building it from the spec, routing its events,
//! and handing its completions to the vCPUs that wait for them.

use super::Simulation;
use crate::sim::Time;
use crate::wiring::Post;

impl Simulation {
    /// A storage event came due. Out of line: inlined into the step, subsystem arms cost the
    /// CPU-only hot path 8% (callgrind).
    #[inline(never)]
    pub(super) fn route_storage(&mut self, slot: u32, t: Time) {
        let ev = self.storage_events.take(slot);
        let storage = self.storage.as_mut().expect("storage events come from the storage subsystem");
        storage.handle(t, ev, &mut Post { queue: &mut self.queue, slab: &mut self.storage_events });
    }
}
