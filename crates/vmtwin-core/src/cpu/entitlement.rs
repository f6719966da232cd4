//! Entitlement: how much CPU each VM and vCPU should get, from shares, reservations and limits.
//!
//! vSphere's rule is max-min fairness weighted by shares, bounded below by reservations and
//! above by limits and demand, applied at every level of the resource-pool tree (research/cpu.md
//! C1, following [WP §2.1] "entitlement is calculated from shares, reservation, and limit"). At
//! one level, with capacity `C` and children `i` with shares `s_i`, floor `lo_i` and ceiling
//! `hi_i`, the allocation is
//!
//! ```text
//!     a_i = clamp(lambda * s_i, lo_i, hi_i)   with lambda chosen so that sum a_i = C
//! ```
//!
//! or `a_i = hi_i` when even the ceilings fit. `F(lambda) = sum clamp(...)` is piecewise linear
//! and non-decreasing, so `lambda` is found exactly by walking its sorted breakpoints
//! (`lo_i/s_i`, `hi_i/s_i`). A child's ceiling is the least of its limit, the most its vCPUs
//! can use and its estimated demand; its floor is its reservation, capped by that ceiling. So a
//! child that wants less than its share gets what it wants, and the rest goes to the others by
//! shares, first inside its pool (C1). `a_i` is the VM's entitlement (`entitlement_mhz`).
//!
//! # From entitlement to scheduling weight
//! The scheduler needs a weight per VM such that a proportional-share scheduler delivers `a_i`.
//! The weight is *not* `a_i`: a VM whose demand estimate is low would then get a low weight,
//! and whenever its real demand rose above the estimate it would queue behind everyone until
//! the next update (the ready-time spikes of an earlier design). Instead every child gets
//!
//! ```text
//!     w_i = clamp(lambda * s_i, r_i, vcpus_i x core)      (lambda of its parent's level)
//! ```
//!
//! its share at the water level, at least its reservation and at most its vCPUs, whatever its
//! demand and ignoring its limit. For a child held back by the others (`a_i = lambda s_i`, or
//! its reservation) this *is* `a_i`; a child that wants less has `w_i >= a_i`, so its bursts
//! are served promptly up to its fair share, and a proportional-share scheduler (fluid GPS:
//! `x_i = min(demand_i, mu w_i)`) still delivers exactly `a_i` to everyone at `mu = 1`. The
//! demand estimate only moves `lambda`, and an error of `d` MHz in one estimate moves the
//! others' entitlements by at most `d` in total: noise enters smoothly instead of through one
//! VM's weight. Limits are left out of the weight and enforced by token buckets (`limit.rs`),
//! so a VM held back by its limit waits in MLMTD, not READY, as esxtop shows it. When no child
//! of a level is held back (`lambda` infinite) every weight is its vCPUs' worth.
//!
//! # Tunables
//! None here: demand comes from the scheduler's EWMA (`demand_ewma_weight`).
//!
//! # Counters
//! `entitlement_mhz` and `demand_est_mhz` per VM, sampled into the `vm` table.
//!
//! # Known gaps
//! - Expandable reservations matter only for admission control (`pools.rs`); at run time a
//!   pool's floor is the larger of its reservation and its children's floors.
//! - Inside a pool none of whose children is held back, weights are the children's vCPUs'
//!   worth: a sudden burst there is shared by vCPU counts until the next estimate (1 s).

/// One child at one level of the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Claim {
    /// relative weight, > 0
    pub shares: f64,
    /// floor in MHz (reservation, capped by demand)
    pub lo: f64,
    /// ceiling in MHz (limit and demand), >= lo
    pub hi: f64,
}

/// Weighted max-min fair split of `capacity` over `claims` (see the module docs).
///
/// Edge cases: ceilings that all fit return the ceilings; floors that do not fit (admission
/// control prevents this at the root) are scaled down in proportion; zero capacity gives zero.
///
/// # Examples
/// ```
/// use vmtwin_core::cpu::{water_fill, Claim};
/// let c = |shares, lo, hi| Claim { shares, lo, hi };
/// // 1:7 shares of 4 pCPUs (B1): 0.5 and 3.5 pCPUs
/// assert_eq!(water_fill(4.0, &[c(1.0, 0.0, 4.0), c(7.0, 0.0, 4.0)]), vec![0.5, 3.5]);
/// // a limit caps one child and the rest goes to the other
/// assert_eq!(water_fill(4.0, &[c(1.0, 0.0, 0.5), c(1.0, 0.0, 4.0)]), vec![0.5, 3.5]);
/// // a reservation lifts one child above its share
/// assert_eq!(water_fill(4.0, &[c(1.0, 1.0, 1.0), c(1.0, 0.0, 1.0), c(1.0, 0.0, 1.0),
///     c(1.0, 0.0, 1.0), c(1.0, 0.0, 1.0)]), vec![1.0, 0.75, 0.75, 0.75, 0.75]);
/// ```
pub fn water_fill(capacity: f64, claims: &[Claim]) -> Vec<f64> {
    fill(capacity, claims).0
}

/// [`water_fill`] and its [`water_level`] together, for one sort of the breakpoints.
pub fn fill(capacity: f64, claims: &[Claim]) -> (Vec<f64>, f64) {
    let mut split = Vec::new();
    let level = fill_in(capacity, claims, &mut split, &mut LevelScratch::default());
    (split, level)
}

