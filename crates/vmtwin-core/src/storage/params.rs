//! The storage topology and its tunables, with units, defaults and sources.
//!
//! Sources: **[K]** Kraft et al. 2013 (research/storage.md §A1-A2), **[P]** the PSP Adaptive
//! paper (research/storage.md §A7-A8, C3), **[ext]** outside knowledge of ESX or of device
//! datasheets, named as such; **chosen** marks a value picked for this model, with its reason.

use crate::invalid;
use crate::sim::{Time, NS_PER_MS, NS_PER_S, NS_PER_US};
use crate::VmtwinResult;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Tunables of the VMM and kernel part of the stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StackParams {
    /// Requests larger than this are split into pieces of at most this size, in bytes. Default
    /// 512 kB = 128 blocks of 4 kB: "the VMM splits requests larger than 512 kB" ([K] §4.2.1).
    pub split_bytes: u32,
    /// Most commands one VM may have active at a LUN while other VMs share it, dimensionless
    /// (ESX `Disk.SchedNumReqOutstanding`). Default 32 [ext: the ESX default].
    pub sched_num_req_outstanding: u32,
    /// Kraft's merge value ω ≥ 1, dimensionless: at each dispatch up to ⌊ω⌋ or ⌈ω⌉ (stochastic
    /// rounding, research/storage.md C1.3) same-VM commands, consecutive in start-tag order, go
    /// to the device as one command ([K] §4.3.1, Algorithm 1). Default 1 (no merging).
    pub merge_omega: f64,
    /// Merge only commands contiguous on disk (the VMM can only coalesce what is adjacent),
    /// dimensionless flag. Default true: chosen; false merges any same-VM neighbours in tag order
    /// as Kraft's model does (a calibration, not a mechanism). Merged commands always share a
    /// direction.
    pub merge_contiguous_only: bool,
}

impl Default for StackParams {
    fn default() -> Self {
        StackParams { split_bytes: 512 * 1024, sched_num_req_outstanding: 32, merge_omega: 1.0, merge_contiguous_only: true }
    }
}

/// How a spinning disk orders its on-board queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HddOrder {
    /// first come, first served
    Fcfs,
    /// shortest seek (cylinder distance) first
    Sstf,
    /// shortest positioning time (seek + rotation) first, as NCQ firmware does [ext]
    Sptf,
}

/// A spinning disk (`hdd.rs`). Defaults describe a 7200 rpm 1 TB SATA drive [ext: typical
/// datasheet values]; the seek curve is Ruemmler and Wilkes' square-root form [ext].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HddParams {
    /// Spindle speed in revolutions per minute (dimensionless count per minute). Default 7200 [ext].
    pub rpm: u32,
    /// Cylinders, dimensionless. Default 100,000 [ext: order of a 1 TB drive].
    pub cylinders: u32,
    /// Sectors per cylinder (all heads), dimensionless; with `cylinders` sets the capacity.
    /// Default 19,531 (100,000 cylinders x 19,531 x 512 B = 1 TB) [ext].
    pub sectors_per_cylinder: u32,
    /// Sectors on one track (one revolution), dimensionless. Default 2,000 (1 MB per track) [ext].
    pub sectors_per_track: u32,
    /// Seek over one cylinder, in ns. Default 0.5 ms [ext: datasheet track-to-track].
    pub seek_track_ns: Time,
    /// Seek over the full stroke, in ns. Default 15 ms [ext: datasheet full stroke].
    pub seek_full_ns: Time,
    /// Media transfer rate in bytes per second. Default 150 MB/s [ext].
    pub media_bytes_per_s: u64,
    /// Firmware overhead per command, in ns. Default 100 µs [ext].
    pub command_overhead_ns: Time,
    /// On-board (NCQ) queue depth, dimensionless. Default 32 [ext: SATA NCQ].
    pub queue_depth: u32,
    /// On-board ordering. Default SPTF [ext].
    pub order: HddOrder,
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams {
            rpm: 7200,
            cylinders: 100_000,
            sectors_per_cylinder: 19_531,
            sectors_per_track: 2_000,
            seek_track_ns: 500 * NS_PER_US,
            seek_full_ns: 15 * NS_PER_MS,
            media_bytes_per_s: 150_000_000,
            command_overhead_ns: 100 * NS_PER_US,
            queue_depth: 32,
            order: HddOrder::Sptf,
        }
    }
}

