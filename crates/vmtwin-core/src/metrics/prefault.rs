//! Prefaulting the sampled tables' reserved room on a second thread.
//!
//! The sampler writes its rows into room reserved ahead (`Sampler::reserve_samples`), memory
//! fresh from the kernel: the first write to each 4 KiB page takes a page fault, which maps and
//! zeroes it. With 1,024 VMs at 2 s sampling the rows of a 20-minute run fill about 200 MB,
//! 48,000 pages, and on this project's virtual machines a fault costs about 1.4 us (the guest
//! kernel's zeroing and the hypervisor's own fault behind it): 0.06-0.09 s of a run that takes
//! 0.7 s (benchmarks/README.md, bench-1024vm). The rows are kept (handed to Python), so fresh
//! memory is needed; but nothing says the event loop must take the faults. Right after
//! reserving, a thread asks the kernel to fault the room in (`madvise(MADV_POPULATE_WRITE)`,
//! Linux 5.14), so that the pages are there, or nearly, when the sampler reaches them.
//!
//! The kernel does the same work (the process's CPU time does not fall); it moves off the
//! event loop onto another core when one is free. `MADV_POPULATE_WRITE` never changes what is
//! in memory: a page already present is left alone, a missing one is mapped zeroed, exactly as
//! the sampler's own write would have. The thread is joined before the room can be handed out
//! or freed (a drain, the next reservation, the sampler's drop); where the call is not
//! supported (an older kernel, another OS) the sampler simply takes its faults as before.
//!
//! # Tunables
//! [`PREFAULT_MIN_BYTES`]: smaller reservations are left to the sampler (a thread's start costs
//! more than a few faults).
//!
//! # Counters
//! None.
//!
//! # Known gaps
//! - No effect on results, only on where the faults are taken; on a machine with every core
//!   busy the thread just competes with the event loop for the same time.

use std::thread::JoinHandle;

/// Least room, in bytes, worth a thread: 256 pages, about 0.35 ms of faults at 1.4 us each,
/// against tens of microseconds to start and join a thread. Source: sized here.
pub const PREFAULT_MIN_BYTES: usize = 1 << 20;

/// Bytes per page the ranges are cut to (the kernel refuses an unaligned start; on a host with
/// larger pages the call fails and nothing is prefaulted).
const PAGE: usize = 4096;

/// A running prefault of some memory ranges, joined by [`Prefault::finish`] or on drop.
#[derive(Default)]
pub struct Prefault {
    running: Option<JoinHandle<()>>,
}

impl Prefault {
    /// Start faulting in `ranges` (address, bytes) on a thread, after finishing any earlier
    /// prefault; nothing is started for less than [`PREFAULT_MIN_BYTES`] in all.
    ///
    /// # Safety
    /// Every range must lie in memory the caller owns and keeps mapped until [`Self::finish`]
    /// returns (or this value is dropped); its contents are never changed.
    pub unsafe fn start(&mut self, ranges: Vec<(usize, usize)>) {
        self.finish();
        if ranges.iter().map(|r| r.1).sum::<usize>() < PREFAULT_MIN_BYTES || !cfg!(target_os = "linux") {
            return;
        }
        // a thread that cannot be started (resource limits) leaves the faults to the sampler
        self.running = std::thread::Builder::new().name("vmtwin-prefault".into()).spawn(move || populate(&ranges)).ok();
    }

    /// Wait for the running prefault, if any.
    pub fn finish(&mut self) {
        if let Some(h) = self.running.take() {
            // a panic there (none is possible: it makes system calls only) would lose nothing
            let _ = h.join();
        }
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A copy has no prefault of its own running (the original's memory is not the copy's).
impl Clone for Prefault {
    fn clone(&self) -> Self {
        Prefault::default()
    }
}

impl std::fmt::Debug for Prefault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefault").field("running", &self.running.is_some()).finish()
    }
}

/// Bytes of the largest range faulted in per round (8 pages): see [`populate`].
const ROUND_BYTES: usize = 8 * PAGE;

/// Fault in each range's whole pages, writable; errors are ignored (the sampler's writes fault
/// whatever is left). The sampler fills every column at the same pace, a row at a time, so the
/// ranges are faulted in the same order: round by round, the same share of each (not one column
/// after another, which would leave the last columns' first pages to the sampler).
fn populate(ranges: &[(usize, usize)]) {
    let largest = ranges.iter().map(|r| r.1).max().unwrap_or(0);
    let rounds = largest.div_ceil(ROUND_BYTES).max(1);
    for r in 0..rounds {
        for &(addr, bytes) in ranges {
            // the round's share of the range, both ends rounded up to a page, so that the rounds
            // cover its whole pages once; the last ends at its last whole page
            let at = |k: usize| (addr + bytes * k / rounds).next_multiple_of(PAGE);
            let end = if r + 1 == rounds { (addr + bytes) / PAGE * PAGE } else { at(r + 1) };
            let start = at(r);
            if end > start {
                sys::populate_write(start, end - start);
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use std::ffi::{c_int, c_void};

    /// `MADV_POPULATE_WRITE` from Linux's `mman-common.h` (5.14 and later).
    const MADV_POPULATE_WRITE: c_int = 23;

    extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }

    pub fn populate_write(addr: usize, len: usize) {
        // SAFETY: `Prefault::start`'s caller keeps the range mapped; the call maps missing
        // pages of it and changes no byte of memory
        unsafe {
            madvise(addr as *mut c_void, len, MADV_POPULATE_WRITE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    pub fn populate_write(_addr: usize, _len: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefaulting a vector's whole allocation, rows already written included, changes none of
    /// them, and the room after them takes writes as usual.
    #[test]
    fn prefaulted_memory_keeps_its_contents() {
        let mut v: Vec<u64> = Vec::with_capacity(1 << 20);
        v.extend((0..300_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let mut p = Prefault::default();
        // SAFETY: the whole allocation, kept until `finish`
        unsafe { p.start(vec![(v.as_ptr() as usize, v.capacity() * 8)]) };
        v.extend((300_000..1u64 << 20).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        p.finish();
        assert!(v.iter().enumerate().all(|(i, &x)| x == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        // under the threshold nothing is started
        unsafe { p.start(vec![(v.as_ptr() as usize, PREFAULT_MIN_BYTES - 1)]) };
        assert!(p.running.is_none());
    }
}
