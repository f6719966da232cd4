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
//! (`lo_i/s_i`, `hi_i/s_i`): between the two consecutive ones with `F(a) < C <= F(b)`, with `F`
//! and the constant and growing parts on `[a, b]` summed in child order, so that the level
//! depends on the claims alone and not on the path of the search that found the bracket
//! (`finish`). A child's ceiling is the least of its limit, the most its vCPUs
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

use crate::sim::{max_f, min_f};

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
    let level = fill_in(capacity, claims, &mut split, &mut LevelScratch::default(), f64::NAN);
    (split, level)
}

/// [`fill`] writing the split into `split` (cleared first) and using `room`'s buffers: the
/// entitlement update calls it every second, and reused buffers spare it the allocations.
/// `hint` as in [`water_level_near`].
pub(crate) fn fill_in(capacity: f64, claims: &[Claim], split: &mut Vec<f64>, room: &mut LevelScratch, hint: f64) -> f64 {
    let (level, lo_sum) = water_level_sums(capacity, claims, room, hint);
    let rule = Split::new(capacity, lo_sum, level);
    split.clear();
    split.extend(claims.iter().map(|c| rule.of(c)));
    level
}

/// How an allocation is split over claims whose floors sum to `lo_sum`, at their water level:
/// the floors scaled down when they do not fit, else each claim at the level, clamped to its
/// floor and ceiling. [`fill_in`] splits by it, and the pool tree's entitlement pass
/// (`pools.rs`) claim by claim as it goes.
#[derive(Clone, Copy)]
pub(crate) struct Split {
    /// the floors do not fit: each claim is its floor x `scale`
    floors: bool,
    scale: f64,
    level: f64,
}

impl Split {
    #[inline(always)]
    pub(crate) fn new(capacity: f64, lo_sum: f64, level: f64) -> Self {
        let capacity = capacity.max(0.0);
        let floors = lo_sum >= capacity;
        let scale = if floors && lo_sum > 0.0 { capacity / lo_sum } else { 0.0 };
        Split { floors, scale, level }
    }

    #[inline(always)]
    pub(crate) fn of(self, c: &Claim) -> f64 {
        if self.floors { c.lo * self.scale } else { (self.level * c.shares).clamp(c.lo, c.hi) }
    }
}

/// Buffers of [`water_level`]'s search, kept from call to call.
#[derive(Debug, Clone, Default)]
pub(crate) struct LevelScratch {
    open: Vec<Open>,
    points: Vec<u64>,
    /// every child's breakpoints `(lo/s, hi/s)`, in child order
    bps: Vec<(f64, f64)>,
    /// the children [`level_near`]'s pass found a breakpoint of inside its bracket, in child
    /// order (room for every child: each is stored and counted only if inside)
    inside: Vec<u32>,
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
    water_level_near(capacity, claims, room, f64::NAN)
}

/// How far either side of its hint [`water_level_near`] first looks, a fraction of the hint.
/// On bench-1024vm the level moves by less than this from one second to the next in most
/// updates, and the bracket it makes holds a few dozen of 2,048 breakpoints.
const NEAR: f64 = 1.0 / 64.0;

/// [`water_level_in`] starting near `hint`, a guess of the level (the same claims' level a
/// second ago, say; NaN for none): when `F` a fraction [`NEAR`] either side of it brackets
/// the capacity, the search starts from that bracket, with few breakpoints inside, rather than
/// from `(0, infinity)`, and skips most rounds. The level is the same whatever the hint
/// (`finish`).
pub(crate) fn water_level_near(capacity: f64, claims: &[Claim], room: &mut LevelScratch, hint: f64) -> f64 {
    water_level_sums(capacity, claims, room, hint).0
}