/// A directly attached SSD (`device.rs`): parallel channels, FCFS. Defaults are typical SATA
/// SSD datasheet figures [ext].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SsdParams {
    /// Commands served at once (flash channels x dies that answer independently), dimensionless.
    /// Default 8 [ext].
    pub channels: u32,
    /// Fixed part of a read, in ns. Default 80 µs [ext: 4 kB random read latency].
    pub read_ns: Time,
    /// Fixed part of a write (into the drive's buffer), in ns. Default 30 µs [ext].
    pub write_ns: Time,
    /// Interface bandwidth shared by all channels, in bytes per second. Default 500 MB/s [ext: SATA III].
    pub bytes_per_s: u64,
    /// On-board queue depth, dimensionless. Default 32 [ext: NCQ].
    pub queue_depth: u32,
}

impl Default for SsdParams {
    fn default() -> Self {
        SsdParams { channels: 8, read_ns: 80 * NS_PER_US, write_ns: 30 * NS_PER_US, bytes_per_s: 500_000_000, queue_depth: 32 }
    }
}

/// A dual-controller ALUA flash array (`array.rs`), shared by the LUNs it exports. Defaults
/// are chosen for an all-flash array of the PSP Adaptive paper's era ([P] §4: "ALUA enabled
/// array with 16 LUNs on SSD"); the paper gives no array figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArraySpec {
    /// Name LUNs refer to.
    pub name: String,
    /// Commands one controller processes at once (for the LUNs it owns), dimensionless.
    /// Default 16: chosen.
    pub engines_per_controller: u32,
    /// Processing per command on the LUN's owning controller, in ns (every command, whichever
    /// controller it arrived at: per I/O). Default 60 µs: chosen (flash-array latencies of a few
    /// hundred µs end to end).
    pub controller_ns: Time,
    /// One controller's front-end data rate, shared FCFS by the commands arriving at it, in
    /// bytes per second (per byte). Default 1.6 GB/s: chosen, about two 8 Gb/s FC ports' worth.
    pub controller_bytes_per_s: u64,
    /// Extra time of a read that misses the controller's cache (an SSD read), in ns. Default
    /// 150 µs: chosen.
    pub backend_read_ns: Time,
    /// Extra time of a write to mirror it into the partner controller's cache before the ack,
    /// in ns. Default 40 µs: chosen ([P] §3.2: writes need cache synchronisation).
    pub mirror_ns: Time,
    /// Extra time of a command arriving on the non-owning controller (ALUA un-optimized path:
    /// forwarded over the inter-controller link to the owner; per I/O, holds nothing), in ns. Default 100 µs: chosen ([P] §2: AUO
    /// paths have "higher service time").
    pub hop_ns: Time,
    /// Read-cache slots per controller (direct mapped), dimensionless. Default 16,384 (1 GiB of
    /// 64 kB chunks): chosen, larger than the PSP paper's 16 x 100 MB LUNs, as a flash array's
    /// DRAM cache would be.
    pub cache_slots: u32,
    /// Bytes per cache slot. Default 64 kB: chosen.
    pub cache_chunk_bytes: u32,
}

impl ArraySpec {
    /// An array with the defaults above.
    pub fn named(name: &str) -> Self {
        ArraySpec {
            name: name.to_string(),
            engines_per_controller: 16,
            controller_ns: 60 * NS_PER_US,
            controller_bytes_per_s: 1_600_000_000,
            backend_read_ns: 150 * NS_PER_US,
            mirror_ns: 40 * NS_PER_US,
            hop_ns: 100 * NS_PER_US,
            cache_slots: 16_384,
            cache_chunk_bytes: 64 * 1024,
        }
    }
}

