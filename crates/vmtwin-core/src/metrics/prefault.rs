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
//! The thread also allocates the next slice's columns. The bindings run a long run in slices and
//! drain the tables after each (`Simulation::drain_tables`), so each slice's reservation
//! allocates every column afresh: at bench-1024vm about 50 allocations of 100-300 KB a slice,
//! and each took a page fault or two on the event loop for the allocator's own bookkeeping (the
//! heap grown, a chunk's header written on a fresh page: about 970 faults in a 20-slice run,
//! 2.4 ms). Once the tables have been drained, a reservation asks the thread for empty columns
//! of the same sizes (allocated there, so their faults are the thread's, and faulted in
//! whole), which the next reservation takes in place of fresh ones (`Sampler::reserve_samples`).
//! A run reserved in one go (no drain) gets none. The spare columns hold one more slice's rows
//! of memory (about 10 MB at bench-1024vm) until the next slice takes them; what the last
//! slice asked for is freed unused.
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
//! - The spare columns the last slice asks for are allocated and faulted in for nothing, and a
//!   slice longer than the one before grows its columns on the event loop (the bindings' slices
//!   are all one size but the last, which is shorter).

use super::table::Column;
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
    /// the thread, which returns the spare columns it was asked for
    running: Option<JoinHandle<Vec<Column>>>,
}

impl Prefault {
    /// Start faulting in `ranges` (address, bytes) on a thread, after finishing any earlier
    /// prefault (its spare columns are dropped: take them with [`Self::finish`] first); then
    /// the thread allocates an empty column like each of `ahead`'s with room for its count of
    /// values, faulted in, for [`Self::finish`] to return. Nothing is started for less than
    /// [`PREFAULT_MIN_BYTES`] in all.
    ///
    /// # Safety
    /// Every range must lie in memory the caller owns and keeps mapped until [`Self::finish`]
    /// returns (or this value is dropped); its contents are never changed. The pages holding a
    /// range's first and last bytes are faulted in whole (no byte of them changes either).
    pub unsafe fn start(&mut self, ranges: Vec<(usize, usize)>, ahead: Vec<(&Column, usize)>) {
        self.finish();
        let ahead: Vec<(Column, usize)> = ahead.into_iter().map(|(c, n)| (c.empty_like(), n)).collect();
        let bytes = ranges.iter().map(|r| r.1).sum::<usize>() + ahead.iter().map(|(c, n)| c.value_bytes() * n).sum::<usize>();
        if bytes < PREFAULT_MIN_BYTES || !cfg!(target_os = "linux") {
            return;
        }
        let work = move || {
            populate(&ranges);
            let mut spares = Vec::with_capacity(ahead.len());
            for (mut c, n) in ahead {
                c.reserve(n);
                spares.push(c);
            }
            let room: Vec<(usize, usize)> = spares.iter_mut().map(Column::spare_room).collect();
            populate(&room);
            spares
        };
        // a thread that cannot be started (resource limits) leaves the faults to the sampler
        self.running = std::thread::Builder::new().name("vmtwin-prefault".into()).spawn(work).ok();
    }