/// [`water_level_near`] and the claims' floors summed in child order (what [`fill_in`] needs
/// to split the capacity, from the pass that sums them already).
pub(crate) fn water_level_sums(capacity: f64, claims: &[Claim], room: &mut LevelScratch, hint: f64) -> (f64, f64) {
    let capacity = capacity.max(0.0);
    // when the one pass declines, its sums are the ones the search starts from
    let near = if hint > 0.0 && hint.is_finite() {
        match level_near(capacity, claims, hint, room) {
            Ok(answer) => return answer,
            Err(sums) => Some(sums),
        }
    } else {
        None
    };
    let (hi_sum, lo_sum) = match near {
        Some(n) => (n.hi_sum, n.lo_sum),
        None => (claims.iter().map(|c| c.hi).sum(), claims.iter().map(|c| c.lo).sum()),
    };
    (water_level_rest(capacity, claims, room, near, hi_sum, lo_sum), lo_sum)
}

/// [`water_level_sums`]' level past the one pass: the early answers, then the search.
#[inline(always)]
fn water_level_rest(capacity: f64, claims: &[Claim], room: &mut LevelScratch, near: Option<NearSums>, hi_sum: f64, lo_sum: f64) -> f64 {
    if hi_sum <= capacity {
        return f64::INFINITY;
    }
    if lo_sum >= capacity {
        return 0.0;
    }
    // Breakpoints of F(lambda): at lo_i/s_i child i starts growing, at hi_i/s_i it stops.
    // Bracket lambda in (a, b) with F(a) < capacity <= F(b) and halve the breakpoints inside by
    // their median (selection, not a sort). A child with no breakpoint inside is settled: on
    // the whole bracket it contributes a constant (its floor or ceiling) or grows with lambda,
    // so it drops out, its part of F kept in `fixed` and `slope`. Each round touches only the
    // children still unsettled, at most the breakpoints left, which halve: O(n) in all, against
    // the O(n log n) sort of walking every breakpoint (a third of a 1,024-VM host's run time).
    let LevelScratch { open, points, bps, inside } = room;
    // (the one pass stored every child's breakpoints already)
    if near.is_none() {
        bps.clear();
        bps.extend(claims.iter().map(|c| (c.lo / c.shares, c.hi / c.shares)));
    }
    let (mut a, mut b) = (0.0f64, f64::INFINITY);
    if let Some(n) = near {
        // F either side of the hint
        if n.fy < capacity {
            a = n.y;
        } else if n.fx >= capacity {
            b = n.x;
        } else {
            (a, b) = (n.x, n.y);
        }
    }
    // the first bracket's ends may be guesses, not breakpoints: the nearest breakpoints at or
    // beyond them (0 and infinity count) are the bracket's if the search never moves them
    let (a0, b0) = (a, b);
    let (mut below, mut above) = (0.0f64, f64::INFINITY);
    // (the search's own sums of the settled children, in the order it settles them: they only
    // steer it, and `finish` sums again in child order)
    let (mut fixed, mut slope) = (0.0f64, 0.0f64);
    // every child not yet settled, with its claim beside its breakpoints (read in every round);
    // room for every breakpoint: each round stores both of an unsettled child's and keeps
    // those inside the bracket (a count, not a branch: which ones are inside is a coin toss)
    // (each entry is stored before it is read: room kept from the last call is not zeroed
    // again, 16 KB a call on a 1,024-VM host)
    open.clear();
    if points.len() != 2 * claims.len() {
        points.clear();
        points.resize(2 * claims.len(), 0);
    }
    let mut np = 0;
    // the one pass's bracket `(x, y)`, the usual start: it settled every child against it
    // already (`level_near`: the same rule, its sums in child order with a zero for each child
    // left open), and listed the open ones, so the walk below over every child is not needed
    let settled = match near {
        Some(n) if (a, b) == (n.x, n.y) => {
            (fixed, slope, below, above) = (n.fixed, n.slope, n.below, n.above);
            for &i in &inside[..n.inside] {
                let (c, (p, q)) = (claims[i as usize], bps[i as usize]);
                points[np] = p.to_bits();
                np += usize::from(a < p && p < b);
                points[np] = q.to_bits();
                np += usize::from(a < q && q < b);
                open.push(Open { p, q, c });
            }
            true
        }
        _ => false,
    };
    let walk = if settled { &claims[..0] } else { claims };
    for (c, &(p, q)) in walk.iter().zip(bps.iter()) {
        match settle(p, q, a, b) {
            Settled::Floor => {
                fixed += c.lo;
                above = above.min(p);
            }
            Settled::Ceiling => {
                fixed += c.hi;
                below = below.max(q);
            }
            Settled::Grows => {
                slope += c.shares;
                below = below.max(p);
                above = above.min(q);
            }
            Settled::Open => {
                below = below.max(if p <= a { p } else { 0.0 });
                above = above.min(if q >= b { q } else { f64::INFINITY });
                // a breakpoint inside the bracket is > a >= 0, and positive floats order as
                // their bit patterns do: the median is selected among integers
                points[np] = p.to_bits();
                np += usize::from(a < p && p < b);
                points[np] = q.to_bits();
                np += usize::from(a < q && q < b);
                open.push(Open { p, q, c: *c });
            }
        }
    }
    while np > 0 {
        let m = f64::from_bits(*points[..np].select_nth_unstable(np / 2).1);
        let f = fixed + slope * m + open.iter().map(|o| (m * o.c.shares).clamp(o.c.lo, o.c.hi)).sum::<f64>();
        if f >= capacity {
            b = m;
        } else {
            a = m;
        }
        let (lo_b, hi_b) = (a, b);
        np = 0;
        open.retain(|o| {
            let (p, q, c) = (o.p, o.q, &o.c);
            match settle(p, q, lo_b, hi_b) {
                Settled::Floor => fixed += c.lo,
                Settled::Ceiling => fixed += c.hi,
                Settled::Grows => slope += c.shares,
                Settled::Open => {
                    points[np] = p.to_bits();
                    np += usize::from(lo_b < p && p < hi_b);
                    points[np] = q.to_bits();
                    np += usize::from(lo_b < q && q < hi_b);
                    return true;
                }
            }
            false
        });
    }
    // a moved end is a median, a breakpoint
    let a = if a == a0 { below } else { a };
    let b = if b == b0 { above } else { b };
    finish(capacity, claims, bps, a, b)
}

