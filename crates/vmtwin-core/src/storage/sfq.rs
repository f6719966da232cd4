//! SFQ(D): start-time fair queueing with depth D, the per-LUN scheduler across VMs.
//!
//! Each VM disk on a LUN is a class with weight φ_k = its disk shares over the sum of the
//! shares of the disks on that LUN. A request of class k arriving at virtual time v gets
//! (Kraft et al. eqs. 1-2)
//!
//! ```text
//! S = max(v, F_prev(k))        F = S + d / φ_k
//! ```
//!
//! where `d` is its cost. The scheduler keeps up to D requests at the device (the LUN's DQLEN)
//! and, whenever one completes, issues the queued request with the lowest start tag; virtual
//! time becomes the start tag of the request last issued (research/storage.md C1.1: unchanged
//! while idle, not reset at the end of a busy period). A class with no queued request takes no
//! capacity, and the others share it by weight: the scheduler is work conserving. A backlogged
//! class's tags advance by d/φ per request, so over a busy period the classes' served costs are
//! in the ratio of their weights; a class that asks for less than its share is served in full.
//!
//! Kraft's `d` is the request's own service time, known to his simulator. A kernel does not
//! know it before the device answers, so the cost here is the device's *expected* service time
//! for the request's direction and size (the LUN backend's estimate): equal-size requests cost
//! the same, a 64 kB request costs more than a 4 kB one as it does at the device.
//!
//! # Tunables
//! Disk shares per VM disk ([`super::VmDiskSpec::shares`]); D is the LUN's DQLEN
//! ([`super::LunSpec::dqlen`], default 32, Kraft §3).
//!
//! # Counters
//! None of its own; QUED and QAVG/cmd at the LUN and VM disk count the time requests wait here.
//!
//! # Known gaps
//! - ESX's own disk scheduler (and later mClock) charges a size-based cost; the expected-
//!   service-time cost is a stand-in with the same ordering, not ESX's exact formula.

/// Tags and virtual time of one LUN.
#[derive(Debug, Clone)]
pub struct Sfq {
    vtime: f64,
    last_finish: Vec<f64>,
    inv_phi: Vec<f64>,
}

impl Sfq {
    /// A scheduler for classes with the given shares.
    pub fn new(shares: &[u32]) -> Self {
        let total: f64 = shares.iter().map(|&s| f64::from(s)).sum();
        Sfq { vtime: 0.0, last_finish: vec![0.0; shares.len()], inv_phi: shares.iter().map(|&s| total / f64::from(s)).collect() }
    }

    /// Start tag of a request of `class` with `cost`, advancing that class's finish tag.
    #[inline]
    pub fn tag(&mut self, class: usize, cost: f64) -> f64 {
        let s = self.vtime.max(self.last_finish[class]);
        self.last_finish[class] = s + cost * self.inv_phi[class];
        s
    }

    /// A request with start tag `start` is issued: virtual time moves to it.
    #[inline]
    pub fn issued(&mut self, start: f64) {
        // A retried request (its path failed) keeps its old, lower tag: time never goes back.
        self.vtime = self.vtime.max(start);
    }

    /// Current virtual time.
    pub fn vtime(&self) -> f64 {
        self.vtime
    }
}
