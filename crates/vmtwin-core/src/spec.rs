//! The normalized engine spec: what the Python scenario layer hands the engine.
//!
//! All quantities are plain integers in base units (ns, MHz, bytes); unit parsing and the
//! user-facing schema live in `python/vmtwin/scenario/`, the one source of truth for scenario
//! files. The engine re-checks only what its own API can also receive (reconfiguration between
//! steps) and the facts only it knows (admission control). See
//! `docs/reference/engine-contract.md`.

use crate::cpu::CpuSchedParams;
use serde::{Deserialize, Serialize};

/// A whole simulation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpec {
    /// master seed; every entity's stream derives from it
    pub seed: u64,
    /// default run length for `run()`
    pub duration_ns: u64,
    /// counter sampling interval (esxtop's minimum is 2 s)
    pub sample_interval_ns: u64,
    /// the host
    pub host: HostSpec,
    /// CPU scheduler tunables; missing fields take their defaults
    #[serde(default)]
    pub cpu_sched: CpuSchedParams,
    /// resource pools, parents before children
    #[serde(default)]
    pub pools: Vec<PoolSpec>,
    /// the memory subsystem (`mem/`): host policy and per-VM settings; memory is not modelled
    /// when this is absent
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::mem::MemorySpec>,
    /// virtual machines
    pub vms: Vec<VmSpec>,
    /// the storage subsystem (`storage/scenario.rs`): adapters, arrays, LUNs, VM disks, I/O
    /// workloads, path events; absent when the scenario models no storage
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<crate::storage::StorageSection>,
    /// the execution-speed model (`perf/`): machine tunables and per-VM workload profiles; the
    /// model is off when this is absent
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<crate::perf::PerfSpec>,
    /// how the host is simulated: every burst (`event`, the default) or one water-fill per
    /// step (`fluid`, `fluid/`)
    #[serde(default)]
    pub fidelity: Fidelity,
}

/// How a host is simulated (`fidelity` in the scenario).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// every burst of every vCPU is an event ([`crate::Simulation`])
    #[default]
    Event,
    /// per step, each VM gets its entitlement from the pool tree's water-fill, with no
    /// burst-level events ([`crate::fluid::FluidSim`])
    Fluid,
}

/// Host hardware.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// host name, as shown in reports
    pub name: String,
    /// processor packages
    pub sockets: u32,
    /// NUMA nodes in each socket
    pub numa_nodes_per_socket: u32,
    /// last-level-cache groups in each NUMA node
    pub llcs_per_node: u32,
    /// cores sharing one LLC
    pub cores_per_llc: u32,
    /// hardware threads per core (1, or 2 with hyperthreading)
    pub threads_per_core: u32,
    /// core clock in MHz
    pub core_mhz: u64,
    /// machine memory in bytes
    pub memory_bytes: u64,
}

/// A resource pool's CPU settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// unique pool name
    pub name: String,
    /// parent pool, or `None` for the host's root pool
    pub parent: Option<String>,
    /// CPU shares (absolute; Normal = 4000 for a pool)
    pub shares: u32,
    /// guaranteed MHz for the pool's children
    pub reservation_mhz: u64,
    /// MHz ceiling, `None` = unlimited
    pub limit_mhz: Option<u64>,
    /// whether children may borrow reservation from the parent
    pub expandable: bool,
}

/// A virtual machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSpec {
    /// unique VM name; also names its random streams
    pub name: String,
    /// resource pool, `None` = the root pool
    pub pool: Option<String>,
    /// number of vCPUs
    pub vcpus: u32,
    /// configured memory in bytes
    pub memory_bytes: u64,
    /// CPU shares for the whole VM (Normal = 1000 per vCPU)
    pub shares: u32,
    /// guaranteed MHz
    pub reservation_mhz: u64,
    /// MHz ceiling, `None` = unlimited
    pub limit_mhz: Option<u64>,
    /// when the VM is powered on
    #[serde(default)]
    pub power_on_ns: u64,
    /// what runs inside
    pub workload: WorkloadSpec,
}

/// How the burst lengths of a CPU-bound workload are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BurstDist {
    /// every burst is exactly `burst_ns`
    Fixed,
    /// bursts and think times are exponential with the given means
    Exponential,
}

/// Whether work waits for the last piece to finish (closed) or arrives on its own clock (open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// think after each burst: a contended vCPU falls behind instead of queueing work
    #[default]
    Closed,
    /// work arrives at `duty` of the vCPU's capacity whatever happens; unfinished work queues
    Open,
}

/// How a thread that reaches a barrier before its siblings waits (`guest/barrier.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BarrierWait {
    /// busy-wait on its vCPU: CPU used, no useful work (research/cpu.md C16)
    #[default]
    Spin,
    /// block: its vCPU halts until the last thread arrives and wakes it
    Halt,
}

/// Default CPU time a spinning thread spins between looks at its barrier, ns.
fn default_spin_poll_ns() -> u64 {
    crate::guest::DEFAULT_SPIN_POLL_NS
}

/// What a VM's vCPUs do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// the guest halts: every vCPU stays in WAIT_IDLE
    Idle,
    /// bursts of CPU work separated by think time, so the busy fraction is `duty` when
    /// uncontended
    CpuBound {
        /// busy fraction in (0, 1]
        duty: f64,
        /// mean CPU work per burst
        burst_ns: u64,
        /// burst and think-time distribution
        burst_dist: BurstDist,
        /// closed or open loop
        #[serde(default)]
        arrivals: Arrivals,
    },
    /// replay of a CPU-utilisation trace, piecewise constant
    Trace {
        /// length of each segment
        segment_ns: Vec<u64>,
        /// demand in each segment, fraction of the VM's capacity
        utilization: Vec<f64>,
        /// CPU work per burst
        burst_ns: u64,
        /// start over at the end of the trace
        #[serde(rename = "loop")]
        repeat: bool,
    },
    /// one thread per vCPU computing a phase, then waiting at a barrier for all the others
    /// (a PARSEC-like data-parallel program, `guest/barrier.rs`)
    Barrier {
        /// mean CPU work per thread per phase
        phase_ns: u64,
        /// phase-work distribution (exponential: threads reach the barrier at different times)
        phase_dist: BurstDist,
        /// how a thread that arrives early waits
        #[serde(default)]
        wait: BarrierWait,
        /// a spinning thread halts once it has spun this much CPU time at one barrier; none:
        /// it spins until released
        #[serde(default)]
        spin_limit_ns: Option<u64>,
        /// CPU time a spinning thread spins between looks at the barrier
        #[serde(default = "default_spin_poll_ns")]
        spin_poll_ns: u64,
    },
}

impl SimSpec {
    /// Parse a spec from JSON, reporting serde's complaint as an invalid-scenario error.
    pub fn from_json(text: &str) -> crate::VmtwinResult<Self> {
        serde_json::from_str(text).map_err(|e| crate::VmtwinError::InvalidScenario {
            path: format!("engine spec (line {}, column {})", e.line(), e.column()),
            value: e.to_string(),
            allowed: "the normalized spec of docs/reference/engine-contract.md".into(),
        })
    }

    /// The spec as JSON, with every default in force.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("spec serializes")
    }
}
