//! Cache warmth across a return: what a vCPU finds of its working set when it is switched back
//! onto a cache it ran on before, after other work ran there.
//!
//! The execution-speed model (`perf/model.rs`) charges a refill after a *move* (another core:
//! the private L2; another LLC or node: the LLC's share of the working set from memory). Without
//! this mechanism a vCPU that returns to the pCPU it last ran on finds its footprint intact
//! however much other work ran there meanwhile. Here each cache (the private L2 of a core, and
//! each LLC) counts the lines inserted into it, and a vCPU's footprint on it decays with the lines
//! other work inserted since the vCPU left:
//!
//! ```text
//!   evicted lines on return = F x (1 - exp(-n / C))
//!   F = min(ws, cache / (1 + k)) / line        (its footprint when it left)
//!   n = lines inserted into the cache by other work since it left
//!   C = cache / line                            (the cache's size in lines)
//! ```
//!
//! the footprint model of Thiébaut and Stone ("Footprints in the cache", ACM TOCS 5(4), 1987)
//! in its simplest form: each line inserted into a cache of `C` lines with random replacement
//! evicts a given resident line with probability `1/C`, so a line survives `n` insertions with
//! probability `(1 - 1/C)^n ~ exp(-n/C)`. `k` is the number of other vCPUs running on the cache
//! when the vCPU left (the equal shares `perf/model.rs` gives co-runners), `ws` its working set
//! (the profile's `working_set_bytes`). The evicted lines are refilled as a move refills them, by
//! the same constants (`perf/model.rs`, [`crate::perf::refill`]): each evicted L2 line at
//! `llc_refill_line_ns`, each evicted LLC line from memory at `mem_refill_bytes_per_ns`.
//!
//! Lines inserted, not cycles, are what evicts (argued): a co-runner whose working set already
//! sits in the cache inserts only its misses, one that streams inserts a line per reference, and
//! the cost of its cycles says neither. So a cache's count grows, while a vCPU runs on it, at that
//! vCPU's own insertion rate (its profile's LLC references per ns for an L2, its LLC misses per ns
//! with the co-runners it found at its start for an LLC, both worked out by the model from the
//! profile, [`crate::perf::insert_rates`]), and at each start by the lines the starting vCPU
//! refills: its evicted lines on a return, its whole footprint after a move. A vCPU's own
//! insertions never count against it (its mark is taken when it stops).
//!
//! A vCPU resuming with no intervening work pays nothing (`n = 0`); one moved to another cache is
//! charged by the move (the full refill), not here. The counts live here; the model reads each
//! vCPU's cumulative evicted lines at each sample, as it reads its moves.
//!
//! # Tunables
//! `PerfParams::resume_refill` (on by default; off gives the model before this mechanism). The
//! scales are the machine's existing `l2_bytes`, `llc_bytes` and `line_bytes`; the footprints and
//! rates come from each VM's profile. No new constant.
//!
//! # Counters
//! Per vCPU, cumulative: [`CacheWarmth::evicted_l2_lines`], [`CacheWarmth::evicted_llc_lines`]
//! (lines refilled on returns), [`CacheWarmth::resumes`] (starts on the cache it last ran on).
//! The model charges them in `refill_cycles` of `vcpu_perf`.
//!
//! # Known gaps
//! - Random replacement, not LRU: under true LRU a footprint survives intact until `C - F` lines
//!   are inserted, then goes at once; the exponential smooths that step.
//! - The footprint when a vCPU leaves is taken as full (its share of the cache): a slice too short
//!   to refill it is not remembered as a smaller footprint; the refill debt it leaves is paid in
//!   its next slices by the model.
//! - A running vCPU's insertion rate is fixed at its start (the co-runners it found then).
//! - VMs without a profile insert nothing (their work evicts no one's lines).
//! - A vCPU's first slice is neither charged (its cache counts as warm, as the model always
//!   assumed) nor counted as inserting its footprint.
//! - With `resume_refill` on, `perf/model.rs` no longer counts the vCPUs that took turns on a
//!   vCPU's own pCPU as its LLC co-runners; the co-runner estimate is then exact only for a vCPU
//!   that stayed on one pCPU over the sample interval.
//! - Only the scheduler's own pCPUs are counted: with hyperthreading on the two threads of a core
//!   share its L2 count; with it off the L2 is the pCPU's.

use crate::sim::{ns_f, Time};

/// The share of a footprint left after `inserted` lines went into a cache of `cache_lines`
/// lines under random replacement: `exp(-inserted / cache_lines)`.
#[inline]
pub fn surviving_share(inserted: f64, cache_lines: f64) -> f64 {
    if inserted <= 0.0 {
        1.0
    } else {
        (-inserted / cache_lines).exp()
    }
}

