//! CPU limits as a token bucket per VM.
//!
//! A limit of `L` MHz on a host whose cores run at `f` MHz lets the VM (or every VM below a
//! resource pool) consume `L/f` pCPU-ns per ns of wall time. Tokens (pCPU-ns) accrue at that
//! rate up to a depth of `limit_burst_ns` of accrual, and every ns a vCPU bound by the bucket runs
//! spends one token. A bucket starts holding one turn (`limit_min_slice_ns` of CPU), not full, so
//! a limited VM does not start with a burst above its limit. When the bucket holds less than a
//! turn for each vCPU that wants to run under it, its VMs are throttled: their ready vCPUs wait
//! in the MLMTD state (esxtop %MLMTD, counted inside %RDY) until the bucket refills to that
//! level (research/cpu.md C5). So a VM held at a 25% limit runs in turns of 5 ms (the default)
//! and waits 15 ms between them. The
//! vCPUs a bucket binds share its tokens in proportion to their weights (`sched.rs`), so inside a
//! limited pool CPU is split by the children's shares and reservations. A throttled vCPU may
//! still run on a pCPU that would otherwise idle, into at most `limit_borrow_ns` of debt; and a
//! throttled vCPU of a VM at its own limit, on a pCPU that a vCPU of a VM held back below it
//! would take with no other VM's vCPU waiting, once that vCPU has run its entitlement since the
//! last update less one such loan (`sched.rs`, `borrower`, `gap_unowed`: it would fill the gaps
//! the turns leave only as spare capacity beyond its entitlement).
//! Slices already running may overdraw by at most one slice each; any debt is repaid before
//! the VM runs again, so the long-run rate never exceeds the limit.
//!
//! A VM's share of a binding pool limit (`sched.rs`) binds only while the pool's bucket is
//! scarce, holding less than `limit_share_split_below` of its depth (the share split). Past that the pool's children
//! are leaving its tokens unused, and a full bucket would drop them. A child its share holds
//! back then runs on (the pool's bucket still binds it, and so does its own limit: while the
//! share is the tighter of the two, the VM's own limit is kept in a bucket apart, which never
//! yields), so a pool whose children want more than its limit delivers the limit. Unless a
//! sibling has a vCPU queued READY with its own share still to spend (`sibling_waits`): that
//! one is not leaving the tokens unused but waiting for a pCPU, and a yield would hand its
//! share to the child that is first in the queues. Without this
//! a child read as entitled to more than it uses (its demand estimate counts its READY time)
//! kept the rest of the limit from its backlogged siblings: a fixed pool at a 189-point limit
//! delivered 182. While the split binds, a released child does not preempt another child of the
//! pool (`sched.rs`, `place_with`): the split is the share buckets', not the fair clock's.
//!
//! A throttled bucket's resume level is at most half the share split (a quarter of its depth at
//! the default; derived, [`BucketRules::resume_below`]); past
//! that each vCPU's turn is shorter than `limit_min_slice_ns`. A slice is charged when it ends,
//! so while the turns a bucket resumed for run, it reads their accrual on top of the tokens they
//! have already used: up to twice the resume level, since a limit binds only below one pCPU per
//! wanting vCPU. Resuming at the depth (a coarse turn times many vCPUs, or a low limit) dropped
//! that accrual at the cap: a 4-vCPU VM limited to 334 MHz with 5 ms turns got 15.88% for its
//! 16.70%. And a pool bucket resuming at half its depth or more was not scarce while its
//! children ran, so their shares stopped splitting it (a 7-vCPU VM got 3.6% for its 64.4%).
//!
//! # Dormant pool limits
//! A pool limit far from binding still cost every start, stop and look at a vCPU below it a
//! refill, a test, an allowance and a charge (bench-mixed's three `dev` pool limits, which never
//! bind, were 8% of its time). So a pool limiter sleeps while nothing can read its bucket. At
//! each look (`LimitDormant`, `sched.rs`: `look_dormancy`) it takes `h`, the time its vCPUs would
//! need to drain the bucket to the share split: the tokens above `limit_share_split_below` of the
//! depth, less what running slices have run and not yet been charged, over `width - rate`, where
//! `width` is the most of its vCPUs that can run at once (their count, at most the pCPUs'). For
//! `h` the bucket stays above the share split however its vCPUs run, so no throttle (below
//! half of it), share split, yielding share bucket or release shield can depend on it; and
//! its slice allowance binds no slice there, which is checked at each entitlement update (each
//! vCPU's part of the tokens at the split, with every vCPU below wanting to run, at least its
//! slice; if not, the pool never sleeps until the next update). If `h` is at least
//! `limit_min_slice_ns` the limiter sleeps for `h`, at most `limit_dormant_max` of the burst: its
//! bucket is out of every walk, its VMs that no other bucket binds are not `limited`, and
//! nothing is charged at their stops. At its next look the bucket is charged in bulk: the accrual
//! since it slept less the RUN time its vCPUs were not charged for, capped at the depth once;
//! then it sleeps again or wakes. Every pool limiter is looked at in the same look, one pass over
//! the VMs below them all, at the soonest of their `h` (an awake pool's: `limit_dormant_max` of
//! the burst): a pool settled before its own `h` ran out only sleeps again sooner, and one event
//! stands for them all (bench-mixed's three `dev` pools: 466 K events over the hour when each
//! pool had its own, 180 K together and 7% less time: a rare event's mispredictions and
//! instruction-cache misses cost more than its instructions). Every dormant pool wakes at the entitlement
//! update (shares, slices and share limits change there) and is looked at again just after it.
//! While a pool sleeps the scheduler decides what it would with the per-stop
//! bucket, so only the bucket's value after a dormancy can differ: per-stop charges cap at the
//! depth continuously, the bulk charge once, so it can hold more, by at most one dormancy's
//! accrual (`rate x h`, at most `limit_dormant_max` of the depth), and a pool that binds later may deliver
//! that much more once. The window bound (known gaps) becomes `rate x (T + 2 h_max)` plus the
//! depth: a dormancy at either end of the window counts whole, and a settled bucket is never
//! below the share split. Cost: one event every `h` (bench-mixed: 20 ms, its sandbox pool's)
//! with a pass over the pools' vCPUs.
//!
//! # Tunables
//! In [`super::CpuSchedParams`]: `limit_burst_ns` (bucket depth as wall time at the limit rate,
//! default 100 ms, C5), `limit_min_slice_ns` (the turn a throttled VM waits to earn per
//! wanting vCPU, default 5 ms: Linux CFS's bandwidth slice; ESX's own is not documented, see
//! the parameter), `limit_borrow_ns` (1 ms, chosen), `limit_share_split_below` (1/2 of the
//! depth, chosen; the resume cap is half of it, derived) and `limit_dormant_max` (1/4 of the
//! burst, chosen). The scheduler keeps the first four as floats ([`BucketRules`]) for the
//! buckets' tests.
//!
//! # Counters
//! %MLMTD per vCPU and VM (time held back by the limit), sampled by `metrics/`.
//!
//! # Known gaps
//! - Over a window of length `T` a bucket lets through at most `rate x T` plus its depth (a
//!   pool's, with dormancy: `rate x (T + 2 h_max)` plus its depth, half a depth more): ESX's
//!   own averaging window for limits is not documented in the seeds.
//! - A dormant pool's bucket is charged in bulk from its vCPUs' RUN time: under hyperthreading
//!   that is what `stop_bound` charges too (wall ns of RUN), so nothing differs there.

