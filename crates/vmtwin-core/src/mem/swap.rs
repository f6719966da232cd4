//! The swap device seen by the memory subsystem: a narrow trait, and a fixed-latency stand-in.
//!
//! Hypervisor swap writes victim pages to the VM's swap file asynchronously (clustered writes)
//! and reads a page back synchronously when the guest touches it [S1 §3.3, S2 §3]. The memory
//! subsystem only needs to know when each I/O completes. [`SwapDevice`] is that narrow call;
//! the real implementation will submit the I/O to the storage subsystem's queues (shared with
//! guest I/O) and is wired next. Until then [`FixedLatencySwapStandIn`] answers with a fixed
//! latency per request and no queueing: it is a stand-in, not a device model.
//!
//! # Tunables
//! `read_ns`, `write_ns` of the stand-in.
//!
//! # Counters
//! Reads and writes issued (`reads`, `writes`, in requests).
//!
//! # Known gaps
//! - No queueing, no device, no bandwidth limit: everything the storage wiring will bring.

use crate::sim::{Time, NS_PER_MS};

/// Where swap I/O goes.
pub trait SwapDevice: Send + Sync {
    /// Write `pages` pages of VM `vm` to its swap file, starting at `now`; returns completion.
    fn write(&mut self, vm: u32, pages: u32, now: Time) -> Time;
    /// Read one page of VM `vm` back, starting at `now`; returns completion.
    fn read(&mut self, vm: u32, now: Time) -> Time;
}

/// Fixed latency per request, no queueing (a stand-in until storage is wired).
#[derive(Debug, Clone, PartialEq)]
pub struct FixedLatencySwapStandIn {
    /// latency of a one-page read, in ns. Default 5 ms: a spinning disk's random read (chosen).
    pub read_ns: Time,
    /// latency of a clustered write, in ns. Default 5 ms (chosen).
    pub write_ns: Time,
    /// reads issued
    pub reads: u64,
    /// writes issued
    pub writes: u64,
}

impl Default for FixedLatencySwapStandIn {
    fn default() -> Self {
        FixedLatencySwapStandIn { read_ns: 5 * NS_PER_MS, write_ns: 5 * NS_PER_MS, reads: 0, writes: 0 }
    }
}

impl SwapDevice for FixedLatencySwapStandIn {
    fn write(&mut self, _vm: u32, _pages: u32, now: Time) -> Time {
        self.writes += 1;
        now + self.write_ns
    }
    fn read(&mut self, _vm: u32, now: Time) -> Time {
        self.reads += 1;
        now + self.read_ns
    }
}