/// A vCPU's footprint on a cache of `cache_bytes` shared with `others` running vCPUs, in lines:
/// `min(ws, cache / (1 + others)) / line`.
#[inline]
pub fn footprint_lines(ws_bytes: u64, cache_bytes: u64, others: u32, line_bytes: u64) -> f64 {
    (ws_bytes as f64).min(cache_bytes as f64 / (1.0 + others as f64)) / line_bytes as f64
}

/// Per-VM figures the counting needs, from its profile (`perf/model.rs` builds them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmthProfile {
    /// working set, in bytes
    pub ws_bytes: u64,
    /// lines inserted into its core's L2 per ns of run (its LLC references)
    pub l2_lines_per_ns: f64,
    /// lines inserted into its LLC per ns of run, by the number of other vCPUs running on the
    /// LLC (its LLC misses); the last entry serves for more
    pub llc_lines_per_ns: Vec<f64>,
}

/// One level's caches (the cores' L2s, or the LLCs): cumulative lines inserted, kept as a line
/// in time (`lines` at `at`, growing at `rate`) so a start or stop settles it in O(1).
#[derive(Debug, Clone, Default)]
struct Level {
    lines: Vec<f64>,
    rate: Vec<f64>,
    at: Vec<Time>,
    running: Vec<u32>,
}

impl Level {
    fn new(n: usize) -> Self {
        Level { lines: vec![0.0; n], rate: vec![0.0; n], at: vec![0; n], running: vec![0; n] }
    }

    #[inline]
    fn settle(&mut self, c: usize, now: Time) {
        let at = self.at[c];
        if now > at {
            self.lines[c] += self.rate[c] * ns_f(now - at);
            self.at[c] = now;
        }
    }
}

/// The counting: per cache, lines inserted; per vCPU, where and when it left and what it
/// refilled on its returns. Built by the execution-speed model when `resume_refill` is on.
#[derive(Debug, Clone)]
pub struct CacheWarmth {
    /// per pCPU: its core's L2 index and its LLC index
    core_of: Vec<u32>,
    llc_of: Vec<u32>,
    l2_bytes: u64,
    llc_bytes: u64,
    line_bytes: u64,
    /// per VM (None: no profile, inserts nothing and is charged nothing)
    profiles: Vec<Option<WarmthProfile>>,
    l2: Level,
    llc: Level,
    /// per vCPU: the pCPU it last stopped on (`u32::MAX` before its first slice), its footprints
    /// then, the caches' counts then, and the rates it runs at now
    left_pcpu: Vec<u32>,
    left_fp: Vec<[f64; 2]>,
    mark: Vec<[f64; 2]>,
    rate: Vec<[f64; 2]>,
    /// per vCPU, cumulative: L2 lines refilled on returns
    pub evicted_l2_lines: Vec<f64>,
    /// per vCPU, cumulative: LLC lines refilled from memory on returns
    pub evicted_llc_lines: Vec<f64>,
    /// per vCPU, cumulative: starts on the pCPU or LLC it last ran on
    pub resumes: Vec<u64>,
    /// per vCPU: its VM
    vm_of: Vec<u32>,
}

impl CacheWarmth {
    /// Counting for pCPUs with these core and LLC indices, VMs with these profiles, and vCPUs of
    /// these VMs (`vm_of`).
    pub fn new(core_of: Vec<u32>, llc_of: Vec<u32>, caches: (u64, u64, u64), profiles: Vec<Option<WarmthProfile>>, vm_of: Vec<u32>) -> Self {
        let cores = core_of.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        let llcs = llc_of.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        let n = vm_of.len();
        CacheWarmth {
            core_of,
            llc_of,
            l2_bytes: caches.0,
            llc_bytes: caches.1,
            line_bytes: caches.2.max(1),
            profiles,
            l2: Level::new(cores),
            llc: Level::new(llcs),
            left_pcpu: vec![u32::MAX; n],
            left_fp: vec![[0.0; 2]; n],
            mark: vec![[0.0; 2]; n],
            rate: vec![[0.0; 2]; n],
            evicted_l2_lines: vec![0.0; n],
            evicted_llc_lines: vec![0.0; n],
            resumes: vec![0; n],
            vm_of,
        }
    }