use crate::sim::{ceil_time, min_f, ns_f, Time};

/// What every limit bucket of a scheduler shares, from its parameters
/// ([`super::CpuSchedParams`]: `limit_burst_ns`, `limit_min_slice_ns`, `limit_borrow_ns`,
/// `limit_share_split_below`), kept by the scheduler as floats. Passed to the bucket's tests
/// rather than kept in each bucket: a bucket and the flags every limit walk reads share one
/// cache line (`sched.rs`, `Limiter`), and it has no room for more.
#[derive(Debug, Clone, Copy)]
pub struct BucketRules {
    /// depth as wall time at the limit rate, ns
    pub burst_ns: Time,
    /// the turn per wanting vCPU, ns of CPU
    pub min_slice_ns: Time,
    /// most debt a held vCPU may run into on a pCPU that would otherwise idle, pCPU-ns
    pub borrow: f64,
    /// fraction of the depth below which a pool's children's shares of its limit bind
    pub split_below: f64,
    /// most a throttled bucket's resume level may be, as a fraction of its depth: half of
    /// `split_below`. Derived, not chosen: a bucket is charged for a slice when the slice
    /// ends, so while the turns it resumed for run it reads their accrual on top of tokens they
    /// have already used. That accrual is less than the turns themselves (a limit binds only
    /// below one pCPU per wanting vCPU), so the reading peaks under twice the resume level,
    /// which this keeps below the share split (a pool at its limit stays scarce, split by its
    /// children's shares) and below the depth (no accrual dropped at the cap while the turns
    /// run).
    pub resume_below: f64,
}

