//! Tunables of the execution-speed model: the machine's (caches, memory, hyperthreading) and each
//! workload's profile per unit of work, with units, defaults and sources.

use super::walk::WalkParams;
use crate::{invalid, VmtwinResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The scenario's execution-speed section: machine tunables and the profiled VMs, by name. VMs
/// without a profile get no `vcpu_perf` rows; without this section the model does not run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PerfSpec {
    /// machine tunables
    pub params: PerfParams,
    /// workload profile per VM name
    pub vms: BTreeMap<String, PerfProfile>,
}

/// The machine as the execution-speed model sees it. Every field name carries its unit or its
/// doc says it is dimensionless.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PerfParams {
    /// Capacity of one last-level cache (shared by the cores of one LLC group), in bytes. Default
    /// 8 MiB ([X]: a typical server LLC of the paper's era; the WP's Host1 has 4 MB per two cores).
    pub llc_bytes: u64,
    /// Private cache per core refilled after any move (L2), in bytes. Default 256 KiB ([X]: Nehalem
    /// to Skylake-client L2; the scheduler's `migrate_cost_core_ns` assumes the same).
    pub l2_bytes: u64,
    /// Cache line, in bytes. Default 64 ([X]: every x86-64 part).
    pub line_bytes: u64,
    /// Time to refill one line of the private cache from the LLC after a move, in ns. Default 10
    /// ([R]: the scheduler's `migrate_cost_core_ns`, 40 us for 4096 lines, research/cpu.md C18).
    pub llc_refill_line_ns: f64,
    /// Bandwidth at which a working set is refetched from local memory after a move to another
    /// LLC, in bytes per ns (= GB/s). Default 10 ([R]: the scheduler's `migrate_cost_llc_ns`, 8 MB
    /// in 800 us, C18).
    pub mem_refill_bytes_per_ns: f64,
    /// Stall cycles an LLC miss costs the core once memory-level parallelism has hidden what it
    /// can, for local memory, dimensionless cycles. Default 100 ([X]: ~80 ns local DRAM latency
    /// at 2.6 GHz, about half of it overlapped).
    pub llc_miss_stall_cycles: f64,
    /// Remote over local memory latency, dimensionless (>= 1): remote accesses stall this much
    /// longer, and a cross-node refill runs this much slower. Default 1.5 ([X]: QPI-era two-socket
    /// NUMA factor; the scheduler's `migrate_cost_node_ns` assumes the same, C18).
    pub remote_latency_ratio: f64,
    /// Extra throughput a core gives when both hyperthreads are busy, dimensionless: each thread
    /// then runs at `(1 + gain) / 2` of its speed alone. Default 0.25 ([X]: Intel's "up to 30%"
    /// for Hyper-Threading; research/cpu.md A6.7 gives no factor).
    pub ht_core_gain: f64,
    /// Time one scheduler invocation holds its lock, in ns: what another pCPU of the same lock
    /// domain (an ESX 3.x cell; one pCPU under ESX 4's per-pCPU locks) waits behind it
    /// (`cpu/cells.rs`, the cell lock). 0 turns the cost off. Default 3800 ([X]: the direct cost
    /// of a whole Linux context switch, about 3.8 us on a 2 GHz Xeon, Li, Ding and Shen,
    /// "Quantifying the cost of context switch", ExpCS 2007, as recalled, not re-read; an upper
    /// bound for the part of an invocation that holds the lock; the paper gives no figure).
    pub sched_lock_hold_ns: f64,
    /// Charge a vCPU that returns to the core or LLC it last ran on for the part of its footprint
    /// other work evicted meanwhile (`cpu/cache.rs`: exponential decay with the lines inserted,
    /// the cache's size in lines as the scale), dimensionless switch. Default true (the
    /// mechanism; false gives the model before it, where only a move costs a refill).
    pub resume_refill: bool,
    /// Share each NUMA node's memory bandwidth among the vCPUs missing to it (`membw.rs`: an
    /// M/D/1 queue at each memory controller lengthens every miss's stall), dimensionless switch.
    /// Default true; it acts only where `mem_node_bytes_per_ns` gives a bandwidth.
    pub mem_bandwidth: bool,
    /// Peak bandwidth of one NUMA node's memory controller, in bytes per ns (= GB/s): channels x
    /// transfer rate x 8 bytes. Default 0: not given, no contention (a platform property, set
    /// per host; the reproductions' hosts carry their vendors' figures).
    pub mem_node_bytes_per_ns: f64,
    /// Unloaded latency of a local memory access, in ns: the scale a queueing wait is compared
    /// with. Default 80 ([X]: the figure `llc_miss_stall_cycles` assumes, local DRAM of the
    /// period).
    pub mem_latency_ns: f64,
}

