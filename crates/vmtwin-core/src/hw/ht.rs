//! Hyperthreading: what two hardware threads of one core deliver, and who may share a core.
//!
//! A core with two hardware threads (Intel Hyper-Threading) runs one thread at full speed
//! when its sibling is idle; when both threads run, they share the core's execution units and
//! the core delivers `1 + g` times what one thread alone does, each thread `(1 + g) / 2`.
//! `g` is the HT core gain, [`DEFAULT_HT_CORE_GAIN`] = 0.25: Intel's "up to 30%" for
//! Hyper-Threading ([X]; research/cpu.md A6.7 gives no factor). The execution-speed model
//! (`perf::PerfParams::ht_core_gain`) uses the same default from the same source.
//!
//! ESX's per-VM `sched.cpu.htsharing` restricts who may run on the other thread of a core a
//! vCPU runs on ([`HtSharing`]): `any` (the default), `internal` (only vCPUs of the same VM; a
//! one-vCPU VM treated as `none`) or `none` (the sibling thread is kept idle while it runs).
//!
//! # Tunables
//! `ht_core_gain` (0.25) in `CpuSchedParams`; the per-VM sharing mode.
//!
//! # Counters
//! None here; the scheduler keeps them (`cpu/sched/ht.rs`).
//!
//! # Known gaps
//! - One gain for every workload: real HT gain depends on what the two threads run (from
//!   negative for cache-bound pairs to ~30% for stall-bound ones).

use serde::{Deserialize, Serialize};

/// Extra throughput of a core whose two threads are both busy, dimensionless ([X]: Intel's
/// "up to 30%"; the model takes 0.25, as `perf::PerfParams::ht_core_gain` does).
pub const DEFAULT_HT_CORE_GAIN: f64 = 0.25;

/// Speed of one thread, as a fraction of a whole core, when its sibling thread is busy.
///
/// # Examples
/// ```
/// assert_eq!(vmtwin_core::hw::thread_speed(0.25), 0.625);
/// ```
pub fn thread_speed(ht_core_gain: f64) -> f64 {
    (1.0 + ht_core_gain) / 2.0
}

/// `sched.cpu.htsharing`: who may run on the other thread of the core a vCPU runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HtSharing {
    /// any vCPU, of any VM (ESX's default)
    #[default]
    Any,
    /// only another vCPU of the same VM (a one-vCPU VM: nobody)
    Internal,
    /// nobody: the sibling thread stays idle while this vCPU runs
    None,
}

impl HtSharing {
    /// Does a vCPU of VM `vm` (of `vcpus` vCPUs) with this mode let a vCPU of VM `other` run
    /// on its sibling thread?
    pub fn admits(self, vm: u32, vcpus: u32, other: u32) -> bool {
        match self {
            HtSharing::Any => true,
            HtSharing::Internal => vcpus > 1 && vm == other,
            HtSharing::None => false,
        }
    }
}

/// May vCPUs of VMs `a` and `b` (modes and vCPU counts given) run on the two threads of one
/// core? Both must admit the other.
pub fn may_share(a: (u32, u32, HtSharing), b: (u32, u32, HtSharing)) -> bool {
    a.2.admits(a.0, a.1, b.0) && b.2.admits(b.0, b.1, a.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharing_modes_follow_htsharing() {
        let any = |vm| (vm, 2, HtSharing::Any);
        assert!(may_share(any(0), any(1)));
        // internal: own VM only, and never for a one-vCPU VM
        assert!(may_share((0, 2, HtSharing::Internal), (0, 2, HtSharing::Internal)));
        assert!(!may_share((0, 2, HtSharing::Internal), any(1)));
        assert!(!may_share(any(1), (0, 2, HtSharing::Internal)));
        assert!(!may_share((0, 1, HtSharing::Internal), (0, 1, HtSharing::Internal)));
        // none: nobody, not even a sibling vCPU
        assert!(!may_share((0, 2, HtSharing::None), (0, 2, HtSharing::None)));
        assert!(!may_share(any(1), (0, 2, HtSharing::None)));
    }
}