/// What serves a LUN's commands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeviceSpec {
    /// An analytic device: `servers` parallel servers, FCFS, exponential service with the given
    /// mean. For checks against queueing theory.
    Exponential { servers: u32, mean_service_ns: Time },
    /// A spinning disk.
    Hdd(HddParams),
    /// A directly attached SSD.
    Ssd(SsdParams),
    /// A LUN on a flash array, owned by controller `owner` (0 or 1): paths to it are AO.
    Array { array: String, owner: u8 },
}

/// An HBA port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdapterSpec {
    /// Name, e.g. `vmhba2`.
    pub name: String,
    /// Commands the port may have outstanding, dimensionless. Default 2048 [ext: order of an FC
    /// HBA's execution throttle].
    pub queue_depth: u32,
    /// Link rate in bits per second. Default 8 Gb/s ([P] Table 1: "Dual port 8Gbps HBA").
    pub link_bits_per_s: u64,
}

impl AdapterSpec {
    /// A port with the defaults above.
    pub fn named(name: &str) -> Self {
        AdapterSpec { name: name.to_string(), queue_depth: 2048, link_bits_per_s: 8_000_000_000 }
    }
}

/// One path of a LUN: an HBA port to one controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PathSpec {
    /// The adapter (HBA port) name.
    pub adapter: String,
    /// The array controller it reaches (0 or 1); for a non-array device, 0.
    pub controller: u8,
    /// Fabric round trip (switch, cables), in ns. Default 10 µs [ext].
    pub fabric_ns: Time,
}

impl PathSpec {
    /// A path with the default fabric latency.
    pub fn new(adapter: &str, controller: u8) -> Self {
        PathSpec { adapter: adapter.to_string(), controller, fabric_ns: 10 * NS_PER_US }
    }
}

/// PSP Adaptive's tunables ([P] §3.3). The paper sets no threshold defaults ("set by the
/// user"), so `ta_ns`, `tb_ns`, `tc_ns` must be given; the rest follow research/storage.md C3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveParams {
    /// Latency on optimized paths above which write spread starts, in ns ([P] t_a).
    pub ta_ns: Time,
    /// Latency on optimized paths below which write spread stops, in ns ([P] t_b < t_a).
    pub tb_ns: Time,
    /// Latency on un-optimized paths above which spreading is judged harmful, in ns ([P] t_c > t_a).
    pub tc_ns: Time,
    /// Monitoring window, in ns. Default 1 s (C3.3).
    #[serde(default = "default_window_ns")]
    pub window_ns: Time,
    /// Windows between improvement checks while spreading, dimensionless. Default 5 (C3.6).
    #[serde(default = "default_check_windows")]
    pub check_windows: u32,
    /// Required improvement of IOPS or throughput over the reference, dimensionless. Default
    /// 0.10 ([P] §3.3.3: "at least 10% improvement on either IOPS or throughput").
    #[serde(default = "default_improvement")]
    pub improvement: f64,
    /// The esxcli on/off knob; off behaves as RR ([P] §3.3.2). Default on.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// After a t_c stop, re-arm only once AO latency falls below t_b (C3.7). Default true.
    #[serde(default = "default_true")]
    pub tc_sticky: bool,
}

fn default_window_ns() -> Time {
    NS_PER_S
}
fn default_check_windows() -> u32 {
    5
}
fn default_improvement() -> f64 {
    0.10
}
fn default_true() -> bool {
    true
}
fn default_dqlen() -> u32 {
    32
}

impl Default for PspSpec {
    fn default() -> Self {
        PspSpec::Fixed { preferred: 0 }
    }
}

impl Default for ArraySpec {
    fn default() -> Self {
        ArraySpec::named("")
    }
}