/// [`fill`] writing the split into `split` (cleared first) and using `room`'s buffers: the
/// entitlement update calls it every second, and reused buffers spare it the allocations.
pub(crate) fn fill_in(capacity: f64, claims: &[Claim], split: &mut Vec<f64>, room: &mut LevelScratch) -> f64 {
    let capacity = capacity.max(0.0);
    let level = water_level_in(capacity, claims, room);
    let lo_sum: f64 = claims.iter().map(|c| c.lo).sum();
    split.clear();
    if lo_sum >= capacity {
        let scale = if lo_sum > 0.0 { capacity / lo_sum } else { 0.0 };
        split.extend(claims.iter().map(|c| c.lo * scale));
    } else {
        split.extend(claims.iter().map(|c| (level * c.shares).clamp(c.lo, c.hi)));
    }
    level
}

/// Buffers of [`water_level`]'s search, kept from call to call.
#[derive(Debug, Clone, Default)]
pub(crate) struct LevelScratch {
    open: Vec<Open>,
    points: Vec<u64>,
}

/// A child not yet settled by [`water_level`]'s search: its breakpoints and its claim.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// where it starts growing and where it stops, MHz per share
    p: f64,
    q: f64,
    c: Claim,
}

/// The water level `lambda` of [`water_fill`]: MHz per share at which the claims fill
/// `capacity`. Infinite when every ceiling fits (no child is held back by the others), zero
/// when the floors alone do not fit.
///
/// # Examples
/// ```
/// use vmtwin_core::cpu::{water_level, Claim};
/// let c = |shares, lo, hi| Claim { shares, lo, hi };
/// // a child capped at 0.5 leaves 3.5 to the other: 3.5 per share
/// assert_eq!(water_level(4.0, &[c(1.0, 0.0, 0.5), c(1.0, 0.0, 4.0)]), 3.5);
/// assert_eq!(water_level(4.0, &[c(1.0, 0.0, 1.0), c(1.0, 0.0, 1.0)]), f64::INFINITY);
/// ```
pub fn water_level(capacity: f64, claims: &[Claim]) -> f64 {
    water_level_in(capacity, claims, &mut LevelScratch::default())
}

/// [`water_level`] with its buffers in `room`.
pub(crate) fn water_level_in(capacity: f64, claims: &[Claim], room: &mut LevelScratch) -> f64 {
    let capacity = capacity.max(0.0);
    let hi_sum: f64 = claims.iter().map(|c| c.hi).sum();
    if hi_sum <= capacity {
        return f64::INFINITY;
    }
    let lo_sum: f64 = claims.iter().map(|c| c.lo).sum();
    if lo_sum >= capacity {
        return 0.0;
    }
    // Breakpoints of F(lambda): at lo_i/s_i child i starts growing, at hi_i/s_i it stops.
    // Bracket lambda in (a, b) with F(a) < capacity <= F(b) and halve the breakpoints inside by
    // their median (selection, not a sort). A child with no breakpoint inside is settled: on
    // the whole bracket it contributes a constant (its floor or ceiling) or grows with lambda,
    // so it moves into `fixed` or `slope` and drops out. Each round touches only the children
    // still unsettled, at most the breakpoints left, which halve: O(n) in all, against the
    // O(n log n) sort of walking every breakpoint (a third of a 1,024-VM host's run time).
    let (mut a, mut b) = (0.0f64, f64::INFINITY);
    let (mut fixed, mut slope) = (0.0f64, 0.0f64);
    // every child not yet settled, with its claim beside its breakpoints (read in every round)
    let LevelScratch { open, points } = room;
    open.clear();
    open.extend(claims.iter().map(|c| Open { p: c.lo / c.shares, q: c.hi / c.shares, c: *c }));
    // room for every breakpoint: each round stores both of an unsettled child's and keeps
    // those inside the bracket (a count, not a branch: which ones are inside is a coin toss)
    points.clear();
    points.resize(2 * open.len(), 0);
    loop {
        let (lo_b, hi_b) = (a, b);
        let mut np = 0;
        open.retain(|o| {
            let (p, q, c) = (o.p, o.q, &o.c);
            if p >= hi_b {
                fixed += c.lo;
            } else if q <= lo_b {
                fixed += c.hi;
            } else if p <= lo_b && q >= hi_b {
                slope += c.shares;
            } else {
                // a breakpoint inside the bracket is > a >= 0, and positive floats order as
                // their bit patterns do: the median is selected among integers
                points[np] = p.to_bits();
                np += usize::from(lo_b < p && p < hi_b);
                points[np] = q.to_bits();
                np += usize::from(lo_b < q && q < hi_b);
                return true;
            }
            false
        });
        if np == 0 {
            break;
        }
        let m = f64::from_bits(*points[..np].select_nth_unstable(np / 2).1);
        let f = fixed + slope * m + open.iter().map(|o| (m * o.c.shares).clamp(o.c.lo, o.c.hi)).sum::<f64>();
        if f >= capacity {
            b = m;
        } else {
            a = m;
        }
    }
    // Every child is settled and F(lambda) = fixed + slope * lambda on [a, b]; some child grows
    // there, since F(a) < capacity <= F(b).
    if slope > 0.0 {
        ((capacity - fixed) / slope).clamp(a, b)
    } else {
        a
    }
}
