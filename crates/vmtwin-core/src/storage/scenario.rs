//! The storage section of the engine spec (`SimSpec::storage`): the topology of [`StorageSpec`]
//! plus what a scenario adds around it — which VM owns each virtual disk, the I/O generators
//! on the disks, the VMs whose vCPUs issue synchronous I/O, and path failures and recoveries as
//! timed events. Base units throughout (ns, bytes, bits per second); the Python scenario layer
//! (`python/vmtwin/scenario/storage.py`) parses the user's units and checks the schema.
//!
//! # Tunables
//! None of its own: the stack's are [`StackParams`], the devices' and paths' are in their specs
//! (`params.rs`), each with its default and source.
//!
//! # Counters
//! None of its own: the run loop samples the stack's esxtop disk counters into the `disk`, `lun`,
//! `path` and `adapter` tables (`simulation/storage.rs`).
//!
//! # Known gaps
//! - One virtual disk per entry.

use super::params::{validate_psp, AdapterSpec, ArraySpec, LunSpec, PspSpec, StackParams, StorageSpec, VmDiskSpec};
use super::psp::PspChange;
use super::workload::WorkloadSpec;
use crate::invalid;
use crate::sim::Time;
use crate::VmtwinResult;
use serde::{Deserialize, Serialize};

/// The storage section of a scenario, normalized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSection {
    /// kernel and VMM tunables
    #[serde(default)]
    pub params: StackParams,
    /// HBA ports
    #[serde(default)]
    pub adapters: Vec<AdapterSpec>,
    /// flash arrays
    #[serde(default)]
    pub arrays: Vec<ArraySpec>,
    /// LUNs (datastores)
    pub luns: Vec<LunSpec>,
    /// VM disks
    #[serde(default)]
    pub disks: Vec<DiskSection>,
    /// I/O generators, each on one VM disk
    #[serde(default)]
    pub workloads: Vec<DiskWorkload>,
    /// block-trace replays, each on one VM disk
    #[serde(default)]
    pub traces: Vec<DiskTrace>,
    /// VMs whose vCPUs issue one synchronous I/O after each CPU burst
    #[serde(default)]
    pub vcpu_io: Vec<VcpuIoSpec>,
    /// path failures and recoveries
    #[serde(default)]
    pub events: Vec<PathEvent>,
    /// path selection changes (esxcli) while the run goes on
    #[serde(default)]
    pub psp_events: Vec<PspEvent>,
}

/// A change of a LUN's path selection at a time (esxcli: a new policy, RR's `--iops`, the
/// Adaptive knob).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PspEvent {
    /// when, ns from the start of the run
    pub at_ns: Time,
    /// the LUN's name
    pub lun: String,
    /// what changes
    pub change: PspChange,
}

/// A VM's virtual disk and the VM it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSection {
    /// the owning VM's name
    pub vm: String,
    /// the disk: name, datastore, shares, span
    #[serde(flatten)]
    pub disk: VmDiskSpec,
    /// log every request of this disk when it completes (the `io_log` table; off by default)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub log_requests: bool,
}

/// An I/O generator on a VM disk (starts at its `start_ns` after the VM's power-on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskWorkload {
    /// the VM disk's name
    pub disk: String,
    /// the generator
    #[serde(flatten)]
    pub workload: WorkloadSpec,
}

/// Replay of a block trace file (the CloudPhysics VSCSI CSV of `shared/data/io-traces`, read by
/// [`super::workload::read_vscsi_csv`]) on a VM disk, from its VM's power-on plus `start_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskTrace {
    /// the VM disk's name
    pub disk: String,
    /// the trace file (absolute, or relative to the working directory)
    pub path: String,
    /// when the first record is issued, ns after the VM's power-on
    #[serde(default)]
    pub start_ns: Time,
    /// time compression: 2.0 replays twice as fast
    #[serde(default = "one")]
    pub speed: f64,
}

fn one() -> f64 {
    1.0
}

/// Synchronous guest I/O: after each CPU burst a vCPU of `vm` issues one request to `disk` and
/// waits (WAIT, esxtop %VMWAIT) until it completes; then its CPU workload goes on (the next
/// burst, or the think time that follows the burst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VcpuIoSpec {
    /// the VM's name
    pub vm: String,
    /// one of the VM's disks
    pub disk: String,
    /// request size, bytes (a multiple of 512)
    pub block_bytes: u32,
    /// reads as a percentage, 0-100
    pub read_pct: f64,
    /// random (vs sequential) requests as a percentage, 0-100
    pub random_pct: f64,
}

/// What happens to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathAction {
    /// the path fails (cable pull, target port down): I/O on it is aborted and retried
    Down,
    /// the path comes back
    Up,
}

/// A path failure or recovery at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathEvent {
    /// when, ns from the start of the run
    pub at_ns: Time,
    /// the LUN's name
    pub lun: String,
    /// the path's index among the LUN's paths
    pub path: u32,
    /// down or up
    pub action: PathAction,
}

impl StorageSection {
    /// The stack's topology with the run's seed.
    pub fn topology(&self, seed: u64) -> StorageSpec {
        StorageSpec {
            seed,
            params: self.params.clone(),
            adapters: self.adapters.clone(),
            arrays: self.arrays.clone(),
            luns: self.luns.clone(),
            disks: self.disks.iter().map(|d| d.disk.clone()).collect(),
        }
    }