    /// vCPU `v` starts a slice on pCPU `p` at `now`: charge what its caches lost since it left,
    /// count the lines it refills into them, and start counting its insertions.
    pub fn start(&mut self, p: u32, v: u32, now: Time) {
        let (vi, pi) = (v as usize, p as usize);
        let Some(prof) = self.profiles[self.vm_of[vi] as usize].as_ref() else { return };
        let (core, llc) = (self.core_of[pi] as usize, self.llc_of[pi] as usize);
        self.l2.settle(core, now);
        self.llc.settle(llc, now);
        let left = self.left_pcpu[vi];
        let first = left == u32::MAX;
        let same_core = !first && self.core_of[left as usize] as usize == core;
        let same_llc = !first && self.llc_of[left as usize] as usize == llc;
        // what it refills: on its own cache the evicted part of its footprint, elsewhere (a move,
        // charged by the model as a move) the whole of it
        let l2_fp = footprint_lines(prof.ws_bytes, self.l2_bytes, self.l2.running[core], self.line_bytes);
        let llc_fp = footprint_lines(prof.ws_bytes, self.llc_bytes, self.llc.running[llc], self.line_bytes);
        let l2_in = if same_core {
            let lost = self.left_fp[vi][0] * (1.0 - surviving_share(self.l2.lines[core] - self.mark[vi][0], self.l2_lines()));
            self.evicted_l2_lines[vi] += lost;
            lost
        } else {
            l2_fp
        };
        let llc_in = if same_llc {
            let lost = self.left_fp[vi][1] * (1.0 - surviving_share(self.llc.lines[llc] - self.mark[vi][1], self.llc_lines()));
            self.evicted_llc_lines[vi] += lost;
            lost
        } else {
            llc_fp
        };
        self.resumes[vi] += (same_core || same_llc) as u64;
        if !first {
            self.l2.lines[core] += l2_in;
            self.llc.lines[llc] += llc_in;
        }
        let k = (self.llc.running[llc] as usize).min(prof.llc_lines_per_ns.len().saturating_sub(1));
        let rate = [prof.l2_lines_per_ns, prof.llc_lines_per_ns.get(k).copied().unwrap_or(0.0)];
        self.l2.rate[core] += rate[0];
        self.llc.rate[llc] += rate[1];
        self.l2.running[core] += 1;
        self.llc.running[llc] += 1;
        self.rate[vi] = rate;
    }

    /// vCPU `v` stops its slice on pCPU `p` at `now`: its insertions end, and it remembers the
    /// caches' counts and its footprints on them.
    pub fn stop(&mut self, p: u32, v: u32, now: Time) {
        let (vi, pi) = (v as usize, p as usize);
        let Some(prof) = self.profiles[self.vm_of[vi] as usize].as_ref() else { return };
        let (core, llc) = (self.core_of[pi] as usize, self.llc_of[pi] as usize);
        self.l2.settle(core, now);
        self.llc.settle(llc, now);
        let rate = self.rate[vi];
        self.l2.rate[core] = (self.l2.rate[core] - rate[0]).max(0.0);
        self.llc.rate[llc] = (self.llc.rate[llc] - rate[1]).max(0.0);
        self.l2.running[core] -= 1;
        self.llc.running[llc] -= 1;
        if self.l2.running[core] == 0 {
            self.l2.rate[core] = 0.0;
        }
        if self.llc.running[llc] == 0 {
            self.llc.rate[llc] = 0.0;
        }
        self.rate[vi] = [0.0; 2];
        self.left_pcpu[vi] = p;
        self.mark[vi] = [self.l2.lines[core], self.llc.lines[llc]];
        self.left_fp[vi] = [
            footprint_lines(prof.ws_bytes, self.l2_bytes, self.l2.running[core], self.line_bytes),
            footprint_lines(prof.ws_bytes, self.llc_bytes, self.llc.running[llc], self.line_bytes),
        ];
    }

    fn l2_lines(&self) -> f64 {
        (self.l2_bytes / self.line_bytes).max(1) as f64
    }

