//! Tunables of the proportional-share CPU scheduler, with units, defaults and sources.

use super::cosched::CoschedMode;
use crate::sim::{Time, NS_PER_MS, NS_PER_S};
use serde::{Deserialize, Serialize};

/// Scheduler tunables. Every field name carries its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpuSchedParams {
    /// Longest slice a vCPU runs before the scheduler re-picks, in ns. Default 50 ms: the
    /// commonly cited ESX `Cpu.Quantum` (research/cpu.md C4, unverified [X]).
    pub quantum_ns: Time,
    /// How often demand estimates and entitlements are recomputed, in ns. Default 1 s
    /// (research/cpu.md C1 step 6).
    pub entitlement_interval_ns: Time,
    /// Token-bucket depth of a CPU limit, as wall time at the limit rate, in ns. Default 100 ms
    /// (research/cpu.md C5).
    pub limit_burst_ns: Time,
    /// A waking vCPU preempts a running one only if its virtual time is lower by more than this,
    /// in ns of virtual time. Default 1 ms: chosen to avoid preemption thrash between near-equal
    /// vCPUs while keeping wake-up latency small (C4 asks for "a small margin").
    pub wake_preempt_margin_ns: Time,
    /// The most CPU time a vCPU may be owed by, or owe, the fair clock, in ns (its lag, `clock.rs`):
    /// a waking vCPU is placed no further than this from the clock, and every vCPU's lag is
    /// clamped to it at each entitlement update. Default 100 ms = two quanta (research/cpu.md C3:
    /// "clamp |entitled - charged| to <= 1 quantum x 2").
    pub max_lag_ns: Time,
    /// Weight of the newest interval in the EWMA of each vCPU's demand estimate (runnable
    /// fraction), which sets the water level of the entitlement (`entitlement.rs`), dimensionless
    /// in (0, 1]. Default 0.5: chosen, see test `demand_tracks_duty_cycle`.
    pub demand_ewma_weight: f64,
    /// Co-scheduling of multi-vCPU VMs (`cosched.rs`), a mode, dimensionless: `off` or
    /// `relaxed-4x` (ESX 4's per-vCPU skew). Default `off`: every vCPU independent, as before
    /// co-scheduling was modelled.
    pub cosched_mode: CoschedMode,
    /// Skew past which a leading vCPU is co-stopped, in ns. Default 3 ms: the paper's "a few
    /// milliseconds" (research/cpu.md C9).
    pub cosched_skew_threshold_ns: Time,
}

impl Default for CpuSchedParams {
    fn default() -> Self {
        CpuSchedParams {
            quantum_ns: 50 * NS_PER_MS,
            entitlement_interval_ns: NS_PER_S,
            limit_burst_ns: 100 * NS_PER_MS,
            wake_preempt_margin_ns: NS_PER_MS,
            max_lag_ns: 100 * NS_PER_MS,
            demand_ewma_weight: 0.5,
            cosched_mode: CoschedMode::Off,
            cosched_skew_threshold_ns: 3 * NS_PER_MS,
        }
    }
}

impl CpuSchedParams {
    /// Reject values the scheduler cannot run with, naming the field.
    pub fn validate(&self) -> crate::VmtwinResult<()> {
        use crate::invalid;
        if self.quantum_ns == 0 {
            invalid!("cpu_scheduler.quantum", self.quantum_ns, "a duration > 0");
        }
        if self.entitlement_interval_ns == 0 {
            invalid!("cpu_scheduler.entitlement_interval", self.entitlement_interval_ns, "a duration > 0");
        }
        if self.max_lag_ns == 0 {
            invalid!("cpu_scheduler.max_lag", self.max_lag_ns, "a duration > 0");
        }
        if self.limit_burst_ns == 0 {
            invalid!("cpu_scheduler.limit_burst", self.limit_burst_ns, "a duration > 0");
        }
        if !(self.demand_ewma_weight > 0.0 && self.demand_ewma_weight <= 1.0) {
            invalid!("cpu_scheduler.demand_ewma_weight", self.demand_ewma_weight, "a number in (0, 1]");
        }
        if self.cosched_skew_threshold_ns == 0 {
            invalid!("cpu_scheduler.cosched_skew_threshold", self.cosched_skew_threshold_ns, "a duration > 0");
        }
        if matches!(self.cosched_mode, CoschedMode::Strict | CoschedMode::Relaxed3x) {
            invalid!("cpu_scheduler.cosched", "strict/relaxed-3x", "off or relaxed-4x (the engine simulates ESX 4's rule; ESX 2.x and 3.x gang co-start is not simulated yet)");
        }
        Ok(())
    }
}