/// How a child whose breakpoints are `p <= q` stands on a bracket `(a, b)` of the level: the
/// one rule by which the search, the one pass and `finish` settle it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// it starts growing at `b` or later: its floor on the whole bracket
    Floor,
    /// it stops at `a` or earlier: its ceiling on the whole bracket
    Ceiling,
    /// it grows on the whole bracket: `lambda x shares`
    Grows,
    /// a breakpoint lies inside the bracket
    Open,
}

/// [`Settled`] for breakpoints `(p, q)` on the bracket `(a, b)`.
#[inline(always)]
fn settle(p: f64, q: f64, a: f64, b: f64) -> Settled {
    if p >= b {
        Settled::Floor
    } else if q <= a {
        Settled::Ceiling
    } else if p <= a && q >= b {
        Settled::Grows
    } else {
        Settled::Open
    }
}

/// What [`level_near`]'s pass summed, for the search when it declines: the ceilings and floors
/// (in child order, as `water_level_near` would sum them) and `F` at `x` and `y`, a fraction
/// [`NEAR`] either side of the hint.
#[derive(Debug, Clone, Copy)]
struct NearSums {
    hi_sum: f64,
    lo_sum: f64,
    x: f64,
    y: f64,
    fx: f64,
    fy: f64,
    /// the settled children's sums and the nearest breakpoints beyond `(x, y)`, as the
    /// search's first walk would take them on that bracket, and how many children are open
    /// there (listed in [`LevelScratch`]'s `inside`)
    fixed: f64,
    slope: f64,
    below: f64,
    above: f64,
    inside: usize,
}