impl BucketRules {
    /// The rules of `p`.
    pub fn new(p: &super::CpuSchedParams) -> Self {
        BucketRules {
            burst_ns: p.limit_burst_ns,
            min_slice_ns: p.limit_min_slice_ns,
            borrow: ns_f(p.limit_borrow_ns),
            split_below: p.limit_share_split_below,
            resume_below: p.limit_share_split_below / 2.0,
        }
    }
}

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
    /// `min_slice` for each vCPU that wants to run under it, at most
    /// [`BucketRules::resume_below`] of the depth
    pub resume: f64,
    /// the least CPU a throttled VM must have earned before it runs again, pCPU-ns per wanting
    /// vCPU (`CpuSchedParams::limit_min_slice_ns`)
    pub min_slice: f64,
}

impl TokenBucket {
    /// A bucket for `limit_mhz` on cores of `core_mhz`, holding just enough to run: one turn of
    /// `rules.min_slice_ns`.
    pub fn new(limit_mhz: f64, core_mhz: u64, rules: &BucketRules, now: Time) -> Self {
        let rate = limit_mhz / core_mhz as f64;
        let min_slice = rules.min_slice_ns as f64;
        let depth = (rate * rules.burst_ns as f64).max(min_slice);
        let mut b = TokenBucket { rate, depth, tokens: min_slice, updated: now, resume: min_slice, min_slice };
        b.set_active(0, rules);
        b
    }

    /// Change the limit to `limit_mhz` at `now`, keeping the tokens earned so far (up to the new
    /// depth); `active` vCPUs want to run under it.
    pub fn set_limit(&mut self, limit_mhz: f64, core_mhz: u64, rules: &BucketRules, active: u32, now: Time) {
        self.refill(now);
        self.rate = limit_mhz / core_mhz as f64;
        self.depth = (self.rate * rules.burst_ns as f64).max(self.min_slice);
        self.tokens = self.tokens.min(self.depth);
        self.set_active(active, rules);
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

    /// A dormant pool bucket's bulk charge at `now` (`limit.rs`, dormant pool limits): the
    /// accrual since `updated` less `ran_ns` of RUN time its vCPUs were not charged for, capped
    /// at the depth once (per-stop charges cap continuously).
    #[inline]
    pub fn charge_bulk(&mut self, now: Time, ran_ns: u64) {
        let accrued = ns_f(now - self.updated) * self.rate;
        self.tokens = min_f(self.tokens + accrued - ns_f(ran_ns), self.depth);
        self.updated = now;
    }

    /// `x.min(self.depth)` by [`min_f`]: the depth is never NaN (`new` takes it as a `max` with
    /// a number), and this is on the refill of every start and stop of a limited vCPU.
    #[inline(always)]
    fn capped(&self, x: f64) -> f64 {
        min_f(x, self.depth)
    }

    /// `active` vCPUs want to run under this bucket: a throttled bucket waits until each can
    /// have a turn of `min_slice` (so a pool limit over many vCPUs is not served in slivers, one
    /// event each), or until it holds [`BucketRules::resume_below`] of its depth, when the turns
    /// are shorter.
    #[inline]
    pub fn set_active(&mut self, active: u32, rules: &BucketRules) {
        self.resume = min_f(self.min_slice * f64::from(active.max(1)), rules.resume_below * self.depth);
    }

    /// The share split in tokens: [`BucketRules::split_below`] of the depth.
    #[inline]
    pub fn split_floor(&self, rules: &BucketRules) -> f64 {
        rules.split_below * self.depth
    }

    /// True when the bucket is scarce: its children's shares of it bind (below the share split).
    #[inline]
    pub fn scarce(&self, rules: &BucketRules) -> bool {
        self.tokens < self.split_floor(rules)
    }

    /// [`Self::scarce`] as the bucket would read at `now`, without accruing.
    #[inline]
    pub fn scarce_at(&self, now: Time, rules: &BucketRules) -> bool {
        self.tokens_at(now) < self.split_floor(rules)
    }

    /// The tokens a starting slice may spend: those held, with [`BucketRules::borrow`] more when
    /// the bucket is exhausted (a vCPU started from a held list on a pCPU that would otherwise
    /// idle).
    #[inline(always)]
    pub fn spendable(&self, rules: &BucketRules) -> f64 {
        if self.exhausted() {
            self.tokens + rules.borrow
        } else {
            self.tokens
        }
    }

    /// True when the bucket's vCPUs may not start a slice.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.tokens < self.resume
    }