impl Default for AdapterSpec {
    fn default() -> Self {
        AdapterSpec::named("")
    }
}

impl Default for PathSpec {
    fn default() -> Self {
        PathSpec::new("", 0)
    }
}

impl Default for VmDiskSpec {
    fn default() -> Self {
        VmDiskSpec::new("", "")
    }
}

impl AdaptiveParams {
    /// Adaptive with the given thresholds and the defaults above.
    pub fn new(ta_ns: Time, tb_ns: Time, tc_ns: Time) -> Self {
        AdaptiveParams { ta_ns, tb_ns, tc_ns, window_ns: NS_PER_S, check_windows: 5, improvement: 0.10, enabled: true, tc_sticky: true }
    }
}

/// A LUN's path selection policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum PspSpec {
    /// VMW_PSP_FIXED: the preferred path (index into the LUN's paths) while it is up; fails back.
    Fixed { preferred: u32 },
    /// VMW_PSP_MRU: the most recently used working path; no failback.
    Mru,
    /// VMW_PSP_RR: round robin over active-optimized paths, switching every `iops` commands
    /// (`esxcli storage nmp psp roundrobin deviceconfig set --type=iops --iops=N`; default 1000 [ext]).
    RoundRobin { iops: u32 },
    /// PSP Adaptive ([P]): RR for reads; writes spread over AO and AUO paths while saturated.
    Adaptive { iops: u32, params: AdaptiveParams },
}

/// Default RR switch count, commands per path (ESX default [ext]).
pub const RR_DEFAULT_IOPS: u32 = 1000;

/// A LUN (a datastore on one device).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LunSpec {
    /// Name, e.g. `naa.600...` or `datastore1`.
    pub name: String,
    /// What serves it.
    pub device: DeviceSpec,
    /// Device queue depth (esxtop DQLEN), dimensionless. Default 32 ([K] §3: "The default is 32").
    #[serde(default = "default_dqlen")]
    pub dqlen: u32,
    /// Path selection policy. Default FIXED on path 0.
    #[serde(default)]
    pub psp: PspSpec,
    /// Paths, at least one.
    pub paths: Vec<PathSpec>,
}

/// A VM's virtual disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VmDiskSpec {
    /// Name, e.g. `vm0:scsi0:0`.
    pub name: String,
    /// The LUN (datastore) holding the disk file.
    pub lun: String,
    /// Disk shares, dimensionless: low 500, normal 1000, high 2000 [ext: vSphere].
    pub shares: u32,
    /// The disk's span on the LUN in bytes (random offsets are drawn inside it). Default 10 GB.
    pub span_bytes: u64,
    /// Where the span starts on the LUN, in bytes.
    pub offset_bytes: u64,
    /// The VM's virtual adapter queue depth for this disk, requests, dimensionless: requests the
    /// guest issues beyond it wait in the guest (outside GAVG) for a slot. `None`: not behind a
    /// virtual adapter (the hypervisor's own files, e.g. the swap file). Scenario default 64
    /// ([ext] PVSCSI's default per-device queue depth, VMware KB 2053145; LSI Logic SAS: 32).
    pub queue_depth: Option<u32>,
}

impl VmDiskSpec {
    /// A disk with normal shares on `lun`.
    pub fn new(name: &str, lun: &str) -> Self {
        VmDiskSpec { name: name.to_string(), lun: lun.to_string(), shares: 1000, span_bytes: 10 << 30, offset_bytes: 0, queue_depth: None }
    }
}

/// The whole storage side of one host.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StorageSpec {
    /// Seed of every random stream here (streams are derived per entity name).
    pub seed: u64,
    /// Kernel and VMM tunables.
    pub params: StackParams,
    /// HBA ports.
    pub adapters: Vec<AdapterSpec>,
    /// Flash arrays.
    pub arrays: Vec<ArraySpec>,
    /// LUNs.
    pub luns: Vec<LunSpec>,
    /// VM disks.
    pub disks: Vec<VmDiskSpec>,
}

