//! One vCPU's piece of time over esxtop's states, from its demand and what it was given (the
//! derivation is in `fluid/mod.rs`).

/// How the workload's work arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loop {
    /// work arrives whatever happens and queues in the guest (`arrivals: open`)
    Open,
    /// the guest thinks after each burst (`arrivals: closed`, traces)
    Closed,
}

/// Fractions of a vCPU's piece of time in each state; they add up to 1.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Fractions {
    /// RUN (and charged: %USED)
    pub run: f64,
    /// READY: runnable, held back by other VMs
    pub ready: f64,
    /// MLMTD: runnable, held back by a limit
    pub mlmtd: f64,
    /// IDLE: halted by the guest
    pub idle: f64,
}

/// Split a vCPU's time given its demand `d` and its use `u` (fractions of a pCPU, `u <= d <= 1`),
/// how its work arrives, and whether a limit (rather than other VMs) holds it back.
///
/// # Examples
/// ```
/// use vmtwin_core::fluid::{split, Loop};
/// // served in full: runs its demand, halts the rest
/// let f = split(0.3, 0.3, Loop::Closed, false);
/// assert_eq!((f.run, f.ready, f.idle), (0.3, 0.0, 0.7));
/// // open loop held to half a pCPU: runnable all the time
/// let f = split(0.8, 0.5, Loop::Open, false);
/// assert_eq!((f.run, f.ready, f.idle), (0.5, 0.5, 0.0));
/// // closed loop at duty 0.8 held to 0.5: bursts take 1/x = 1/u - (1-d)/d = 1.75 x longer
/// let f = split(0.8, 0.5, Loop::Closed, true);
/// assert!((f.run + f.mlmtd - 0.875).abs() < 1e-12 && f.ready == 0.0);
/// ```
pub fn split(d: f64, u: f64, arrivals: Loop, limited: bool) -> Fractions {
    let d = d.clamp(0.0, 1.0);
    let u = u.clamp(0.0, d);
    // relative tolerance: the water-fill's sums leave the last bits of `u` below `d`
    let runnable = if u >= d * (1.0 - 1e-12) {
        u
    } else {
        match arrivals {
            Loop::Open => 1.0,
            Loop::Closed => 1.0 - u * (1.0 - d) / d,
        }
    };
    let wait = (runnable - u).max(0.0);
    let (ready, mlmtd) = if limited { (0.0, wait) } else { (wait, 0.0) };
    Fractions { run: u, ready, mlmtd, idle: (1.0 - runnable).max(0.0) }
}