    fn llc_lines(&self) -> f64 {
        (self.llc_bytes / self.line_bytes).max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    /// Two pCPUs on two cores of one LLC; VMs 0 and 1 with one vCPU each.
    fn two_cores(ws: u64, l2_rate: f64, llc_rate: f64) -> CacheWarmth {
        let prof = WarmthProfile { ws_bytes: ws, l2_lines_per_ns: l2_rate, llc_lines_per_ns: vec![llc_rate, llc_rate] };
        CacheWarmth::new(vec![0, 1], vec![0, 0], (256 << 10, 4 * MB, 64), vec![Some(prof.clone()), Some(prof)], vec![0, 1])
    }

    #[test]
    fn resuming_with_no_intervening_work_pays_nothing() {
        let mut w = two_cores(MB, 1.0, 0.1);
        w.start(0, 0, 0);
        w.stop(0, 0, 1_000_000);
        // nothing ran anywhere while it was away
        w.start(0, 0, 5_000_000);
        assert_eq!(w.evicted_l2_lines[0], 0.0);
        assert_eq!(w.evicted_llc_lines[0], 0.0);
        assert_eq!(w.resumes[0], 1);
    }

    #[test]
    fn a_resume_after_a_co_runner_pays_the_evicted_share_of_its_footprint() {
        // vCPU 0 runs, then vCPU 1 runs X = 100 us on the same pCPU (inserting 0.02 L2 lines and
        // 0.005 LLC lines per ns), then vCPU 0 returns. Worked by hand:
        //   L2: C = 256 KiB / 64 = 4096 lines, F = min(1 MiB, 256 KiB) / 64 = 4096 lines (alone
        //       on its core when it left), n = 100_000 x 0.02 = 2000 (vCPU 1's first slice:
        //       it brings no refill, it had never run) -> 4096 x (1 - exp(-0.48828)) = 4096 x 0.38631 = 1582.37
        //   LLC: C = 65536, F = 1 MiB / 64 = 16384, n = 100_000 x 0.005 = 500
        //        -> 16384 x (1 - exp(-0.0076294)) = 16384 x 0.0076004 = 124.52
        let mut w = two_cores(MB, 0.02, 0.005);
        w.start(0, 0, 0);
        w.stop(0, 0, 1_000_000);
        w.start(0, 1, 1_000_000);
        w.stop(0, 1, 1_100_000);
        w.start(0, 0, 1_100_000);
        let l2 = 4096.0 * (1.0 - (-2000.0f64 / 4096.0).exp());
        let llc = 16384.0 * (1.0 - (-500.0f64 / 65536.0).exp());
        assert!((w.evicted_l2_lines[0] - l2).abs() < 1e-6, "{}", w.evicted_l2_lines[0]);
        assert!((w.evicted_llc_lines[0] - llc).abs() < 1e-6, "{}", w.evicted_llc_lines[0]);
        assert!((l2 - 1582.37).abs() < 0.01 && (llc - 124.52).abs() < 0.01);
    }

    #[test]
    fn work_on_the_other_core_evicts_the_llc_share_only() {
        // vCPU 1 runs 100 us on the other core of the LLC: the L2 of vCPU 0's core is untouched
        let mut w = two_cores(MB, 0.02, 0.005);
        w.start(0, 0, 0);
        w.stop(0, 0, 1_000_000);
        w.start(1, 1, 1_000_000);
        w.stop(1, 1, 1_100_000);
        w.start(0, 0, 1_200_000);
        assert_eq!(w.evicted_l2_lines[0], 0.0);
        let llc = 16384.0 * (1.0 - (-500.0f64 / 65536.0).exp());
        assert!((w.evicted_llc_lines[0] - llc).abs() < 1e-6);
    }

    #[test]
    fn a_returning_co_runner_s_refill_evicts_too() {
        // vCPU 1 ran before (its LLC footprint 16384 lines); it returns after vCPU 0 ran 1 ms
        // (5000 LLC lines inserted) and refills 16384 (1 - exp(-5000/65536)) lines, which count
        // against vCPU 0 with its own 100 us of misses (500)
        let mut w = two_cores(MB, 0.0, 0.005);
        w.start(1, 1, 0);
        w.stop(1, 1, 0);
        w.start(0, 0, 0);
        w.stop(0, 0, 1_000_000);
        w.start(1, 1, 1_000_000);
        let refill1 = 16384.0 * (1.0 - (-5000.0f64 / 65536.0).exp());
        assert!((w.evicted_llc_lines[1] - refill1).abs() < 1e-6);
        w.stop(1, 1, 1_100_000);
        w.start(0, 0, 1_100_000);
        let lost0 = 16384.0 * (1.0 - (-(refill1 + 500.0) / 65536.0).exp());
        assert!((w.evicted_llc_lines[0] - lost0).abs() < 1e-6);
    }

    #[test]
    fn a_move_is_not_charged_here() {
        let prof = WarmthProfile { ws_bytes: MB, l2_lines_per_ns: 0.02, llc_lines_per_ns: vec![0.005] };
        let mut w = CacheWarmth::new(vec![0, 1], vec![0, 1], (256 << 10, 4 * MB, 64), vec![Some(prof)], vec![0]);
        w.start(0, 0, 0);
        w.stop(0, 0, 1_000_000);
        w.start(1, 0, 2_000_000);
        assert_eq!((w.evicted_l2_lines[0], w.evicted_llc_lines[0], w.resumes[0]), (0.0, 0.0, 0));
    }
}