fn unique<'a>(what: &str, names: impl Iterator<Item = &'a String>) -> VmtwinResult<()> {
    let mut seen = HashSet::new();
    for (i, n) in names.enumerate() {
        if !seen.insert(n.as_str()) {
            invalid!(format!("storage.{what}[{i}].name"), format!("'{n}'"), "a name not used before");
        }
    }
    Ok(())
}

impl StorageSpec {
    /// Reject what the stack cannot run with, naming the field.
    pub fn validate(&self) -> VmtwinResult<()> {
        let p = &self.params;
        if p.split_bytes < SECTOR {
            invalid!("storage.params.split_bytes", p.split_bytes, "at least 512 (one sector)");
        }
        if p.sched_num_req_outstanding == 0 {
            invalid!("storage.params.sched_num_req_outstanding", 0, "an integer >= 1");
        }
        if !(p.merge_omega >= 1.0 && p.merge_omega <= 64.0) {
            invalid!("storage.params.merge_omega", p.merge_omega, "a number in [1, 64]");
        }
        unique("adapters", self.adapters.iter().map(|a| &a.name))?;
        unique("arrays", self.arrays.iter().map(|a| &a.name))?;
        unique("luns", self.luns.iter().map(|l| &l.name))?;
        unique("disks", self.disks.iter().map(|d| &d.name))?;
        for (i, a) in self.adapters.iter().enumerate() {
            if a.queue_depth == 0 {
                invalid!(format!("storage.adapters[{i}].queue_depth"), 0, "an integer >= 1");
            }
            if a.link_bits_per_s == 0 {
                invalid!(format!("storage.adapters[{i}].link_bits_per_s"), 0, "a rate > 0");
            }
        }
        for (i, a) in self.arrays.iter().enumerate() {
            let f = |x: &str| format!("storage.arrays[{i}].{x}");
            if a.engines_per_controller == 0 {
                invalid!(f("engines_per_controller"), 0, "an integer >= 1");
            }
            if a.controller_bytes_per_s == 0 {
                invalid!(f("controller_bytes_per_s"), 0, "a rate > 0");
            }
            if a.cache_slots == 0 || a.cache_chunk_bytes < SECTOR {
                invalid!(f("cache_slots"), a.cache_slots, "cache_slots >= 1 and cache_chunk_bytes >= 512");
            }
        }
        for (i, l) in self.luns.iter().enumerate() {
            let f = |x: &str| format!("storage.luns[{i}].{x}");
            if l.dqlen == 0 {
                invalid!(f("dqlen"), 0, "an integer >= 1");
            }
            if l.paths.is_empty() {
                invalid!(f("paths"), "[]", "at least one path");
            }
            for (j, path) in l.paths.iter().enumerate() {
                if !self.adapters.iter().any(|a| a.name == path.adapter) {
                    let names: Vec<_> = self.adapters.iter().map(|a| a.name.as_str()).collect();
                    invalid!(f(&format!("paths[{j}].adapter")), format!("'{}'", path.adapter), format!("one of the adapters {names:?}"));
                }
                if path.controller > 1 {
                    invalid!(f(&format!("paths[{j}].controller")), path.controller, "0 or 1");
                }
            }
            match &l.device {
                DeviceSpec::Exponential { servers, mean_service_ns } => {
                    if *servers == 0 || *mean_service_ns == 0 {
                        invalid!(f("device"), format!("{servers} servers, mean {mean_service_ns} ns"), "servers >= 1 and a mean > 0");
                    }
                }
                DeviceSpec::Hdd(h) => {
                    if h.rpm == 0 || h.cylinders == 0 || h.sectors_per_cylinder == 0 || h.sectors_per_track == 0 || h.media_bytes_per_s == 0 {
                        invalid!(f("device.hdd"), "a zero geometry or rate", "rpm, cylinders, sectors and media rate > 0");
                    }
                    if h.queue_depth == 0 {
                        invalid!(f("device.hdd.queue_depth"), 0, "an integer >= 1");
                    }
                    if h.seek_full_ns < h.seek_track_ns {
                        invalid!(f("device.hdd.seek_full_ns"), h.seek_full_ns, "at least seek_track_ns");
                    }
                }
                DeviceSpec::Ssd(s) => {
                    if s.channels == 0 || s.bytes_per_s == 0 || s.queue_depth == 0 {
                        invalid!(f("device.ssd"), "a zero channel count, rate or depth", "channels, bytes_per_s, queue_depth >= 1");
                    }
                }
                DeviceSpec::Array { array, owner } => {
                    if !self.arrays.iter().any(|a| &a.name == array) {
                        let names: Vec<_> = self.arrays.iter().map(|a| a.name.as_str()).collect();
                        invalid!(f("device.array"), format!("'{array}'"), format!("one of the arrays {names:?}"));
                    }
                    if *owner > 1 {
                        invalid!(f("device.owner"), owner, "0 or 1");
                    }
                }
            }
            validate_psp(&format!("storage.luns[{i}]"), &l.psp, l.paths.len())?;
        }
        for (i, d) in self.disks.iter().enumerate() {
            if !self.luns.iter().any(|l| l.name == d.lun) {
                let names: Vec<_> = self.luns.iter().map(|l| l.name.as_str()).collect();
                invalid!(format!("storage.disks[{i}].lun"), format!("'{}'", d.lun), format!("one of the datastores {names:?}"));
            }
            if d.shares == 0 {
                invalid!(format!("storage.disks[{i}].shares"), 0, "an integer >= 1 (low 500, normal 1000, high 2000)");
            }
            if d.queue_depth == Some(0) {
                invalid!(format!("storage.disks[{i}].queue_depth"), 0, "an integer >= 1 (requests the virtual adapter queues for the disk)");
            }
            if d.span_bytes < SECTOR as u64 {
                invalid!(format!("storage.disks[{i}].span_bytes"), d.span_bytes, "at least 512");
            }
        }
        Ok(())
    }
}

