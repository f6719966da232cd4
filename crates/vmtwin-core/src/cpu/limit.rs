//! CPU limits as a token bucket per VM.
//!
//! A limit of `L` MHz on a host whose cores run at `f` MHz lets the VM (or every VM below a
//! resource pool) consume `L/f` pCPU-ns per ns of wall time. Tokens (pCPU-ns) accrue at that
//! rate up to a depth of `limit_burst_ns` of accrual, and every ns a vCPU bound by the bucket runs
//! spends one token. A bucket starts holding one turn (`limit_min_slice_ns` of CPU), not full, so
//! a limited VM does not start with a burst above its limit. When the bucket holds less than a
//! turn for each vCPU that wants to run under it, its VMs are throttled: their ready vCPUs wait
//! in the MLMTD state (esxtop %MLMTD, counted inside %RDY) until the bucket refills to that
//! level (research/cpu.md C5). So a VM held at a 25% limit runs in turns of 1 ms (the default)
//! and waits 3 ms between them. The
//! vCPUs a bucket binds share its tokens in proportion to their weights (`sched.rs`), so inside a
//! limited pool CPU is split by the children's shares and reservations. A throttled vCPU may
//! still run on a pCPU that would otherwise idle, into at most [`LIMIT_BORROW_NS`] of debt.
//! Slices already running may overdraw by at most one slice each; any debt is repaid before
//! the VM runs again, so the long-run rate never exceeds the limit.
//!
//! A VM's share of a binding pool limit (`sched.rs`) binds only while the pool's bucket is
//! scarce, holding less than [`SHARE_SPLIT_BELOW`] of its depth. Past that the pool's children
//! are leaving its tokens unused, and a full bucket would drop them. A child its share holds
//! back then runs on (the pool's bucket still binds it), so a pool whose children want more than
//! its limit delivers the limit. Without this a child read as entitled to more than it uses (its
//! demand estimate counts its READY time) kept the rest of the limit from its backlogged
//! siblings: a fixed pool at a 189-point limit delivered 182.
//!
//! # Tunables
//! In [`super::CpuSchedParams`]: `limit_burst_ns` (bucket depth as wall time at the limit rate,
//! default 100 ms, C5) and `limit_min_slice_ns` (the turn a throttled VM waits to earn per
//! wanting vCPU, default 1 ms: chosen; Linux CFS's bandwidth slice is 5 ms, ESX's own is not
//! documented; coarser turns cost max-min accuracy, see the parameter). [`LIMIT_BORROW_NS`]
//! (1 ms, chosen); [`SHARE_SPLIT_BELOW`] (1/2 of the depth, chosen).
//!
//! # Counters
//! %MLMTD per vCPU and VM (time held back by the limit), sampled by `metrics/`.
//!
//! # Known gaps
//! - Over a window of length `T` a bucket lets through at most `rate x T` plus its depth: ESX's
//!   own averaging window for limits is not documented in the seeds.

use crate::sim::{ceil_f, min_f, ns_f, Time, NS_PER_MS};

/// Most debt a throttled vCPU may run into on a pCPU that would otherwise idle, in pCPU-ns. 1 ms:
/// chosen, enough to fill the gaps between limited VMs' refills, small enough that a limit is
/// never exceeded by more than this over any window.
pub const LIMIT_BORROW_NS: f64 = NS_PER_MS as f64;

/// Fraction of a pool bucket's depth below which its children's shares of its limit bind. 1/2:
/// chosen, well below full, so that the children held by their shares have half a depth's worth
/// of accrual (50 ms at the default depth) to start before the bucket drops tokens, and well
/// above empty, so that a scarce pool is split by its children's shares.
pub const SHARE_SPLIT_BELOW: f64 = 0.5;

/// One VM's limit bucket.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    /// accrual rate in pCPU-ns per ns (limit MHz / core MHz)
    pub rate: f64,
    /// maximum tokens, pCPU-ns
    pub depth: f64,
    /// tokens now (may be negative: debt of slices that overran)
    pub tokens: f64,
    /// time of the last accrual
    pub updated: Time,
    /// tokens a throttled bucket must reach before its vCPUs run again, pCPU-ns:
    /// `min_slice` for each vCPU that wants to run under it, at most the depth
    pub resume: f64,
    /// the least CPU a throttled VM must have earned before it runs again, pCPU-ns per wanting
    /// vCPU (`CpuSchedParams::limit_min_slice_ns`)
    pub min_slice: f64,
}