/// The level in one pass over the claims when no breakpoint lies within [`NEAR`] of `hint` and
/// `F` there brackets the capacity (on bench-1024vm, most updates: the level moves little and
/// many VMs share their breakpoints), else the pass's sums ([`NearSums`]). The pass sums the
/// ceilings and floors (the early answers' tests), `F` either side of the hint, and, settling
/// every child against that bracket as the search would, `fixed` and `slope` in child order,
/// with the nearest breakpoints beyond the bracket: those are then the bracket of `finish` (`F`
/// is non-decreasing, so `F(below) <= F(x) < capacity <= F(y) <= F(above)`), and its sums the
/// same, child for child (a child not counted adds a zero, which changes no sum).
fn level_near(capacity: f64, claims: &[Claim], hint: f64, room: &mut LevelScratch) -> Result<(f64, f64), NearSums> {
    let (x, y) = (hint * (1.0 - NEAR), hint * (1.0 + NEAR));
    let (mut hi_sum, mut lo_sum, mut fx, mut fy) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let (mut fixed, mut slope) = (0.0f64, 0.0f64);
    let (mut below, mut above) = (0.0f64, f64::INFINITY);
    // every child's breakpoints, and the children with one inside `(x, y)` (stored, then
    // counted or not: which ones are inside is data), for the search should the pass decline
    let (bps, list) = (&mut room.bps, &mut room.inside);
    if bps.len() != claims.len() || list.len() != claims.len() {
        bps.clear();
        bps.resize(claims.len(), (0.0, 0.0));
        list.clear();
        list.resize(claims.len(), 0);
    }
    let mut n_inside = 0;
    for (i, (c, bp)) in claims.iter().zip(bps.iter_mut()).enumerate() {
        let (p, q) = (c.lo / c.shares, c.hi / c.shares);
        *bp = (p, q);
        hi_sum += c.hi;
        lo_sum += c.lo;
        fx += level_parts(x, c);
        fy += level_parts(y, c);
        list[n_inside] = i as u32;
        n_inside += usize::from((x < p && p < y) || (x < q && q < y));
        // with no breakpoint inside (x, y), as `finish` settles a child: `settle`'s rule,
        // written as float selects (compiled without branches; through `settle` the pass ran
        // 5.7% more instructions on bench-1024vm)
        fixed += if p >= y { c.lo } else if q <= x { c.hi } else { 0.0 };
        slope += if p <= x && q >= y { c.shares } else { 0.0 };
        // (`max_f`, `min_f`: no breakpoint is NaN, shares being > 0, so they pick what
        // `f64::max` and `f64::min` would, without the NaN tests)
        below = max_f(below, if q <= x { q } else if p <= x { p } else { 0.0 });
        above = min_f(above, if p >= y { p } else if q >= y { q } else { f64::INFINITY });
    }
    if n_inside > 0 || hi_sum <= capacity || lo_sum >= capacity || !(fx < capacity && capacity <= fy) {
        return Err(NearSums { hi_sum, lo_sum, x, y, fx, fy, fixed, slope, below, above, inside: n_inside });
    }
    Ok((if slope > 0.0 { ((capacity - fixed) / slope).clamp(below, above) } else { below }, lo_sum))
}

/// `F(lambda)` as the level is defined by: every child's part at `lambda`, summed in child
/// order. Each part, and so each partial sum, is non-decreasing in `lambda` (a float product,
/// clamp and sum are monotone), so this `F` is too, and "the consecutive breakpoints `a < b`
/// with `F(a) < capacity <= F(b)`" names one bracket, whatever search found it.
fn level_parts(level: f64, c: &Claim) -> f64 {
    (level * c.shares).clamp(c.lo, c.hi)
}

