//! What runs inside a VM: workload models that turn into CPU demand (bursts of work separated
//! by halts). The guest OS model (page cache, balloon driver, guest swap) joins here later.

mod barrier;
mod workload;

pub use barrier::{BarrierGroup, DEFAULT_SPIN_POLL_NS};
pub use workload::{ClosedLoop, GuestVcpu, Next, Workload};