impl TokenBucket {
    /// A bucket for `limit_mhz` on cores of `core_mhz`, holding just enough to run: one turn of
    /// `min_slice_ns`.
    pub fn new(limit_mhz: f64, core_mhz: u64, burst_ns: Time, min_slice_ns: Time, now: Time) -> Self {
        let rate = limit_mhz / core_mhz as f64;
        let min_slice = min_slice_ns as f64;
        let depth = (rate * burst_ns as f64).max(min_slice);
        TokenBucket { rate, depth, tokens: min_slice, updated: now, resume: min_slice, min_slice }
    }

    /// Change the limit to `limit_mhz` at `now`, keeping the tokens earned so far (up to the new
    /// depth).
    pub fn set_limit(&mut self, limit_mhz: f64, core_mhz: u64, burst_ns: Time, now: Time) {
        self.refill(now);
        self.rate = limit_mhz / core_mhz as f64;
        self.depth = (self.rate * burst_ns as f64).max(self.min_slice);
        self.tokens = self.tokens.min(self.depth);
        self.resume = self.resume.min(self.depth);
    }

    /// Tokens there would be at `now`, without accruing them.
    #[inline]
    pub fn tokens_at(&self, now: Time) -> f64 {
        self.capped(self.tokens + ns_f(now.saturating_sub(self.updated)) * self.rate)
    }

    /// Accrue tokens up to `now`.
    #[inline]
    pub fn refill(&mut self, now: Time) {
        let dt = ns_f(now.saturating_sub(self.updated));
        self.tokens = self.capped(self.tokens + dt * self.rate);
        self.updated = now;
    }

    /// `x.min(self.depth)` by [`min_f`]: the depth is never NaN (`new` takes it as a `max` with
    /// a number), and this is on the refill of every start and stop of a limited vCPU.
    #[inline(always)]
    fn capped(&self, x: f64) -> f64 {
        min_f(x, self.depth)
    }

    /// `active` vCPUs want to run under this bucket: a throttled bucket waits until each can
    /// have a turn of at least `min_slice` (so a pool limit over many vCPUs is not served in
    /// slivers, one event each).
    #[inline]
    pub fn set_active(&mut self, active: u32) {
        self.resume = (self.min_slice * f64::from(active.max(1))).min(self.depth);
    }

    /// True when the bucket is scarce: its children's shares of it bind ([`SHARE_SPLIT_BELOW`]).
    #[inline]
    pub fn scarce(&self) -> bool {
        self.tokens < SHARE_SPLIT_BELOW * self.depth
    }

    /// True when the bucket's vCPUs may not start a slice.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.tokens < self.resume
    }

    /// Wall time until the bucket holds `resume` tokens again (at least 1 ns).
    pub fn time_to_resume(&self) -> Time {
        if self.rate <= 0.0 {
            return Time::MAX;
        }
        (ceil_f((self.resume - self.tokens) / self.rate) as Time).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_caps_at_depth() {
        let mut b = TokenBucket::new(1300.0, 2600, 100 * NS_PER_MS, NS_PER_MS, 0);
        b.tokens = 0.0;
        b.refill(10 * 100 * NS_PER_MS);
        assert_eq!(b.tokens, b.depth);
        assert_eq!(b.depth, 0.5 * 100.0 * NS_PER_MS as f64);
    }

    #[test]
    fn scarce_below_half_its_depth() {
        let mut b = TokenBucket::new(2000.0, 2000, 100 * NS_PER_MS, NS_PER_MS, 0);
        assert!(b.scarce());
        b.tokens = 0.0;
        b.refill(49 * NS_PER_MS);
        assert!(b.scarce());
        b.refill(51 * NS_PER_MS);
        assert!(!b.scarce());
    }

    #[test]
    fn resume_time_repays_debt() {
        let mut b = TokenBucket::new(1300.0, 2600, 100 * NS_PER_MS, NS_PER_MS, 0);
        b.tokens = -b.min_slice;
        // needs 2 ms of tokens at half rate = 4 ms
        assert_eq!(b.time_to_resume(), 4 * NS_PER_MS);
        b.refill(4 * NS_PER_MS);
        assert!(!b.exhausted());
    }
}