/// The level on the bracket `(a, b)` a search found: consecutive breakpoints (0 and infinity
/// count as breakpoints) with, as the search judged it, `F(a) < capacity <= F(b)`. One pass in
/// child order checks that judgement with `F` as defined (`level_parts`) and sums the settled
/// children's floors and ceilings (`fixed`) and the growing ones' shares (`slope`), so that the
/// level depends on the claims alone, not on the order in which the search settled them. Should
/// the search's own sums have judged a breakpoint on the other side (they round differently,
/// so only where `F` meets `capacity` within a rounding), `exact_bracket` finds the bracket.
fn finish(capacity: f64, claims: &[Claim], bps: &[(f64, f64)], a: f64, b: f64) -> f64 {
    let sums = |a: f64, b: f64| {
        let (mut fa, mut fb, mut fixed, mut slope) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for (c, &(p, q)) in claims.iter().zip(bps) {
            fa += level_parts(a, c);
            fb += level_parts(b, c);
            // no breakpoint lies inside (a, b), so none is open: it grows on the whole bracket
            match settle(p, q, a, b) {
                Settled::Floor => fixed += c.lo,
                Settled::Ceiling => fixed += c.hi,
                Settled::Grows | Settled::Open => slope += c.shares,
            }
        }
        (fa, fb, fixed, slope)
    };
    let (mut a, mut b) = (a, b);
    let (fa, fb, mut fixed, mut slope) = sums(a, b);
    if !(fa < capacity && capacity <= fb) {
        (a, b) = exact_bracket(capacity, claims, bps);
        (_, _, fixed, slope) = sums(a, b);
    }
    // F(lambda) = fixed + slope * lambda on [a, b]; some child grows there, since F(a) <
    // capacity <= F(b)
    if slope > 0.0 {
        ((capacity - fixed) / slope).clamp(a, b)
    } else {
        a
    }
}

