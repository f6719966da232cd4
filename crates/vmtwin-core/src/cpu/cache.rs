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

/// Beyond this many cache sizes of insertions a footprint is taken as gone: `exp(-36)` is 2e-16,
/// below an f64's resolution of the footprint (saves the `exp` on most returns under load).
const GONE_AFTER_CACHES: f64 = 36.0;

/// The share of a footprint left after `x` cache sizes of lines went into the cache under random
/// replacement: `exp(-x)`, 1 for `x <= 0`, 0 beyond [`GONE_AFTER_CACHES`].
#[inline]
fn surviving(x: f64) -> f64 {
    if x <= 0.0 {
        1.0
    } else if x >= GONE_AFTER_CACHES {
        0.0
    } else {
        (-x).exp()
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

/// One cache (a core's L2 or an LLC): cumulative lines inserted, kept as a line in time (`lines`
/// at `at`, growing at `rate`) so that a start or stop settles it in O(1).
#[derive(Debug, Clone, Copy, Default)]
struct Cache {
    lines: f64,
    rate: f64,
    at: Time,
    running: u32,
}

impl Cache {
    #[inline]
    fn settle(&mut self, now: Time) {
        if now > self.at {
            self.lines += self.rate * ns_f(now - self.at);
            self.at = now;
        }
    }
}

/// A vCPU's side: where it left, the caches' counts then, its footprints then, the rates it
/// inserts at while it runs, and its VM's row of the tables.
#[derive(Debug, Clone, Copy)]
struct Vcpu {
    /// its VM's index into the per-VM tables, `u32::MAX` without a profile
    vm: u32,
    /// the pCPU it last stopped on, `u32::MAX` before its first slice
    left: u32,
    mark: [f64; 2],
    fp: [f64; 2],
    rate: [f64; 2],
}

/// The counting: per cache, lines inserted; per vCPU, where and when it left and what it
/// refilled on its returns. Built by the execution-speed model when `resume_refill` is on.
#[derive(Debug, Clone)]
pub struct CacheWarmth {
    /// per pCPU: its core's L2 and its LLC, as indices into `caches` (the L2s first)
    cache_of: Vec<[u32; 2]>,
    caches: Vec<Cache>,
    /// 1 / (cache size in lines), L2 and LLC
    inv_lines: [f64; 2],
    /// per VM with a profile, by the number `k` of others running on the cache (`k` up to
    /// `per_core - 1` for an L2 and `per_llc - 1` for an LLC, the last entry serving for more):
    /// footprints in lines, and insertion rates in lines per ns (an L2's rate does not depend on
    /// `k`)
    l2_fp: Vec<f64>,
    llc_fp: Vec<f64>,
    l2_rate: Vec<f64>,
    llc_rate: Vec<f64>,
    per_core: usize,
    per_llc: usize,
    vcpus: Vec<Vcpu>,
    /// per vCPU, cumulative: L2 lines refilled on returns
    pub evicted_l2_lines: Vec<f64>,
    /// per vCPU, cumulative: LLC lines refilled from memory on returns
    pub evicted_llc_lines: Vec<f64>,
    /// per vCPU, cumulative: starts on the core or LLC it last ran on
    pub resumes: Vec<u64>,
}

impl CacheWarmth {
    /// Counting for pCPUs with these core and LLC indices, caches of `(l2, llc, line)` bytes, VMs
    /// with these profiles, and vCPUs of these VMs (`vm_of`).
    pub fn new(core_of: Vec<u32>, llc_of: Vec<u32>, caches: (u64, u64, u64), profiles: Vec<Option<WarmthProfile>>, vm_of: Vec<u32>) -> Self {
        let (l2_bytes, llc_bytes, line) = (caches.0, caches.1, caches.2.max(1));
        let cores = core_of.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        let llcs = llc_of.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        let count = |of: &[u32], c: u32| of.iter().filter(|&&x| x == c).count();
        let per_core = core_of.iter().map(|&c| count(&core_of, c)).max().unwrap_or(1).max(1);
        let per_llc = llc_of.iter().map(|&c| count(&llc_of, c)).max().unwrap_or(1).max(1);
        let cache_of = core_of.iter().zip(&llc_of).map(|(&c, &l)| [c, cores as u32 + l]).collect();
        let mut w = CacheWarmth {
            cache_of,
            caches: vec![Cache::default(); cores + llcs],
            inv_lines: [1.0 / (l2_bytes / line).max(1) as f64, 1.0 / (llc_bytes / line).max(1) as f64],
            l2_fp: Vec::new(),
            llc_fp: Vec::new(),
            l2_rate: Vec::new(),
            llc_rate: Vec::new(),
            per_core,
            per_llc,
            vcpus: Vec::new(),
            evicted_l2_lines: vec![0.0; vm_of.len()],
            evicted_llc_lines: vec![0.0; vm_of.len()],
            resumes: vec![0; vm_of.len()],
        };
        let mut row = vec![u32::MAX; profiles.len()];
        for (vm, p) in profiles.iter().enumerate() {
            let Some(p) = p else { continue };
            row[vm] = w.l2_rate.len() as u32;
            w.l2_rate.push(p.l2_lines_per_ns);
            for k in 0..per_core {
                w.l2_fp.push(footprint_lines(p.ws_bytes, l2_bytes, k as u32, line));
            }
            for k in 0..per_llc {
                w.llc_fp.push(footprint_lines(p.ws_bytes, llc_bytes, k as u32, line));
                let last = p.llc_lines_per_ns.len().saturating_sub(1);
                w.llc_rate.push(p.llc_lines_per_ns.get(k.min(last)).copied().unwrap_or(0.0));
            }
        }
        w.vcpus = vm_of.iter().map(|&vm| Vcpu { vm: row[vm as usize], left: u32::MAX, mark: [0.0; 2], fp: [0.0; 2], rate: [0.0; 2] }).collect();
        w
    }

    /// vCPU `v` starts a slice on pCPU `p` at `now`: charge what its caches lost since it left,
    /// count the lines it refills into them, and start counting its insertions.
    #[inline]
    pub fn start(&mut self, p: u32, v: u32, now: Time) {
        let vc = self.vcpus[v as usize];
        if vc.vm == u32::MAX {
            return;
        }
        let (row, [l2, llc]) = (vc.vm as usize, self.cache_of[p as usize]);
        let (l2, llc) = (l2 as usize, llc as usize);
        let k2 = (self.caches[l2].running as usize).min(self.per_core - 1);
        let kl = (self.caches[llc].running as usize).min(self.per_llc - 1);
        let rate = [self.l2_rate[row], self.llc_rate[row * self.per_llc + kl]];
        if vc.left != u32::MAX {
            let [left_l2, left_llc] = self.cache_of[vc.left as usize];
            // what it refills: on its own cache the evicted part of its footprint, elsewhere (a
            // move, charged by the model as a move) the whole of it
            let c = &mut self.caches[l2];
            c.settle(now);
            let into_l2 = if left_l2 as usize == l2 {
                let lost = vc.fp[0] * (1.0 - surviving((c.lines - vc.mark[0]) * self.inv_lines[0]));
                self.evicted_l2_lines[v as usize] += lost;
                self.resumes[v as usize] += 1;
                lost
            } else {
                self.l2_fp[row * self.per_core + k2]
            };
            c.lines += into_l2;
            let c = &mut self.caches[llc];
            c.settle(now);
            let into_llc = if left_llc as usize == llc {
                let lost = vc.fp[1] * (1.0 - surviving((c.lines - vc.mark[1]) * self.inv_lines[1]));
                self.evicted_llc_lines[v as usize] += lost;
                self.resumes[v as usize] += (left_l2 as usize != l2) as u64;
                lost
            } else {
                self.llc_fp[row * self.per_llc + kl]
            };
            c.lines += into_llc;
        } else {
            self.caches[l2].settle(now);
            self.caches[llc].settle(now);
        }
        let c = &mut self.caches[l2];
        c.rate += rate[0];
        c.running += 1;
        let c = &mut self.caches[llc];
        c.rate += rate[1];
        c.running += 1;
        self.vcpus[v as usize].rate = rate;
    }

    /// vCPU `v` stops its slice on pCPU `p` at `now`: its insertions end, and it remembers the
    /// caches' counts and its footprints on them.
    #[inline]
    pub fn stop(&mut self, p: u32, v: u32, now: Time) {
        let vc = &mut self.vcpus[v as usize];
        if vc.vm == u32::MAX {
            return;
        }
        let row = vc.vm as usize;
        let [l2, llc] = self.cache_of[p as usize];
        let mut fp = [0.0; 2];
        for (i, (c, (per, tab))) in [l2, llc].into_iter().zip([(self.per_core, &self.l2_fp), (self.per_llc, &self.llc_fp)]).enumerate() {
            let c = &mut self.caches[c as usize];
            c.settle(now);
            c.running -= 1;
            // exactly 0 once nobody runs there (no drift from adding and taking rates)
            c.rate = if c.running == 0 { 0.0 } else { (c.rate - vc.rate[i]).max(0.0) };
            vc.mark[i] = c.lines;
            fp[i] = tab[row * per + (c.running as usize).min(per - 1)];
        }
        vc.fp = fp;
        vc.rate = [0.0; 2];
        vc.left = p;
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
