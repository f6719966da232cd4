//! Allocation policy: shares with the idle memory tax, sampled active memory, free-memory states.
//!
//! **Targets** [S1 §5]. Memory is revoked from the VM paying the lowest price, its adjusted
//! shares-per-page ratio
//!
//! ```text
//!     rho = S / (P * (f + k * (1 - f)))     k = 1 / (1 - tau)
//! ```
//!
//! (S shares, P allocated pages, f the active fraction of P, tau the idle tax rate). Revocation
//! stops when every VM that could lose memory pays the same price, so the targets solve
//! `P_i = lambda * S_i / (f_i + k (1 - f_i))` with `min_i <= P_i <= hi_i` and the targets filling
//! the memory available to VMs: a weighted water-filling, the same max-min split the CPU
//! entitlement uses ([`crate::cpu::water_fill`]) with weights `S_i / (f_i + k (1 - f_i))`
//! (research/memory.md C.6). `hi_i` is the VM's configured size capped by what it has mapped,
//! so a VM that never touched its memory does not hold a target it does not use. `f` is the
//! active estimate as a fraction of the allocation: `min(1, active pages / P)` (C.3, C.4), with
//! P the VM's consumed pages (a shared page counts 1/n).
//!
//! **Active memory** [S1 §5.3]. Each period (30 s), `n` = 100 pages are picked uniformly without
//! replacement and their mappings invalidated; the next access to each is counted (`t`). At
//! period end `f = t / n` feeds a fast and a slow EWMA; the estimate is the max of the slow,
//! the fast, and the fast updated with the current period's partial count `t_so_far / n`.
//!
//! **States** [S1 §6.3, S2 §3]. Free memory below a state's threshold enters it (high -> soft
//! -> hard -> low, any number of levels at once); it is left one level up only once free memory
//! exceeds the next higher threshold by the hysteresis fraction.
//!
//! # Tunables
//! `idle_tax`, `sample_pages`, `sample_period_ns`, `ewma_fast_gain`, `ewma_slow_gain`,
//! `thresholds`, `hysteresis` (`MemParams`).
//!
//! # Counters
//! Per VM: SZTGT (target), TCHD (active estimate), the adjusted ratio; host: the memory state.
//!
//! # Known gaps
//! - Sampling periods run in simulated wall time, not VM execution time (C.8).
//! - Shares are a plain number per VM; resource pools do not reach memory yet.

use crate::cpu::{water_fill, Claim};

/// Idle page cost k = 1 / (1 - tau).
///
/// # Examples
/// ```
/// use vmtwin_core::mem::idle_cost;
/// assert_eq!(idle_cost(0.0), 1.0);
/// assert_eq!(idle_cost(0.75), 4.0);
/// ```
pub fn idle_cost(tau: f64) -> f64 {
    1.0 / (1.0 - tau)
}

/// The adjusted shares-per-page ratio rho of a VM with `shares`, `pages` allocated and active
/// fraction `f`, under tax rate `tau`.
pub fn adjusted_ratio(shares: f64, pages: f64, f: f64, tau: f64) -> f64 {
    let f = f.clamp(0.0, 1.0);
    shares / (pages * (f + idle_cost(tau) * (1.0 - f)))
}

/// One VM's claim on memory for [`targets`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemClaim {
    /// shares (> 0)
    pub shares: f64,
    /// active fraction of its allocation, in [0, 1]
    pub active: f64,
    /// reservation in pages
    pub min: f64,
    /// most it can use, in pages (configured size, capped by what it has mapped)
    pub max: f64,
}

/// Target allocations (pages) that equalize the adjusted ratio over `capacity` pages.
pub fn targets(capacity: f64, claims: &[MemClaim], tau: f64) -> Vec<f64> {
    let k = idle_cost(tau);
    let c: Vec<Claim> = claims
        .iter()
        .map(|m| {
            let f = m.active.clamp(0.0, 1.0);
            Claim { shares: m.shares / (f + k * (1.0 - f)), lo: m.min.min(m.max), hi: m.max }
        })
        .collect();
    water_fill(capacity, &c)
}

/// The active-memory estimator of one VM (the sampled pages themselves are marked in its pmap).
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveEstimate {
    /// fast EWMA of f
    pub fast: f64,
    /// slow EWMA of f
    pub slow: f64,
    /// pages sampled this period
    pub n: u32,
    /// sampled pages touched so far this period
    pub t: u32,
}

impl Default for ActiveEstimate {
    /// Starts fully active (C.7: assume fully active at power-on).
    fn default() -> Self {
        ActiveEstimate { fast: 1.0, slow: 1.0, n: 0, t: 0 }
    }
}

impl ActiveEstimate {
    /// Close a period: fold `t / n` into both averages and start counting afresh.
    pub fn end_period(&mut self, fast_gain: f64, slow_gain: f64) {
        if self.n > 0 {
            let f = f64::from(self.t) / f64::from(self.n);
            self.fast += fast_gain * (f - self.fast);
            self.slow += slow_gain * (f - self.slow);
        }
        self.t = 0;
        self.n = 0;
    }

    /// The estimate: max of slow, fast, and fast with the current partial period.
    pub fn fraction(&self, fast_gain: f64) -> f64 {
        let partial = if self.n > 0 { self.fast + fast_gain * (f64::from(self.t) / f64::from(self.n) - self.fast) } else { 0.0 };
        self.slow.max(self.fast).max(partial)
    }
}

/// Host free-memory state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemState {
    /// enough free memory: no reclamation beyond sharing
    High = 0,
    /// reclaim by ballooning
    Soft = 1,
    /// reclaim by swapping (and compression in the 2013 preset)
    Hard = 2,
    /// as hard, and block VMs above target from allocating
    Low = 3,
}

const LEVELS: [MemState; 4] = [MemState::High, MemState::Soft, MemState::Hard, MemState::Low];

/// The next state from `state` with `free` of `total` pages, thresholds `[high, soft, hard, low]`
/// (fractions) and `hysteresis`.
pub fn next_state(state: MemState, free: u64, total: u64, thresholds: [f64; 4], hysteresis: f64) -> MemState {
    let frac = free as f64 / total as f64;
    // down: the deepest state whose threshold free is below
    let mut s = state as usize;
    for (level, &t) in thresholds.iter().enumerate().skip(s + 1) {
        if frac < t {
            s = level;
        }
    }
    if s > state as usize {
        return LEVELS[s];
    }
    // up one level once free clears the next higher threshold by the hysteresis margin
    if s > 0 && frac >= thresholds[s - 1] * (1.0 + hysteresis) {
        s -= 1;
    }
    LEVELS[s]
}
