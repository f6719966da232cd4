//! Storage: the host I/O stack from a VM's virtual disk to the device, request by request.
//!
//! A VM disk (one per VM, on a datastore = a LUN) hands requests to the VMM, which splits those
//! above [`StackParams::split_bytes`] (Kraft et al. §4.2.1: 512 kB). The pieces wait in the LUN's
//! per-VM kernel queues; SFQ(D) ([`sfq`]) picks which VM goes next by start tag, weighted by
//! disk shares, while fewer than DQLEN commands are active at the device and the VM has fewer than
//! `Disk.SchedNumReqOutstanding` active. Same-VM commands adjacent on disk may be merged
//! (Kraft §4.3.1). The LUN's NMP path selection policy ([`psp`]: FIXED, MRU, RR, Adaptive) picks a
//! path (an HBA port to an array controller, AO or AUO under ALUA); the HBA port has its own
//! queue depth and link bandwidth. Devices ([`device`], [`hdd`], [`array`]) serve the command and
//! the completion travels back. [`counters`] accumulates esxtop's disk counters at the four
//! grains esxtop shows (VM disk, LUN, path, adapter).
//!
//! # Wiring
//! The subsystem owns its state, counters and events but not an event queue: every call that can
//! schedule takes an [`IoScheduler`], and the run loop routes each [`StorageEvent`] back to
//! [`Storage::handle`] at its time. I/O submitted by other subsystems ([`Storage::submit`])
//! completes into [`Storage::take_completions`]; I/O of the built-in generators ([`workload`])
//! is consumed inside.

pub mod array;
pub mod counters;
pub mod device;
pub mod hdd;
pub mod iolog;
pub mod params;
pub mod psp;
pub mod scenario;
pub mod sfq;
mod stack;
pub mod workload;

pub use counters::{DiskCounters, EsxtopDisk};
pub use iolog::IoRecord;
pub use params::*;
pub use psp::PspChange;
pub use scenario::{DiskSection, DiskTrace, DiskWorkload, PathAction, PathEvent, PspEvent, StorageSection, VcpuIoSpec};
pub use stack::{Completion, Storage};

use crate::sim::Time;

/// Direction of a SCSI data command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// READ(10): data from the device
    Read,
    /// WRITE(10): data to the device
    Write,
}

/// Bytes in one sector, the unit of logical block addresses here (the trace's `lbn` unit too).
pub const SECTOR_BYTES: u64 = 512;

/// Everything the storage subsystem asks the run loop to do later. Indices refer to the
/// [`Storage`]'s flat arrays; `attempt` makes a completion from an aborted attempt stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageEvent {
    /// a device finishes the command `cmd` of LUN `lun` (stale unless `attempt` still matches);
    /// a spinning disk's head is free then and starts its next on-board command
    DeviceDone { lun: u32, cmd: u32, attempt: u64 },
    /// workload generator `gen` issues its next request(s) for customer `user` (think time or
    /// inter-arrival over; `user` is 0 except for batch customers)
    Issue { gen: u32, user: u32 },
    /// PSP Adaptive of LUN `lun` closes a monitoring window (stale unless `gen` is the LUN's
    /// current policy generation: a policy change starts a new chain of windows)
    PspWindow { lun: u32, gen: u32 },
    /// the `change`-th PSP change registered with [`Storage::schedule_psp_change`] takes effect
    PspChange { change: u32 },
    /// path `path` fails (cable pull, target port down)
    PathDown { path: u32 },
    /// path `path` comes back
    PathUp { path: u32 },
}

/// The run loop's side of the boundary: run `ev` at time `t` (never earlier than now), ordered
/// with every other engine event by `(time, seq)`.
pub trait IoScheduler {
    /// Schedule `ev` at `t`.
    fn at(&mut self, t: Time, ev: StorageEvent);
}

impl IoScheduler for Vec<(Time, StorageEvent)> {
    fn at(&mut self, t: Time, ev: StorageEvent) {
        self.push((t, ev));
    }
}