    /// Wait for the running prefault, if any; the spare columns it allocated, if it was asked
    /// for some (else none).
    pub fn finish(&mut self) -> Vec<Column> {
        // a panic there (only an allocation failure could) would lose nothing but the spares
        self.running.take().and_then(|h| h.join().ok()).unwrap_or_default()
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

/// Bytes of the largest range faulted in per round once the rounds have grown (8 pages): see
/// [`populate`].
const ROUND_BYTES: usize = 8 * PAGE;

/// Fault in each range's whole pages, writable; errors are ignored (the sampler's writes fault
/// whatever is left). The sampler fills every column at the same pace, a row at a time, so the
/// ranges are faulted in the same order: round by round, the same share of each (not one column
/// after another, which would leave the last columns' first pages to the sampler). The first
/// round takes a page's worth of the largest range (and the same share of the others), each
/// later one twice the last, up to [`ROUND_BYTES`], so that the first samples' pages of every
/// column come first: at bench-1024vm the first sample comes about a millisecond after the
/// room is reserved, and a first round of 8 pages of each of the 53 columns (about 1 ms of
/// faults at 2.5 us) was often still running then, so the event loop took the first samples'
/// faults itself (2,442 faults in `Rows::flush` in one run with the second core busy; 781
/// with these rounds). The pages holding a range's first and last bytes are taken whole, so
/// that none of the range's pages is left to the sampler whatever lies beside it.
fn populate(ranges: &[(usize, usize)]) {
    rounds(ranges, |start, len| sys::populate_write(start, len));
}

/// [`populate`]'s calls, in order, as (page-aligned start, bytes) to `call`.
fn rounds(ranges: &[(usize, usize)], mut call: impl FnMut(usize, usize)) {
    let largest = ranges.iter().map(|r| r.1).max().unwrap_or(0);
    // the rounds' ends, in bytes of the largest range: 1, 3, 7, 15 pages, then every 8 pages
    let mut cuts = vec![0];
    let mut step = PAGE;
    while cuts[cuts.len() - 1] < largest {
        cuts.push((cuts[cuts.len() - 1] + step).min(largest));
        step = (2 * step).min(ROUND_BYTES);
    }
    let rounds = cuts.len() - 1;
    for r in 0..rounds {
        for &(addr, bytes) in ranges.iter().filter(|r| r.1 > 0) {
            // the round's share of the range, both ends rounded up to a page, so that the rounds
            // cover its pages once; the first starts at the page holding the range's first
            // byte and the last ends after the page holding its last (pages partly the
            // range's: mapped, since the range is, and their other bytes left as they are)
            let at = |c: usize| (addr + (bytes as u128 * c as u128 / largest as u128) as usize).next_multiple_of(PAGE);
            let start = if r == 0 { addr / PAGE * PAGE } else { at(cuts[r]) };
            let end = if r + 1 == rounds { (addr + bytes).next_multiple_of(PAGE) } else { at(cuts[r + 1]) };
            if end > start {
                call(start, end - start);
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
        unsafe { p.start(vec![(v.as_ptr() as usize, v.capacity() * 8)], Vec::new()) };
        v.extend((300_000..1u64 << 20).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        assert!(p.finish().is_empty(), "no spare columns asked for");
        assert!(v.iter().enumerate().all(|(i, &x)| x == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        // under the threshold nothing is started
        unsafe { p.start(vec![(v.as_ptr() as usize, PREFAULT_MIN_BYTES - 1)], Vec::new()) };
        assert!(p.running.is_none());
    }

    /// The spare columns come back empty, of the kinds asked for, each with room for its count.
    #[test]
    fn spare_columns_come_back_with_room() {
        let (f, u, w) = (Column::F64(vec![1.0; 5]), Column::U64(Vec::new()), Column::U32(vec![7]));
        let mut p = Prefault::default();
        // SAFETY: no ranges
        unsafe { p.start(Vec::new(), vec![(&f, 100_000), (&u, 1), (&w, 300_000)]) };
        let spares = p.finish();
        assert_eq!(spares.len(), 3);
        assert!(matches!(&spares[0], Column::F64(v) if v.is_empty() && v.capacity() >= 100_000));
        assert!(matches!(&spares[1], Column::U64(v) if v.is_empty() && v.capacity() >= 1));
        assert!(matches!(&spares[2], Column::U32(v) if v.is_empty() && v.capacity() >= 300_000));
        // too little to be worth a thread: none
        unsafe { p.start(Vec::new(), vec![(&f, 1000)]) };
        assert!(p.finish().is_empty());
    }

    /// The rounds cover each range's pages once, from the page of its first byte to the page of
    /// its last, at the same pace in every range; the first rounds are short.
    #[test]
    fn rounds_cover_every_page_once_starting_small() {
        // columns as the sampler's: 8- and 4-byte values, starting off a page boundary, and
        // an empty one (a column never reserved) and a tiny one
        let ranges = [(0x10_0010, 509 * 1024), (0x90_0010, 254 * 1024 + 8), (0x100_0000, 0), (0x200_0ff0, 40)];
        let mut calls = Vec::new();
        rounds(&ranges, |start, len| calls.push((start, len)));
        for &(addr, bytes) in ranges.iter().filter(|r| r.1 > 0) {
            let (lo, hi) = (addr / PAGE * PAGE, (addr + bytes).next_multiple_of(PAGE));
            let mut mine: Vec<_> = calls.iter().filter(|c| c.0 >= lo && c.0 < hi).copied().collect();
            assert!(mine.iter().all(|c| c.0 % PAGE == 0 && c.1 % PAGE == 0 && c.0 + c.1 <= hi));
            mine.sort();
            // contiguous, no overlap, first to last page
            assert_eq!(mine[0].0, lo);
            assert!(mine.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
            assert_eq!(mine.last().map(|c| c.0 + c.1), Some(hi));
        }
        // nothing for the empty range; the largest range's first call a page's worth (two
        // pages: it starts 16 bytes into one), the next ones 2, 4, 8 pages
        assert!(calls.iter().all(|c| !(0x100_0000..0x100_1000).contains(&c.0)));
        let largest: Vec<_> = calls.iter().filter(|c| c.0 < 0x90_0000).collect();
        let sizes: Vec<_> = largest[..4].iter().map(|c| c.1 / PAGE).collect();
        assert_eq!(sizes, [2, 2, 4, 8]);
        assert!(largest.iter().all(|c| c.1 <= ROUND_BYTES + PAGE));
        // round by round: the first call of the second range comes before the largest's second
        let first_second = calls.iter().position(|c| c.0 >= 0x90_0000 && c.0 < 0x100_0000).unwrap();
        let second_largest = calls.iter().position(|c| c == largest[1]).unwrap();
        assert!(first_second < second_largest);
    }
}