impl Default for PerfParams {
    fn default() -> Self {
        PerfParams {
            llc_bytes: 8 << 20,
            l2_bytes: 256 << 10,
            line_bytes: 64,
            llc_refill_line_ns: 10.0,
            mem_refill_bytes_per_ns: 10.0,
            llc_miss_stall_cycles: 100.0,
            remote_latency_ratio: 1.5,
            ht_core_gain: 0.25,
            sched_lock_hold_ns: 3800.0,
            resume_refill: true,
            mem_bandwidth: true,
            mem_node_bytes_per_ns: 0.0,
            mem_latency_ns: 80.0,
        }
    }
}

fn nonneg(path: &str, name: &str, v: f64) -> VmtwinResult<()> {
    if !(v.is_finite() && v >= 0.0) {
        invalid!(format!("{path}.{name}"), v, "a finite number >= 0");
    }
    Ok(())
}

impl PerfParams {
    /// Refuse values the model cannot use, naming the field.
    pub fn validate(&self, path: &str) -> VmtwinResult<()> {
        for (name, v) in [("llc_bytes", self.llc_bytes), ("line_bytes", self.line_bytes)] {
            if v == 0 {
                invalid!(format!("{path}.{name}"), v, "bytes > 0");
            }
        }
        for (name, v) in [
            ("llc_refill_line_ns", self.llc_refill_line_ns),
            ("llc_miss_stall_cycles", self.llc_miss_stall_cycles),
            ("sched_lock_hold_ns", self.sched_lock_hold_ns),
            ("mem_node_bytes_per_ns", self.mem_node_bytes_per_ns),
        ] {
            nonneg(path, name, v)?;
        }
        if !(self.mem_refill_bytes_per_ns.is_finite() && self.mem_refill_bytes_per_ns > 0.0) {
            invalid!(format!("{path}.mem_refill_bytes_per_ns"), self.mem_refill_bytes_per_ns, "a bandwidth > 0 bytes/ns");
        }
        if !(self.mem_latency_ns.is_finite() && self.mem_latency_ns > 0.0) {
            invalid!(format!("{path}.mem_latency_ns"), self.mem_latency_ns, "a latency > 0 ns");
        }
        if !(self.remote_latency_ratio.is_finite() && self.remote_latency_ratio >= 1.0) {
            invalid!(format!("{path}.remote_latency_ratio"), self.remote_latency_ratio, "a ratio >= 1");
        }
        if !(0.0..=1.0).contains(&self.ht_core_gain) {
            invalid!(format!("{path}.ht_core_gain"), self.ht_core_gain, "a fraction from 0 to 1");
        }
        Ok(())
    }
}