/// The bracket of [`finish`] by brute force: every breakpoint sorted, and a bisection on them
/// with `F` as defined (`level_parts`). O(n log n); reached only when the search's judgement
/// of some breakpoint rounded the other way (`capacity > F(0)` and `capacity < F(infinity)`
/// hold: `water_level_in` returned before otherwise).
#[cold]
fn exact_bracket(capacity: f64, claims: &[Claim], bps: &[(f64, f64)]) -> (f64, f64) {
    let f = |level: f64| claims.iter().map(|c| level_parts(level, c)).fold(0.0f64, |s, x| s + x);
    let mut pts: Vec<f64> = bps.iter().flat_map(|&(p, q)| [p, q]).filter(|x| *x > 0.0).collect();
    pts.push(0.0);
    pts.push(f64::INFINITY);
    pts.sort_by(f64::total_cmp);
    pts.dedup();
    // the first point where F reaches capacity: F(0) < capacity <= F(infinity)
    let j = pts.partition_point(|&x| f(x) < capacity).clamp(1, pts.len() - 1);
    (pts[j - 1], pts[j])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Rng;

    /// The level as defined (`finish`): the bracket by brute force, the sums in child order.
    fn defined(capacity: f64, claims: &[Claim]) -> f64 {
        let hi_sum: f64 = claims.iter().map(|c| c.hi).sum();
        let lo_sum: f64 = claims.iter().map(|c| c.lo).sum();
        if hi_sum <= capacity {
            return f64::INFINITY;
        }
        if lo_sum >= capacity {
            return 0.0;
        }
        let bps: Vec<(f64, f64)> = claims.iter().map(|c| (c.lo / c.shares, c.hi / c.shares)).collect();
        let (a, b) = exact_bracket(capacity, claims, &bps);
        finish(capacity, claims, &bps, a, b)
    }

    /// Claims from `rng`: on a grid (ties: equal breakpoints, floors at ceilings, zero
    /// ceilings) or continuous (a 1,024-VM host's demand estimates), with a capacity between
    /// the floors' sum and a little past the ceilings'.
    fn draw(rng: &mut Rng, grid: bool) -> (f64, Vec<Claim>) {
        let n = 1 + (rng.uniform() * 400.0) as usize;
        let claims: Vec<Claim> = (0..n)
            .map(|_| {
                let shares = if grid { [500.0, 1000.0, 2000.0][(rng.uniform() * 3.0) as usize] } else { 1.0 + rng.uniform() * 19_999.0 };
                let (x, y) = if grid {
                    ((rng.uniform() * 8.0).floor() * 250.0, (rng.uniform() * 8.0).floor() * 250.0)
                } else {
                    (rng.uniform() * 500.0 * f64::from(u8::from(rng.uniform() < 0.2)), rng.uniform() * 2600.0)
                };
                Claim { shares, lo: x.min(y), hi: x.max(y) }
            })
            .collect();
        let lo: f64 = claims.iter().map(|c| c.lo).sum();
        let hi: f64 = claims.iter().map(|c| c.hi).sum();
        (lo + rng.uniform() * 1.1 * (hi - lo), claims)
    }

    /// The search's level is the defined one, bit for bit, on grid and continuous claims.
    #[test]
    fn the_search_finds_the_defined_level() {
        let mut rng = Rng::new(7);
        let mut room = LevelScratch::default();
        for i in 0..3000 {
            let (capacity, claims) = draw(&mut rng, i % 2 == 0);
            let want = defined(capacity, &claims);
            let got = water_level_in(capacity, &claims, &mut room);
            assert_eq!(got.to_bits(), want.to_bits(), "draw {i}: {got} against {want}");
        }
    }

    /// Whatever the hint, the level is the same bit for bit: none, the level itself, near it,
    /// far below and far above.
    #[test]
    fn the_hint_changes_nothing() {
        let mut rng = Rng::new(11);
        let mut room = LevelScratch::default();
        for i in 0..2000 {
            let (capacity, claims) = draw(&mut rng, i % 2 == 0);
            let want = defined(capacity, &claims);
            let near = if want.is_finite() { want } else { 1.0 };
            for hint in [f64::NAN, near, near * (1.0 + NEAR * rng.uniform()), near * (1.0 - 0.5 * NEAR), near * 1.02, near * 0.97,
                near * 1e-6, near * 1e6, 0.0, f64::INFINITY] {
                let got = water_level_near(capacity, &claims, &mut room, hint);
                assert_eq!(got.to_bits(), want.to_bits(), "draw {i}, hint {hint}: {got} against {want}");
            }
        }
    }

    /// Where the one pass answers, its level is the defined one, bit for bit; it answers for
    /// most hints near the level of claims with few distinct breakpoints.
    #[test]
    fn the_one_pass_answer_is_the_defined_level() {
        let mut rng = Rng::new(13);
        let (mut answered, mut tried) = (0, 0);
        let mut room = LevelScratch::default();
        for i in 0..2000 {
            let (capacity, claims) = draw(&mut rng, true);
            let want = defined(capacity, &claims);
            if !want.is_finite() || want == 0.0 {
                continue;
            }
            for hint in [want, want * (1.0 + 0.5 * NEAR * (rng.uniform() - 0.5))] {
                tried += 1;
                if let Ok((got, _)) = level_near(capacity, &claims, hint, &mut room) {
                    answered += 1;
                    assert_eq!(got.to_bits(), want.to_bits(), "draw {i}, hint {hint}: {got} against {want}");
                }
            }
        }
        assert!(answered * 4 > tried, "answered {answered} of {tried}");
    }

    /// A search judged wrong at a breakpoint is put right: `finish` given a bracket one
    /// breakpoint off finds the defined one.
    #[test]
    fn a_wrong_bracket_is_put_right() {
        let c = |shares, lo, hi| Claim { shares, lo, hi };
        let claims = [c(1.0, 0.0, 0.5), c(1.0, 0.0, 4.0), c(2.0, 0.0, 1.0)];
        let bps: Vec<(f64, f64)> = claims.iter().map(|c| (c.lo / c.shares, c.hi / c.shares)).collect();
        // F(lambda) = min(lambda, 0.5) + min(lambda, 4) + min(2 lambda, 1): 3 at lambda = 1.5,
        // in the bracket (0.5, 4) and not (0, 0.5) or (4, infinity)
        assert_eq!(finish(3.0, &claims, &bps, 0.5, 4.0), 1.5);
        assert_eq!(finish(3.0, &claims, &bps, 0.0, 0.5), 1.5);
        assert_eq!(finish(3.0, &claims, &bps, 4.0, f64::INFINITY), 1.5);
    }
}