    /// [`Self::exhausted`] as the bucket would read at `now`, without accruing.
    #[inline]
    pub fn exhausted_at(&self, now: Time) -> bool {
        self.tokens_at(now) < self.resume
    }

    /// Wall time until the bucket holds `resume` tokens again (at least 1 ns).
    pub fn time_to_resume(&self) -> Time {
        if self.rate <= 0.0 {
            return Time::MAX;
        }
        ceil_time((self.resume - self.tokens) / self.rate).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuSchedParams;
    use crate::sim::NS_PER_MS;

    fn rules(burst_ns: Time, min_slice_ns: Time) -> BucketRules {
        BucketRules { burst_ns, min_slice_ns, ..BucketRules::new(&CpuSchedParams::default()) }
    }

    #[test]
    fn refill_caps_at_depth() {
        let mut b = TokenBucket::new(1300.0, 2600, &rules(100 * NS_PER_MS, NS_PER_MS), 0);
        b.tokens = 0.0;
        b.refill(10 * 100 * NS_PER_MS);
        assert_eq!(b.tokens, b.depth);
        assert_eq!(b.depth, 0.5 * 100.0 * NS_PER_MS as f64);
    }

    #[test]
    fn scarce_below_half_its_depth() {
        let r = rules(100 * NS_PER_MS, NS_PER_MS);
        let mut b = TokenBucket::new(2000.0, 2000, &r, 0);
        assert!(b.scarce(&r));
        b.tokens = 0.0;
        b.refill(49 * NS_PER_MS);
        assert!(b.scarce(&r));
        b.refill(51 * NS_PER_MS);
        assert!(!b.scarce(&r));
    }

    #[test]
    fn the_share_split_follows_its_parameter() {
        // at 0.8 of a 100 ms depth the bucket is scarce up to 80 ms, and resumes at most at 40
        let r = BucketRules::new(&CpuSchedParams { limit_share_split_below: 0.8, ..CpuSchedParams::default() });
        let mut b = TokenBucket::new(2000.0, 2000, &r, 0);
        b.tokens = 0.0;
        b.refill(79 * NS_PER_MS);
        assert!(b.scarce(&r));
        b.refill(81 * NS_PER_MS);
        assert!(!b.scarce(&r));
        b.set_active(14, &r);
        assert_eq!(b.resume, 40.0 * NS_PER_MS as f64);
    }

    #[test]
    fn resume_stays_under_a_quarter_of_the_depth() {
        // a 1-pCPU pool limit (100 ms deep) over 14 vCPUs wanting 5 ms turns: 25 ms, not 70
        let r = rules(100 * NS_PER_MS, 5 * NS_PER_MS);
        let mut b = TokenBucket::new(2000.0, 2000, &r, 0);
        b.set_active(14, &r);
        assert_eq!(b.resume, 25.0 * NS_PER_MS as f64);
        b.set_active(2, &r);
        assert_eq!(b.resume, 10.0 * NS_PER_MS as f64);
        b.set_limit(200.0, 2000, &r, 2, 0);
        assert_eq!(b.resume, 2.5 * NS_PER_MS as f64);
    }

    #[test]
    fn an_exhausted_bucket_lends_the_borrow() {
        let r = BucketRules::new(&CpuSchedParams { limit_borrow_ns: 3 * NS_PER_MS, ..CpuSchedParams::default() });
        let mut b = TokenBucket::new(1000.0, 2000, &r, 0);
        b.tokens = 0.0;
        assert!(b.exhausted());
        assert_eq!(b.spendable(&r), 3.0 * NS_PER_MS as f64);
        b.tokens = b.resume;
        assert_eq!(b.spendable(&r), b.resume);
    }

    #[test]
    fn resume_time_repays_debt() {
        let mut b = TokenBucket::new(1300.0, 2600, &rules(100 * NS_PER_MS, NS_PER_MS), 0);
        b.tokens = -b.min_slice;
        // needs 2 ms of tokens at half rate = 4 ms
        assert_eq!(b.time_to_resume(), 4 * NS_PER_MS);
        b.refill(4 * NS_PER_MS);
        assert!(!b.exhausted());
    }
}