/// One execution layer's work per unit and its speed: guest user, guest kernel, or the
/// hypervisor (VMM + VMkernel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LayerProfile {
    /// Instructions retired per unit of work (the paper's path length), dimensionless. Default 0.
    pub instructions_per_unit: f64,
    /// Cycles per instruction outside page walks and LLC-miss stalls, dimensionless. Default 1.
    pub cpi_core: f64,
    /// DTLB misses that walk, per 1000 instructions, dimensionless. Default 0.
    pub walks_per_kinstr: f64,
    /// References that reach the LLC, per 1000 instructions, dimensionless. Default 0.
    pub llc_refs_per_kinstr: f64,
    /// Share of LLC references that miss when the working set fits its share of the LLC
    /// (compulsory and coherence misses), dimensionless. Default 0.
    pub llc_base_miss_ratio: f64,
    /// This layer's page sizes and walk costs.
    pub walk: WalkParams,
}

impl Default for LayerProfile {
    fn default() -> Self {
        LayerProfile {
            instructions_per_unit: 0.0,
            cpi_core: 1.0,
            walks_per_kinstr: 0.0,
            llc_refs_per_kinstr: 0.0,
            llc_base_miss_ratio: 0.0,
            walk: WalkParams::default(),
        }
    }
}

impl LayerProfile {
    fn validate(&self, path: &str) -> VmtwinResult<()> {
        nonneg(path, "instructions_per_unit", self.instructions_per_unit)?;
        if !(self.cpi_core.is_finite() && self.cpi_core > 0.0) {
            invalid!(format!("{path}.cpi_core"), self.cpi_core, "cycles per instruction > 0");
        }
        nonneg(path, "walks_per_kinstr", self.walks_per_kinstr)?;
        nonneg(path, "llc_refs_per_kinstr", self.llc_refs_per_kinstr)?;
        if !(0.0..=1.0).contains(&self.llc_base_miss_ratio) {
            invalid!(format!("{path}.llc_base_miss_ratio"), self.llc_base_miss_ratio, "a fraction from 0 to 1");
        }
        self.walk.validate(&format!("{path}.walk"))
    }
}

/// What a VM's guest does per unit of work (a transaction, a row, a business operation, a
/// compile job's share), on a virtual or a native platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PerfProfile {
    /// Name of the unit of work, for reports (transaction, row, bop), dimensionless.
    /// Default "unit".
    pub unit: String,
    /// The guest runs under nested paging with a hypervisor layer (true), or on bare metal
    /// (false: native walks, the `hyp` layer does not run), dimensionless. Default true.
    pub virtualized: bool,
    /// Guest user mode.
    pub user: LayerProfile,
    /// Guest kernel mode.
    pub kernel: LayerProfile,
    /// VMM + VMkernel work done for this VM's guest, per unit (only when `virtualized`).
    pub hyp: LayerProfile,
    /// The guest's cache working set per vCPU, in bytes: what competes for the LLC and what is
    /// refetched after a move. Default 4 MiB (chosen).
    pub working_set_bytes: u64,
}

impl Default for PerfProfile {
    fn default() -> Self {
        PerfProfile {
            unit: "unit".into(),
            virtualized: true,
            user: LayerProfile { instructions_per_unit: 1.0, ..LayerProfile::default() },
            kernel: LayerProfile::default(),
            hyp: LayerProfile::default(),
            working_set_bytes: 4 << 20,
        }
    }
}

impl PerfProfile {
    /// Refuse values the model cannot use, naming the field under `path`.
    pub fn validate(&self, path: &str) -> VmtwinResult<()> {
        if self.unit.trim().is_empty() {
            invalid!(format!("{path}.unit"), "''", "a name for the unit of work");
        }
        self.user.validate(&format!("{path}.user"))?;
        self.kernel.validate(&format!("{path}.kernel"))?;
        self.hyp.validate(&format!("{path}.hyp"))?;
        if self.guest_instructions_per_unit() <= 0.0 {
            invalid!(format!("{path}.user.instructions_per_unit"), self.user.instructions_per_unit, "user + kernel instructions per unit > 0");
        }
        Ok(())
    }

    /// Guest instructions (user + kernel) per unit of work.
    pub fn guest_instructions_per_unit(&self) -> f64 {
        self.user.instructions_per_unit + self.kernel.instructions_per_unit
    }
}