/// Reject a path selection policy the LUN at `at` (e.g. `storage.luns[0]`) with `npaths`
/// paths cannot run, naming the field.
pub fn validate_psp(at: &str, psp: &PspSpec, npaths: usize) -> VmtwinResult<()> {
    let f = |x: &str| format!("{at}.{x}");
    match psp {
        PspSpec::Fixed { preferred } => {
            if *preferred as usize >= npaths {
                invalid!(f("psp.preferred"), preferred, format!("a path index below {}", npaths));
            }
        }
        PspSpec::Mru => {}
        PspSpec::RoundRobin { iops } | PspSpec::Adaptive { iops, .. } if *iops == 0 => {
            invalid!(f("psp.iops"), 0, "an integer >= 1 (commands before switching path)");
        }
        PspSpec::RoundRobin { .. } => {}
        PspSpec::Adaptive { params: a, .. } => {
            if a.ta_ns <= a.tb_ns {
                invalid!(f("psp.ta"), format!("{} ns (tb = {} ns)", a.ta_ns, a.tb_ns), "ta > tb (start threshold above the stop threshold)");
            }
            if a.tc_ns <= a.ta_ns {
                invalid!(f("psp.tc"), format!("{} ns (ta = {} ns)", a.tc_ns, a.ta_ns), "tc > ta");
            }
            if a.window_ns == 0 || a.check_windows == 0 {
                invalid!(f("psp.window"), a.window_ns, "a window > 0 and check_windows >= 1");
            }
            if !(a.improvement >= 0.0 && a.improvement.is_finite()) {
                invalid!(f("psp.improvement"), a.improvement, "a fraction >= 0");
            }
        }
    }
    Ok(())
}

const SECTOR: u32 = super::SECTOR_BYTES as u32;