    /// Check what the topology's own validation cannot: VM names, disk names in workloads,
    /// vCPU I/O and events. `vm_names` are the scenario's VMs.
    pub fn validate_links(&self, vm_names: &[&str]) -> VmtwinResult<()> {
        for (i, d) in self.disks.iter().enumerate() {
            if !vm_names.contains(&d.vm.as_str()) {
                invalid!(format!("storage.disks[{i}].vm"), format!("'{}'", d.vm), "the name of a VM of the scenario");
            }
        }
        let disk_names: Vec<&str> = self.disks.iter().map(|d| d.disk.name.as_str()).collect();
        for (i, w) in self.workloads.iter().enumerate() {
            if !disk_names.contains(&w.disk.as_str()) {
                invalid!(format!("storage.workloads[{i}].disk"), format!("'{}'", w.disk), format!("one of the VM disks {disk_names:?}"));
            }
        }
        for (i, t) in self.traces.iter().enumerate() {
            if !disk_names.contains(&t.disk.as_str()) {
                invalid!(format!("storage.traces[{i}].disk"), format!("'{}'", t.disk), format!("one of the VM disks {disk_names:?}"));
            }
            if !(t.speed > 0.0 && t.speed.is_finite()) {
                invalid!(format!("storage.traces[{i}].speed"), t.speed, "a factor > 0");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (i, io) in self.vcpu_io.iter().enumerate() {
            let f = |x: &str| format!("storage.vcpu_io[{i}].{x}");
            if !vm_names.contains(&io.vm.as_str()) {
                invalid!(f("vm"), format!("'{}'", io.vm), "the name of a VM of the scenario");
            }
            if !seen.insert(io.vm.as_str()) {
                invalid!(f("vm"), format!("'{}'", io.vm), "a VM named once in vcpu_io");
            }
            match self.disks.iter().find(|d| d.disk.name == io.disk) {
                None => invalid!(f("disk"), format!("'{}'", io.disk), format!("one of the VM disks {disk_names:?}")),
                Some(d) if d.vm != io.vm => invalid!(f("disk"), format!("'{}' (a disk of VM '{}')", io.disk, d.vm), format!("a disk of VM '{}'", io.vm)),
                Some(_) => {}
            }
            if io.block_bytes < 512 || io.block_bytes % 512 != 0 {
                invalid!(f("block_bytes"), io.block_bytes, "a multiple of 512 bytes");
            }
            if !(0.0..=100.0).contains(&io.read_pct) {
                invalid!(f("read_pct"), io.read_pct, "a percentage in [0, 100]");
            }
            if !(0.0..=100.0).contains(&io.random_pct) {
                invalid!(f("random_pct"), io.random_pct, "a percentage in [0, 100]");
            }
        }
        for (i, e) in self.events.iter().enumerate() {
            match self.luns.iter().find(|l| l.name == e.lun) {
                None => {
                    let names: Vec<&str> = self.luns.iter().map(|l| l.name.as_str()).collect();
                    invalid!(format!("storage.events[{i}].lun"), format!("'{}'", e.lun), format!("one of the datastores {names:?}"));
                }
                Some(l) if e.path as usize >= l.paths.len() => {
                    invalid!(format!("storage.events[{i}].path"), e.path, format!("a path index below {} (the LUN's paths)", l.paths.len()));
                }
                Some(_) => {}
            }
        }
        self.validate_psp_events()
    }

    /// Each PSP change must make sense for the policy the LUN has at that moment: replay them in
    /// time order per LUN.
    fn validate_psp_events(&self) -> VmtwinResult<()> {
        let names: Vec<&str> = self.luns.iter().map(|l| l.name.as_str()).collect();
        let mut current: Vec<PspSpec> = self.luns.iter().map(|l| l.psp.clone()).collect();
        let mut order: Vec<usize> = (0..self.psp_events.len()).collect();
        order.sort_by_key(|&i| self.psp_events[i].at_ns); // stable: same-time changes in listed order
        for i in order {
            let e = &self.psp_events[i];
            let at = format!("storage.psp_events[{i}]");
            let Some(l) = names.iter().position(|n| *n == e.lun) else {
                invalid!(format!("{at}.lun"), format!("'{}'", e.lun), format!("one of the datastores {names:?}"));
            };
            match (&e.change, &mut current[l]) {
                (PspChange::Policy(p), cur) => {
                    validate_psp(&format!("{at}.change"), p, self.luns[l].paths.len())?;
                    *cur = p.clone();
                }
                (PspChange::Iops(n), PspSpec::RoundRobin { iops } | PspSpec::Adaptive { iops, .. }) => {
                    if *n == 0 {
                        invalid!(format!("{at}.change.iops"), 0, "an integer >= 1 (commands before switching path)");
                    }
                    *iops = *n;
                }
                (PspChange::Iops(n), cur) => {
                    invalid!(format!("{at}.change.iops"), n, format!("a LUN on round_robin or adaptive at that time ('{}' is on {})", e.lun, policy_name(cur)));
                }
                (PspChange::AdaptiveEnabled(_), PspSpec::Adaptive { .. }) => {}
                (PspChange::AdaptiveEnabled(on), cur) => {
                    invalid!(format!("{at}.change.adaptive_enabled"), on, format!("a LUN on adaptive at that time ('{}' is on {})", e.lun, policy_name(cur)));
                }
            }
        }
        Ok(())
    }
}

fn policy_name(p: &PspSpec) -> &'static str {
    match p {
        PspSpec::Fixed { .. } => "fixed",
        PspSpec::Mru => "mru",
        PspSpec::RoundRobin { .. } => "round_robin",
        PspSpec::Adaptive { .. } => "adaptive",
    }
}
